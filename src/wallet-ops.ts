import type { Express } from 'express';
import { randomBytes } from 'node:crypto';
import { openLedger, openStores, type Stores } from './adapters/open-stores.ts';
import type { Ledger } from './ports/ledger.ts';
import { Executor } from './executor/executor.ts';
import { startSealer } from './audit/sealer.ts';
import { KEY_USAGE_COLLECTION, KeyUsageRecorder } from './http/key-usage.ts';
import { PartyLookup } from './commands/party-lookup.ts';
import { InFlightStates, StateCache } from './commands/pipeline.ts';
import type { Config } from './config.ts';
import { createApp } from './http/app.ts';
import type { Logger } from './logger.ts';
import { ApiKeyDirectory, catchUpApiKeyDirectory, followApiKeys } from './projections/api-key-directory.ts';
import { KeyedMutex } from './shared/keyed-mutex.ts';
import { operationSchemas } from './write-api/schemas.ts';
import { writeRoutes } from './write-api/routes.ts';
import { readRoutes } from './read-api/routes.ts';
import { buildOpenApiDocument } from './read-api/openapi.ts';
import { allProjections } from './projections/index.ts';
import { ProjectionRunner } from './projections/projection-runner.ts';
import { projectionStatus } from './projections/rebuild.ts';
import { consoleRouter } from './console/router.ts';
import { consumerReports, liveness, type WatchedConsumer } from './health.ts';
import { describeError } from './shared/supervised-consumer.ts';
import { streamPrefixes } from './domain/streams.ts';
import { faultDecorators, faultPlansFromConfig } from './faults/index.ts';

/** /ready fails while a projection has more events than this still to apply. */
const READY_MAX_LAG = 1000;

export interface WalletOps {
  app: Express;
  stores: Stores;
  ledger: Ledger;
  directory: ApiKeyDirectory;
  executor: Executor;
  /** The supervised consumers this process runs. */
  consumers: WatchedConsumer[];
  close(): Promise<void>;
}

/** The parts one process runs; `npm start` runs them all, `wallet-ops serve PART` one of them. */
export type Part = 'write-api' | 'read-api' | 'projections' | 'executor';
export const ALL_PARTS: readonly Part[] = ['write-api', 'read-api', 'projections', 'executor'];

/**
 * Builds the running system from its configuration: stores, the live API-key directory, the command
 * dependencies and the HTTP app. `main.ts` listens with it; tests build it on a temporary data directory.
 */
export async function buildWalletOps(config: Config, logger: Logger, clock: () => Date = () => new Date(), parts: readonly Part[] = ALL_PARTS): Promise<WalletOps> {
  const faults = faultDecorators(faultPlansFromConfig(config), logger); // off by default; warns when on
  const stores = await openStores(config, faults);
  const ledger = openLedger({
    dataDir: config.DATA_DIR,
    faults: {
      latencyMs: config.LEDGER_LATENCY_MS,
      transientFailureRate: config.LEDGER_TRANSIENT_FAILURE_RATE,
      rejectionRate: config.LEDGER_REJECTION_RATE,
      crashAfterAccept: config.LEDGER_CRASH_AFTER_ACCEPT,
    },
    decorate: faults.ledger,
  });
  const directory = new ApiKeyDirectory();
  await catchUpApiKeyDirectory(stores.eventStore, directory);
  const following = followApiKeys(stores.eventStore, directory, logger);
  const watched: WatchedConsumer[] = [{ consumer: following, filter: { streamPrefixes: [streamPrefixes.apiKey] } }];

  const cache = new StateCache();
  const operations = {
    store: stores.eventStore,
    cache,
    lookup: new PartyLookup(stores.eventStore),
    clock,
    assetScale: config.ASSET_SCALE,
    feeSchedule: config.FEE_SCHEDULE,
    volumeTimeZone: config.VOLUME_TIME_ZONE,
    serialize: { mutex: new KeyedMutex(), inFlight: new InFlightStates() },
  };
  const projections = allProjections(config.ASSET_SCALE);
  await stores.readStore.defineCollections([...projections.map((projection) => projection.collection), KEY_USAGE_COLLECTION]);
  const usage = new KeyUsageRecorder(stores.readStore, logger);
  const onAuthenticated = (keyID: string, at: Date) => usage.record(keyID, at);
  const runners = projections.map(
    (projection) => new ProjectionRunner({ eventStore: stores.eventStore, readStore: stores.readStore, projection, logger }),
  );
  if (parts.includes('projections')) {
    runners.forEach((runner) => runner.start());
    watched.push(...runners.map((runner, i) => ({ consumer: runner.consumer, filter: { eventTypes: [...projections[i]!.eventTypes] } })));
  }
  // Seals of the history (src/audit) are taken where the projections run: one reader of $all in order.
  const sealer = parts.includes('projections') ? startSealer({ eventStore: stores.eventStore, idleMs: 60_000, logger }) : undefined;
  if (sealer) watched.push({ consumer: sealer.consumer });

  const executor = new Executor({
    eventStore: stores.eventStore,
    readStore: stores.readStore,
    ledger,
    executorID: config.EXECUTOR_ID ?? `executor-${randomBytes(4).toString('hex')}`,
    leaseMs: config.EXECUTOR_LEASE_MS,
    maxAttempts: config.EXECUTOR_MAX_ATTEMPTS,
    retryBaseMs: 100,
    retryMaxMs: 5_000,
    concurrency: config.EXECUTOR_CONCURRENCY,
    sweepIntervalMs: config.EXECUTOR_SWEEP_INTERVAL_MS,
    assetScale: config.ASSET_SCALE,
    clock,
    logger,
  });
  if (parts.includes('executor')) {
    executor.start();
    watched.push({ consumer: executor.consumer, filter: { eventTypes: ['OperationApproved'] } });
  }

  const document = buildOpenApiDocument(config.ASSET_SCALE);
  const app = createApp({
    logger,
    openApi: () => document,
    clock,
    trustProxy: config.TRUST_PROXY,
    liveness: () => liveness(watched, config.CONSUMER_UNHEALTHY_AFTER_MS),
    readiness: async () => {
      const consumers = await consumerReports(stores.eventStore, watched, clock());
      try {
        const status = await projectionStatus(stores, projections, READY_MAX_LAG + 1);
        return { ready: status.every((s) => s.lagEvents <= READY_MAX_LAG), projections: status, consumers };
      } catch (error) {
        // A store that cannot be read: not ready, and say why (the consumers' states tell the rest).
        return { ready: false, error: describeError(error), consumers };
      }
    },
    routers: [
      ...(parts.includes('write-api') ? [writeRoutes({ operations, directory, schemas: operationSchemas(config.ASSET_SCALE), clock, onAuthenticated })] : []),
      ...(parts.includes('read-api') ? [readRoutes({ readStore: stores.readStore, directory, clock, assetScale: config.ASSET_SCALE, onAuthenticated })] : []),
      // The back-office web console (/console) runs commands like the write API does: it goes with that part.
      ...(parts.includes('write-api') ? [consoleRouter({ store: stores.eventStore, readStore: stores.readStore, directory, clock, assetScale: config.ASSET_SCALE, logger })] : []),
    ],
  });
  return {
    app,
    stores,
    ledger,
    directory,
    executor,
    consumers: watched,
    async close() {
      await Promise.all([...runners.map((runner) => runner.stop()), executor.stop(), sealer?.stop(), usage.close()]);
      await following.stop();
      await stores.close();
      await ledger.close();
    },
  };
}

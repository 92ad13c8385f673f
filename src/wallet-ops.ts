import type { Express } from 'express';
import { openStores, type Stores } from './adapters/open-stores.ts';
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
import { allProjections } from './projections/index.ts';
import { ProjectionRunner } from './projections/projection-runner.ts';
import { projectionStatus } from './projections/rebuild.ts';

/** /ready fails while a projection has more events than this still to apply. */
const READY_MAX_LAG = 1000;

export interface WalletOps {
  app: Express;
  stores: Stores;
  directory: ApiKeyDirectory;
  close(): Promise<void>;
}

/**
 * Builds the running system from its configuration: stores, the live API-key directory, the command
 * dependencies and the HTTP app. `main.ts` listens with it; tests build it on a temporary data directory.
 */
export async function buildWalletOps(config: Config, logger: Logger, clock: () => Date = () => new Date()): Promise<WalletOps> {
  const stores = openStores({ dataDir: config.DATA_DIR });
  const directory = new ApiKeyDirectory();
  await catchUpApiKeyDirectory(stores.eventStore, directory);
  const following = followApiKeys(stores.eventStore, directory, (error) => logger.error({ err: error }, 'API key subscription failed'));

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
  await stores.readStore.defineCollections(projections.map((projection) => projection.collection));
  const runners = projections.map(
    (projection) => new ProjectionRunner({ eventStore: stores.eventStore, readStore: stores.readStore, projection, onError: (error) => logger.error({ err: error, projection: projection.name }, 'projection failed; retrying') }),
  );
  runners.forEach((runner) => runner.start());

  const app = createApp({
    logger,
    clock,
    trustProxy: config.TRUST_PROXY,
    readiness: async () => {
      const status = await projectionStatus(stores, projections, READY_MAX_LAG + 1);
      return { ready: status.every((s) => s.lagEvents <= READY_MAX_LAG), projections: status };
    },
    routers: [
      writeRoutes({ operations, directory, schemas: operationSchemas(config.ASSET_SCALE), clock }),
      readRoutes({ readStore: stores.readStore, directory, clock, assetScale: config.ASSET_SCALE }),
    ],
  });
  return {
    app,
    stores,
    directory,
    async close() {
      await Promise.all(runners.map((runner) => runner.stop()));
      await following.stop();
      await stores.close();
    },
  };
}

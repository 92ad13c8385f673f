import type { Express } from 'express';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { openLedger, openReplicaReadStore, openStores, type Stores } from './adapters/open-stores.ts';
import { embeddedSecretsKey } from './adapters/secrets-key-file.ts';
import { checkSqliteIntegrity } from './adapters/sqlite/sqlite-database.ts';
import { HeldCredentials, SECRETS_COLLECTION } from './commands/held-credentials.ts';
import type { Ledger } from './ports/ledger.ts';
import { EventStoreUnavailableError } from './ports/event-store.ts';
import { ReadStoreUnavailableError, type ReadStore } from './ports/read-store.ts';
import { createExecutor, type Executor } from './executor/executor.ts';
import { createKeyRevocations } from './executor/key-revocation.ts';
import { startSealer } from './audit/sealer.ts';
import { KEY_USAGE_COLLECTION, KeyUsageRecorder } from './http/key-usage.ts';
import { ApiRateLimits } from './http/rate-limit.ts';
import { PartyLookup } from './commands/party-lookup.ts';
import { InFlightStates, StateCache } from './commands/pipeline.ts';
import { withSnapshots } from './commands/snapshots.ts';
import { tracingEnabled, type Config } from './config.ts';
import { openTracing } from './adapters/tracing.ts';
import type { Tracing } from './ports/tracing.ts';
import { createApp } from './http/app.ts';
import type { Logger } from './logger.ts';
import { API_KEY_FILTER, ApiKeyDirectory, followApiKeys } from './projections/api-key-directory.ts';
import { directoryReads, untilHead } from './projections/directory-reads.ts';
import { followUsers, USER_DIRECTORY_FILTER, UserDirectory } from './projections/user-directory.ts';
import { KeyedMutex } from './shared/keyed-mutex.ts';
import { allCommitted, ReadYourWrites, type CommittedPositions } from './projections/read-your-writes.ts';
import { withSharedReader } from './shared/shared-reader.ts';
import type { Follower } from './shared/follower.ts';
import type { FollowersElsewhere } from './followers-elsewhere.ts';
import { operationSchemas } from './write-api/schemas.ts';
import { writeRoutes } from './write-api/routes.ts';
import { readRoutes } from './read-api/routes.ts';
import { ReadFreshness } from './read-api/freshness.ts';
import { BalancesView, followBalances } from './read-api/balances-view.ts';
import { withReplicaReads, type ReplicaReadCounts } from './read-api/replica-reads.ts';
import { buildOpenApiDocument } from './read-api/openapi.ts';
import { renderDocsPage } from './read-api/docs-page.ts';
import { allProjections } from './projections/index.ts';
import { createProjectionRunner } from './projections/projection-runner.ts';
import { projectionStatus, rebuildsInProgress } from './projections/rebuild.ts';
import { consoleRouter } from './console/router.ts';
import { consumerReports, CorruptionWatch, liveness, WriteWatch, type WatchedConsumer } from './health.ts';
import { describeError } from './shared/supervised-consumer.ts';
import { CorrectedClock, fileTime, measureClockSkew, watchClockSkew } from './shared/clock-skew.ts';
import { backoffMs } from './shared/backoff.ts';
import { faultDecorators, faultPlansFromConfig } from './faults/index.ts';
import { WEBHOOK_COLLECTIONS, type DeliveryDoc } from './webhooks/deliveries.ts';
import type { AttemptResult } from './webhooks/sender.ts';
import { WEBHOOK_LEASES_COLLECTION, WebhookDispatcher } from './webhooks/dispatcher.ts';
import { createWebhookOutbox } from './webhooks/outbox.ts';
import { compileAllowList } from './domain/ip-allowlist.ts';
import type { Resolver } from './webhooks/address-guard.ts';
import {
  httpMetrics,
  METRICS_PATH,
  metricsApp,
  metricsEndpoint,
  withEventStoreMetrics,
  withLedgerMetrics,
  WalletOpsMetrics,
} from './metrics/index.ts';

export interface WalletOps {
  app: Express;
  stores: Stores;
  ledger: Ledger;
  directory: ApiKeyDirectory;
  executor: Executor;
  /** The supervised consumers this process runs. */
  consumers: WatchedConsumer[];
  /** Where approved credentials wait for their one owner (src/commands/held-credentials.ts). */
  credentials: HeldCredentials;
  /** This system's metrics (absent with METRICS_ENABLED=false). */
  metrics?: WalletOpsMetrics;
  /** With POSTGRES_READ_URL: where the API's and the console's reads of the read models were answered from. */
  replicaReads?: ReplicaReadCounts;
  /** With METRICS_PORT: the app that serves /metrics alone, for the server to listen on that port. */
  metricsApp?: Express;
  close(): Promise<void>;
}

/** The parts one process runs; `npm start` runs them all, `wallet-ops serve PART` one of them. */
export type Part = 'write-api' | 'read-api' | 'projections' | 'executor' | 'webhooks';
export const ALL_PARTS: readonly Part[] = ['write-api', 'read-api', 'projections', 'executor', 'webhooks'];

/**
 * Builds the running system from its configuration: stores, the live API-key directory, the command
 * dependencies and the HTTP app. `main.ts` listens with it; tests build it on a temporary data directory.
 */
export interface BuildOptions {
  /** The webhook dispatcher's DNS (tests only: a name that resolves to a private address). */
  webhookResolver?: Resolver;
  /**
   * Tracing given by the caller (tests: an SDK with an in-memory span processor), which then shuts it down itself.
   * Default: from OTEL_*.
   */
  tracing?: Tracing;
  /** Tests only: wraps the read store every part of the process uses (to hold a projection's commits back). */
  decorateReadStore?: (store: ReadStore) => ReadStore;
  /**
   * The projections, executor and webhooks run on a followers thread of this process (src/followers-elsewhere.ts):
   * read-your-writes waits on the positions it reports, and /health, /ready and /metrics show its consumers.
   */
  followers?: FollowersElsewhere;
}

export async function buildWalletOps(
  config: Config,
  logger: Logger,
  clock: () => Date = () => new Date(),
  parts: readonly Part[] = ALL_PARTS,
  options: BuildOptions = {},
): Promise<WalletOps> {
  // Off unless OTEL_* variables ask for it (src/config.ts, tracingEnabled): then the SDK is loaded, else nothing of it.
  const ownTracing = options.tracing === undefined;
  const tracing =
    options.tracing ?? (await openTracing({ enabled: tracingEnabled(config), serviceName: config.OTEL_SERVICE_NAME }));
  if (tracing.enabled && ownTracing)
    logger.info({ serviceName: config.OTEL_SERVICE_NAME }, 'tracing on (OpenTelemetry)');
  const faults = faultDecorators(faultPlansFromConfig(config), logger); // off by default; warns when on
  // Metrics decorate the ports outside fault injection: an injected delay or failure is what the system lives with.
  const metrics = config.METRICS_ENABLED ? new WalletOpsMetrics() : undefined;
  const corruption = new CorruptionWatch(clock, (error) =>
    logger.fatal({ err: error, store: error.store }, 'store corrupted: refusing to serve it until it is restored'),
  );
  // A damaged history is refused before anything is served from it or appended to it (the check reads every page).
  if (config.EVENT_STORE === 'embedded')
    checkSqliteIntegrity(join(config.DATA_DIR, 'events.sqlite'), config.EVENT_STORE_INTEGRITY_CHECK);
  // A server store not reachable yet (its container still starting) is waited for, as one that blinks later is.
  const opened = await untilAvailable(
    () =>
      openStores(
        config,
        metrics
          ? {
              ...faults,
              eventStore: (store) => withEventStoreMetrics(faults.eventStore?.(store) ?? store, metrics),
              onGroupCommit: (requests) => metrics.groupCommitBatchSize.observe(requests),
              postgres: metrics.postgres,
            }
          : faults,
      ),
    'opening the stores',
    logger,
  );
  // Every writer of this process (creates, checkers, the executor, the consumers) keeps the long wallet and key-volume
  // streams snapshotted, outside the hash chain so that snapshots are chained like any event
  // (src/commands/snapshots.ts).
  // Every call on the stores reports a corruption it meets to the watch, whoever made it (a request, a consumer).
  // Whether this process's writes go through, whoever makes them (/ready and /health: src/health.ts).
  const writes = new WriteWatch();
  // Every follower of this process is served by one reader of the log (src/shared/shared-reader.ts).
  const eventStore = withSharedReader(
    withSnapshots(
      writes.watch('events', corruption.watch(opened.eventStore), {
        writes: ['append', 'appendMulti'],
        reads: ['readStream'],
      }),
      {
        onError: (error, stream) =>
          logger.warn({ err: error, stream }, 'a snapshot could not be written; the next one will be'),
      },
    ),
  );
  const watchedReadStore = writes.watch('read models', corruption.watch(opened.readStore), {
    writes: ['commit', 'incrementCounter', 'take'],
  });
  const readStore = options.decorateReadStore?.(watchedReadStore) ?? watchedReadStore;
  const stores: Stores = {
    eventStore,
    readStore,
    async close() {
      await Promise.all([eventStore.close(), readStore.close()]);
    },
  };
  const skew = await watchStoreClock(config, clock, logger, metrics);
  const ledger = await openLedger({
    dataDir: config.DATA_DIR,
    selection: config,
    faults: {
      latencyMs: config.LEDGER_LATENCY_MS,
      transientFailureRate: config.LEDGER_TRANSIENT_FAILURE_RATE,
      rejectionRate: config.LEDGER_REJECTION_RATE,
      crashAfterAccept: config.LEDGER_CRASH_AFTER_ACCEPT,
      stopWhileHolding: config.LEDGER_STOP_WHILE_HOLDING,
    },
    decorate: (raw) => {
      const faulty = faults.ledger?.(raw) ?? raw;
      return metrics ? withLedgerMetrics(faulty, metrics) : faulty;
    },
  });
  // How soon every consumer of the history resubscribes after a failure (src/shared/supervised-consumer.ts).
  const supervision = { baseDelayMs: config.CONSUMER_RETRY_BASE_MS, maxDelayMs: config.CONSUMER_RETRY_MAX_MS };
  const directory = new ApiKeyDirectory();
  const following = followApiKeys(stores.eventStore, directory, logger, supervision);
  // No request is authenticated before the directory has read every key. A store that blinks while the process
  // starts is waited for, as the consumers would: not a crash loop.
  const keysRead = await untilAvailable(
    () => untilHead(following, stores.eventStore, API_KEY_FILTER, START_PATIENCE_MS),
    'reading the API keys',
    logger,
  ).catch(async (error: unknown) => {
    await following.stop();
    throw error;
  });
  if (!keysRead) {
    await following.stop();
    throw new EventStoreUnavailableError(`the API keys could not be read within ${START_PATIENCE_MS / 1000} s`);
  }
  const watched: WatchedConsumer[] = [{ consumer: following.consumer, filter: API_KEY_FILTER }];
  // The console's directory of parties, users and access requests, where the console runs (with the write API).
  const users = parts.includes('write-api') ? new UserDirectory() : undefined;
  const followingUsers = users ? followUsers(stores.eventStore, users, logger, supervision) : undefined;
  if (followingUsers) watched.push({ consumer: followingUsers.consumer, filter: USER_DIRECTORY_FILTER });

  const cache = new StateCache();
  // Seals webhook secrets and one-time API-key secrets, and keys the hashes of cash-out codes.
  const secretsKey =
    config.SECRETS_KEY ??
    embeddedSecretsKey(config.DATA_DIR, {
      keyFile: config.SECRETS_KEY_FILE,
      onMoved: (from, to) =>
        logger.warn(
          { from, to },
          'secrets key moved out of DATA_DIR: back it up apart from the data (docs/operations.md)',
        ),
    });
  const operations = {
    store: stores.eventStore,
    cache,
    lookup: new PartyLookup(stores.eventStore),
    clock,
    assetScale: config.ASSET_SCALE,
    feeSchedule: config.FEE_SCHEDULE,
    volumeTimeZone: config.VOLUME_TIME_ZONE,
    ...(skew ? { dayClock: skew.dayClock } : {}),
    serialize: { mutex: new KeyedMutex(), inFlight: new InFlightStates() },
    deadlineMs: config.CREATE_DEADLINE_MS,
    ...(metrics ? { onConflictRetry: () => metrics.createConflictRetries.inc() } : {}),
    cashOutConsent: { policy: config.CASH_OUT_CONSENT, secretsKey },
    tracing,
  };
  const projections = allProjections(config.ASSET_SCALE);
  await untilAvailable(
    () =>
      stores.readStore.defineCollections([
        ...projections.map((projection) => projection.collection),
        KEY_USAGE_COLLECTION,
      ]),
    'defining the read models',
    logger,
  );
  const usage = new KeyUsageRecorder(stores.readStore, logger);
  const onAuthenticated = (keyID: string, at: Date) => usage.record(keyID, at);
  // One set of buckets per process, shared by the write and read APIs: a key's rate counts both.
  const limits = new ApiRateLimits(
    {
      keyRatePerSecond: config.API_KEY_RATE_LIMIT,
      keyBurst: config.API_KEY_RATE_BURST,
      failedAuthenticationsPerMinute: config.AUTH_FAILURE_LIMIT,
    },
    clock,
  );
  const runners = projections.map((projection) =>
    createProjectionRunner({
      eventStore: stores.eventStore,
      readStore: stores.readStore,
      projection,
      logger,
      supervision,
    }),
  );
  if (parts.includes('projections')) {
    runners.forEach((runner) => runner.start());
    watched.push(...runners);
  }
  // Where the projections run, so do their rebuilds' metrics: read from the read store, whichever process rebuilds.
  if (metrics && parts.includes('projections')) {
    const names = projections.map((projection) => projection.name);
    metrics.watchRebuilds(names, () => rebuildsInProgress(stores, names));
  }
  // Seals of the history (src/audit) are taken where the projections run: one reader of $all in order.
  const sealer = parts.includes('projections')
    ? startSealer({ eventStore: stores.eventStore, idleMs: 60_000, logger, supervision })
    : undefined;
  if (sealer) watched.push({ consumer: sealer.consumer });

  const executor = createExecutor({
    eventStore: stores.eventStore,
    readStore: stores.readStore,
    ledger,
    executorID: config.EXECUTOR_ID ?? `executor-${randomBytes(4).toString('hex')}`,
    leaseMs: config.EXECUTOR_LEASE_MS,
    maxAttempts: config.EXECUTOR_MAX_ATTEMPTS,
    retryBaseMs: config.EXECUTOR_RETRY_BASE_MS,
    retryMaxMs: config.EXECUTOR_RETRY_MAX_MS,
    concurrency: config.EXECUTOR_CONCURRENCY,
    sweepIntervalMs: config.EXECUTOR_SWEEP_INTERVAL_MS,
    supervision,
    assetScale: config.ASSET_SCALE,
    clock,
    logger,
    tracing,
    ...(metrics
      ? {
          observer: {
            claimed: (attempt: number) => metrics.executorClaims.inc({ attempt: attempt === 1 ? 'first' : 'retry' }),
            completed: () => metrics.executorCompletions.inc(),
            failed: (reason: 'rejected' | 'gave_up' | 'voided') => metrics.executorFailures.inc({ reason }),
          },
        }
      : {}),
  });
  if (parts.includes('executor')) {
    metrics?.watchExecutorQueue(() => executor.assigned());
    executor.start();
    watched.push(executor);
  }
  // Rejects the pending operations of revoked and expired keys (src/executor/key-revocation.ts); runs with the
  // executor.
  const keyRevocations = createKeyRevocations({
    eventStore: stores.eventStore,
    readStore: stores.readStore,
    clock,
    assetScale: config.ASSET_SCALE,
    logger,
    expirySweepEveryMs: config.KEY_EXPIRY_SWEEP_INTERVAL_MS,
    supervision,
  });
  if (parts.includes('executor')) {
    keyRevocations.start();
    watched.push(keyRevocations);
  }

  // Webhooks (src/webhooks, docs/webhooks.md): the outbox queues deliveries from the history, the dispatcher sends
  // them.
  await untilAvailable(
    () => stores.readStore.defineCollections([SECRETS_COLLECTION]),
    'defining the credential vault',
    logger,
  );
  const credentials = new HeldCredentials({ store: stores.readStore, key: secretsKey, clock, logger });
  let webhooks: { outbox: Follower; dispatcher: WebhookDispatcher } | undefined;
  if (parts.includes('webhooks')) {
    await untilAvailable(
      () => stores.readStore.defineCollections([...WEBHOOK_COLLECTIONS, WEBHOOK_LEASES_COLLECTION]),
      'defining the webhook collections',
      logger,
    );
    const allowedRanges =
      config.WEBHOOK_ALLOWED_PRIVATE_RANGES.length > 0
        ? compileAllowList(config.WEBHOOK_ALLOWED_PRIVATE_RANGES)
        : undefined;
    const dispatcher = new WebhookDispatcher({
      eventStore: stores.eventStore,
      readStore: stores.readStore,
      secretsKey,
      clock,
      logger,
      assetScale: config.ASSET_SCALE,
      policy: {
        baseDelayMs: config.WEBHOOK_RETRY_BASE_MS,
        maxDelayMs: config.WEBHOOK_RETRY_MAX_MS,
        giveUpAfterMs: config.WEBHOOK_DISABLE_AFTER_MS,
      },
      timeoutMs: config.WEBHOOK_TIMEOUT_MS,
      concurrency: config.WEBHOOK_CONCURRENCY,
      pollIntervalMs: config.WEBHOOK_POLL_INTERVAL_MS,
      leaseMs: config.WEBHOOK_LEASE_MS,
      supervision,
      rules: {
        allowLoopback: config.WEBHOOK_ALLOW_INSECURE_LOCALHOST,
        ...(allowedRanges ? { allowAddress: allowedRanges } : {}),
      },
      ...(options.webhookResolver ? { resolve: options.webhookResolver } : {}),
      tracing,
      ...(metrics
        ? {
            onAttempt: (delivery: DeliveryDoc, result: AttemptResult) => {
              metrics.webhookAttempts.inc({
                outcome: result.ok ? 'delivered' : delivery.status === 'failed' ? 'gave_up' : 'retry',
              });
              if (result.ok)
                metrics.webhookDeliveryLag.observe(Math.max(0, (Date.now() - Date.parse(delivery.createdAt)) / 1000));
            },
          }
        : {}),
    });
    const outbox = createWebhookOutbox({
      eventStore: stores.eventStore,
      readStore: stores.readStore,
      assetScale: config.ASSET_SCALE,
      logger,
      clock,
      maxEventAgeMs: config.WEBHOOK_DISABLE_AFTER_MS,
      onQueued: (endpointIDs) => dispatcher.wake(endpointIDs),
      supervision,
    });
    outbox.start();
    dispatcher.start();
    watched.push(outbox, { consumer: dispatcher.consumer, filter: outbox.filter, lagOf: outbox.consumer });
    webhooks = { outbox, dispatcher };
  }

  // With read replicas (POSTGRES_READ_URL), the read API and the console read the projections' models on a standby
  // once it has replayed as far as the primary's model, else on the primary (src/read-api/replica-reads.ts).
  const serving = parts.includes('read-api') || parts.includes('write-api');
  const replica = serving
    ? await untilAvailable(() => openReplicaReadStore(config, metrics?.postgres), 'opening the read replica', logger)
    : undefined;
  if (replica) await replica.defineCollections(projections.map((projection) => projection.collection));
  const servedReads = replica
    ? withReplicaReads({
        primary: stores.readStore,
        replica,
        models: projections,
        waitMs: config.READ_YOUR_WRITES_TIMEOUT_MS,
        ...(metrics ? { onRead: (source: 'replica' | 'primary') => metrics.replicaReads.inc({ source }) } : {}),
      })
    : undefined;
  // The read API answers balances from memory: a second instance of the balances model, seeded from the read
  // store's and following the history (src/read-api/balances-view.ts). With a replica, from its tables instead: a
  // view fed by the primary's history would load the primary the replica is there to spare.
  const balancesView =
    parts.includes('read-api') && !replica ? new BalancesView({ assetScale: config.ASSET_SCALE }) : undefined;
  const balancesFollower = balancesView
    ? followBalances({
        eventStore: stores.eventStore,
        readStore: stores.readStore,
        view: balancesView,
        logger,
        supervision,
      })
    : undefined;
  if (balancesFollower) watched.push(balancesFollower);

  // Read-your-writes: a read of a model waits for this process's own latest write of the party to be in it, on the
  // followers that build the model here (src/projections/read-your-writes.ts). The balances have two: the read store's
  // model (the console's dashboard, a replica) and the view in memory (the read API); a read waits for both.
  const builders = new Map<string, CommittedPositions[]>();
  if (parts.includes('projections')) runners.forEach((runner, i) => builders.set(projections[i]!.name, [runner]));
  else if (options.followers)
    for (const { name } of projections) builders.set(name, [options.followers.committed(name)]);
  if (balancesView && balancesFollower)
    builders.set(balancesView.name, [...(builders.get(balancesView.name) ?? []), balancesFollower]);
  const readYourWrites = new ReadYourWrites({
    followers: new Map([...builders].map(([model, followers]) => [model, allCommitted(followers)])),
    timeoutMs: config.READ_YOUR_WRITES_TIMEOUT_MS,
  });

  // This thread's consumers, and those of the followers thread as it last reported them.
  const followers = options.followers;
  // Both threads follow the API keys: the thread's directory is not reported twice.
  const everyConsumer = () =>
    followers
      ? [
          ...watched,
          ...followers.watched().filter(({ consumer }) => !watched.some((w) => w.consumer.name === consumer.name)),
        ]
      : watched;
  if (followers) metrics?.scrapeAlso('followers-thread', () => followers.metricFamilies());
  // Every consumer's lag, as /ready computes it, at scrape time (bounded: a hung store cannot hang the scrape).
  metrics?.watchConsumers(() => consumerReports(stores.eventStore, everyConsumer(), clock()));
  const onThisPort = config.METRICS_PORT === undefined;

  // Built at its first request, not at every start: a process that serves no API (the executor, the webhooks) never
  // pays for it, and a restarted one answers sooner.
  let document: ReturnType<typeof buildOpenApiDocument> | undefined;
  const app = createApp({
    logger,
    openApi: { document: () => (document ??= buildOpenApiDocument(config.ASSET_SCALE)), page: renderDocsPage },
    clock,
    trustProxy: config.TRUST_PROXY,
    ...(metrics
      ? {
          metrics: {
            observe: httpMetrics(metrics, onThisPort ? METRICS_PATH : undefined),
            ...(onThisPort ? { endpoint: { path: METRICS_PATH, handler: metricsEndpoint(metrics) } } : {}),
          },
        }
      : {}),
    liveness: () => ({
      ...liveness(everyConsumer(), config.CONSUMER_UNHEALTHY_AFTER_MS, corruption, writes),
      ...(followers ? { followersThread: followers.report() } : {}),
    }),
    corrupted: () => corruption.error,
    readiness: async () => {
      const consumers = await consumerReports(stores.eventStore, everyConsumer(), clock());
      // Writes refused (a read-only database, a held lock): not ready, whatever the reads say.
      const writesFailing = writes.report();
      try {
        const status = await projectionStatus(stores, projections, config.READ_MAX_LAG_EVENTS + 1);
        const ready = writesFailing === null && status.every((s) => s.lagEvents <= config.READ_MAX_LAG_EVENTS);
        return { ready, projections: status, consumers, ...(writesFailing ? { writesFailing } : {}) };
      } catch (error) {
        // A store that cannot be read: not ready, and say why (the consumers' states tell the rest).
        return { ready: false, error: describeError(error), consumers, ...(writesFailing ? { writesFailing } : {}) };
      }
    },
    routers: [
      ...(parts.includes('write-api')
        ? [
            writeRoutes({
              operations,
              directory,
              schemas: operationSchemas(config.ASSET_SCALE),
              clock,
              onAuthenticated,
              limits,
              ...(metrics
                ? {
                    onCreate: (partyType, outcome, problemType) =>
                      metrics.creates.inc({ party_type: partyType, outcome, problem_type: problemType }),
                  }
                : {}),
              readYourWrites,
            }),
          ]
        : []),
      ...(parts.includes('read-api')
        ? [
            readRoutes({
              readStore: servedReads ?? stores.readStore,
              ...(balancesView ? { balances: balancesView } : {}),
              directory,
              clock,
              assetScale: config.ASSET_SCALE,
              onAuthenticated,
              limits,
              freshness: new ReadFreshness({ ...stores, maxLagEvents: config.READ_MAX_LAG_EVENTS }),
              readYourWrites,
            }),
          ]
        : []),
      // The back-office web console (/console) runs commands like the write API does: it goes with that part.
      ...(users && followingUsers
        ? [
            consoleRouter({
              store: stores.eventStore,
              readStore: servedReads ?? stores.readStore,
              directory,
              keyReads: directoryReads(following, stores.eventStore, API_KEY_FILTER, DIRECTORY_WAIT_MS),
              users,
              userReads: directoryReads(followingUsers, stores.eventStore, USER_DIRECTORY_FILTER, DIRECTORY_WAIT_MS),
              clock,
              assetScale: config.ASSET_SCALE,
              logger,
              throttle: {
                perEmail: config.LOGIN_ATTEMPTS_PER_EMAIL,
                perAddress: config.LOGIN_ATTEMPTS_PER_ADDRESS,
                lockoutMs: config.LOGIN_LOCKOUT_MS,
                maxDelayMs: config.LOGIN_DELAY_MAX_MS,
              },
              // Server stores need SECRETS_KEY (src/config.ts); the embedded ones keep a key file of their own beside
              // DATA_DIR.
              secretsKey,
              credentials,
              webhookAllowInsecureLocalhost: config.WEBHOOK_ALLOW_INSECURE_LOCALHOST,
              secretRotationOverlapHours: config.SECRET_ROTATION_OVERLAP_HOURS,
              apiKeyEnvironment: config.API_KEY_ENVIRONMENT,
              confirmAbove: config.CONSOLE_CONFIRM_ABOVE ?? null,
              assetCode: config.ASSET_CODE,
              waitingPollMs: config.CONSOLE_WAITING_POLL_MS,
              readYourWrites,
              tracing,
            }),
          ]
        : []),
    ],
  });
  return {
    app,
    stores,
    ledger,
    directory,
    executor,
    consumers: watched,
    credentials,
    ...(metrics ? { metrics } : {}),
    ...(servedReads ? { replicaReads: servedReads.counts } : {}),
    ...(metrics && !onThisPort ? { metricsApp: metricsApp(metrics) } : {}),
    async close() {
      await Promise.all([...runners.map((runner) => runner.stop()), executor.stop(), sealer?.stop(), usage.close()]);
      await keyRevocations.stop();
      await webhooks?.outbox.stop();
      await webhooks?.dispatcher.stop();
      await following.stop();
      await followingUsers?.stop();
      await balancesFollower?.stop();
      await skew?.stop();
      await stores.close();
      await replica?.close();
      await ledger.close();
      // Last: the spans of the work that just ended are exported too.
      if (ownTracing) await tracing.shutdown();
    },
  };
}

/**
 * How long a console page waits for a directory in memory to hold a write (its own, or another process's a
 * moment ago) before it answers 503: the directories' followers are a polling interval behind at most.
 */
const DIRECTORY_WAIT_MS = 5_000;

/** How long a start waits for its stores before giving up (and letting the orchestrator restart it). */
const START_PATIENCE_MS = 60_000;
/** Its waits between tries: 100 ms at first, at most 2 s. */
const START_BACKOFF = { firstMs: 100, maxMs: 2_000 };

/** How often a start still waiting for its stores says so (its first failed attempt always). */
const START_WARN_EVERY_MS = 5_000;

/**
 * Runs a start-up step again while its store is unavailable (transiently: busy, down, an injected fault),
 * with backoff, for up to START_PATIENCE_MS; any other error, or a store still down by then, fails the start.
 * It warns in one line (the store's message, no stack) at the first failed attempt and then every few seconds,
 * not at each of the tries 0.1 to 2 s apart.
 */
export async function untilAvailable<T>(step: () => Promise<T>, what: string, logger: Logger): Promise<T> {
  const deadline = Date.now() + START_PATIENCE_MS;
  let warned = -Infinity;
  for (let attempt = 1; ; attempt++) {
    try {
      return await step();
    } catch (error) {
      const transient = error instanceof EventStoreUnavailableError || error instanceof ReadStoreUnavailableError;
      if (!transient || Date.now() > deadline) throw error;
      if (Date.now() - warned >= START_WARN_EVERY_MS) {
        warned = Date.now();
        const seconds = START_PATIENCE_MS / 1000;
        logger.warn(
          { attempt, error: error.message, retryingForS: seconds },
          `${what}: store unavailable at start (attempt ${attempt}, retrying for up to ${seconds} s)`,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, backoffMs(attempt, START_BACKOFF)));
    }
  }
}

/** How often this process's clock is compared with the store's (at start, then this often). */
const CLOCK_SKEW_INTERVAL_MS = 5 * 60_000;

/** A first measure of the skew is awaited at start for at most this long (the store's health says the rest). */
const FIRST_SKEW_MEASURE_MS = 2_000;

/**
 * The clock skew warning against the store's time, and the store's time as this process knows it (`dayClock`,
 * its clock less the measured skew) for the volume day: PostgreSQL's statement_timestamp(), or on the embedded
 * store the kernel's stamp on a file of DATA_DIR (src/shared/clock-skew.ts). A KurrentDB store has no time to
 * read here: the local clock stands.
 */
async function watchStoreClock(
  config: Config,
  clock: () => Date,
  logger: Logger,
  metrics: WalletOpsMetrics | undefined,
) {
  let storeNow: () => Promise<Date>;
  let close = async () => {};
  if (config.EVENT_STORE === 'postgres' || config.READ_STORE === 'postgres') {
    if (!config.POSTGRES_URL) return undefined;
    const { openPostgresClock } = await import('./adapters/postgres/postgres-clock.ts');
    const store = openPostgresClock({
      url: config.POSTGRES_URL,
      statementTimeoutMs: config.POSTGRES_STATEMENT_TIMEOUT_MS,
    });
    storeNow = () => store.now();
    close = () => store.close();
  } else if (config.EVENT_STORE === 'embedded') {
    storeNow = fileTime(join(config.DATA_DIR, CLOCK_PROBE_FILE));
  } else {
    return undefined;
  }
  const dayClock = new CorrectedClock(clock);
  const report = (seconds: number) => {
    dayClock.measured(seconds * 1000);
    metrics?.clockSkew.set(seconds);
  };
  // The first decisions after a start already take the store's day.
  const first = measureClockSkew(storeNow, clock).then(
    (skewMs) => dayClock.measured(skewMs),
    () => {},
  );
  await Promise.race([first, new Promise((resolve) => setTimeout(resolve, FIRST_SKEW_MEASURE_MS).unref())]);
  const stop = watchClockSkew({
    storeNow,
    clock,
    warnMs: config.CLOCK_SKEW_WARN_MS,
    intervalMs: CLOCK_SKEW_INTERVAL_MS,
    logger,
    report,
  });
  return {
    dayClock: dayClock.now,
    async stop() {
      stop();
      await close();
    },
  };
}

/** The file of DATA_DIR whose modification time the kernel stamps: the embedded store's clock. */
export const CLOCK_PROBE_FILE = 'clock-probe';

/**
 * The followers thread (src/followers-thread.ts): builds the parts it is given with buildWalletOps on store
 * connections of its own, and reports to the main thread what read-your-writes, /health, /ready and /metrics
 * need. Loaded with Node's type stripping where no TypeScript loader is registered, like every source.
 */
import { enableCompileCache } from 'node:module';
import { parentPort, workerData } from 'node:worker_threads';
import type { FollowersWorkerData, FromFollowers, ToFollowers } from './followers-thread.ts';
import type { ReadStore } from './ports/read-store.ts';
import type { CommittedPositions } from './projections/read-your-writes.ts';

// As main.ts: a restarted thread erases the sources' types once, not at each start. Before the modules load.
enableCompileCache();
const { loadConfig } = await import('./config.ts');
const { asyncStdout, createLogger, flushLogs } = await import('./logger.ts');
const { allProjections } = await import('./projections/index.ts');
const { buildWalletOps } = await import('./wallet-ops.ts');

const data = workerData as FollowersWorkerData;
const port = parentPort!;
const post = (message: FromFollowers) => port.postMessage(message);
const config = loadConfig(data.env);
// The same stdout and format as the main thread's lines, told apart by `thread`.
const logger = createLogger(config.LOG_LEVEL, asyncStdout()).child({ thread: 'followers' });
const hooks = data.hooks ? ((await import(data.hooks)) as { decorateReadStore?: (store: ReadStore) => ReadStore }) : {};

// Each projection's committed position, sent as its commit ends: a read on the main thread waits for it. The
// commits that end in one turn of the event loop go in one message.
const models = new Set(allProjections(config.ASSET_SCALE).map((projection) => projection.name));
const moved = new Map<string, number>();
const committed = (model: string, position: number) => {
  if (moved.size === 0) setImmediate(sendMoved);
  moved.set(model, Math.max(moved.get(model) ?? -1, position));
};
const sendMoved = () => {
  post({ type: 'committed', positions: [...moved] });
  moved.clear();
};
const reportingCommits = (store: ReadStore): ReadStore =>
  new Proxy(store, {
    get(target, property) {
      if (property === 'commit')
        return async (...args: Parameters<ReadStore['commit']>) => {
          await target.commit(...args);
          const checkpoint = args[1];
          if (checkpoint && models.has(checkpoint.projection)) committed(checkpoint.projection, checkpoint.position);
        };
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });

const system = await buildWalletOps(config, logger, () => new Date(), data.parts, {
  decorateReadStore: (store) => reportingCommits(hooks.decorateReadStore?.(store) ?? store),
});

// The main thread computes every consumer's lag and the clock skew itself: the thread's would be counted twice.
for (const family of [
  'wallet_ops_consumer_lag_events',
  'wallet_ops_consumer_lag_seconds',
  'wallet_ops_consumer_up',
  'wallet_ops_clock_skew_seconds',
])
  system.metrics?.registry.removeSingleMetric(family);

const runners = new Map<string, CommittedPositions>();
for (const watched of system.consumers) {
  const model = watched.consumer.name.replace(/^projection:/, '');
  if (models.has(model) && 'untilCommitted' in watched) runners.set(model, watched as unknown as CommittedPositions);
}

/** How often the consumers' states (and the projections' positions) are sent: /health reads them this late. */
const STATUS_EVERY_MS = 250;
const statusTimer = setInterval(() => {
  post({
    type: 'status',
    consumers: system.consumers.map(({ consumer }) => ({ status: consumer.status(), downForMs: consumer.downForMs() })),
  });
  for (const [model, runner] of runners) if (runner.position !== null) committed(model, runner.position);
}, STATUS_EVERY_MS);

let stopping = false;
port.on('message', (message: ToFollowers) => {
  switch (message.type) {
    case 'commit-by': {
      const runner = runners.get(message.model);
      // Its position may be one loaded at start, which no commit reports: answered once reached.
      void runner?.untilCommitted(message.position, message.timeoutMs).then((reached) => {
        if (reached && runner.position !== null) committed(message.model, runner.position);
      });
      return;
    }
    case 'metrics':
      void (system.metrics?.registry.getMetricsAsJSON() ?? Promise.resolve([])).then(
        (families) => post({ type: 'metrics', id: message.id, families }),
        () => post({ type: 'metrics', id: message.id, families: [] }),
      );
      return;
    case 'stop':
      if (stopping) return;
      stopping = true;
      clearInterval(statusTimer);
      void system
        .close()
        .catch((error: unknown) => logger.error({ err: error }, 'closing the followers failed'))
        .then(() => flushLogs(logger))
        .then(() => post({ type: 'stopped' }));
      return;
  }
});

post({
  type: 'ready',
  consumers: system.consumers.map(({ consumer, filter, lagOf }) => ({
    name: consumer.name,
    filter,
    ...(lagOf ? { lagOf: lagOf.name } : {}),
  })),
});

const crashAfterMs = config.FAULT_FOLLOWERS_THREAD_CRASH_AFTER_MS;
if (crashAfterMs > 0 && data.generation === 1) {
  logger.warn({ crashAfterMs }, 'FAULT INJECTION ACTIVE: this followers thread will throw an uncaught error');
  setTimeout(() => {
    throw new Error(`fault injected: the followers thread crashes ${crashAfterMs} ms after it is up`);
  }, crashAfterMs);
}

const blockAfterMs = config.FAULT_FOLLOWERS_THREAD_BLOCK_AFTER_MS;
if (blockAfterMs > 0 && data.generation === 1) {
  logger.warn({ blockAfterMs }, 'FAULT INJECTION ACTIVE: this followers thread will block its event loop');
  setTimeout(() => {
    // Busy, as a runaway computation would be: no timer, message or I/O of this thread runs meanwhile.
    for (const until = Date.now() + config.FAULT_HANG_MS; Date.now() < until;);
  }, blockAfterMs);
}

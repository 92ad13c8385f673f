import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { Config } from './config.ts';
import type { ConsumerView, WatchedConsumer } from './health.ts';
import type { Logger } from './logger.ts';
import type { MetricFamilies } from './metrics/index.ts';
import type { EventFilter } from './ports/event-store.ts';
import type { CommittedPositions } from './projections/read-your-writes.ts';
import { backoffMs, type BackoffSchedule } from './shared/backoff.ts';
import { describeError, type ConsumerStatus } from './shared/supervised-consumer.ts';
import { buildWalletOps, type BuildOptions, type Part, type WalletOps } from './wallet-ops.ts';
import type { FollowersElsewhere, FollowersThreadReport } from './followers-elsewhere.ts';

/**
 * The followers on a worker thread of the process that serves the APIs (FOLLOWERS_THREAD; the why is in
 * followers-elsewhere.ts): the main thread's side, and the messages both sides exchange (followers-worker.ts is the
 * thread's side).
 */

/** What the followers thread tells the main thread. */
export type FromFollowers =
  | { type: 'ready'; consumers: Array<{ name: string; filter?: EventFilter | undefined; lagOf?: string }> }
  | { type: 'committed'; positions: Array<[model: string, position: number]> }
  | { type: 'status'; consumers: Array<{ status: ConsumerStatus; downForMs: number }> }
  | { type: 'metrics'; id: number; families: MetricFamilies }
  | { type: 'stopped' };

/** What the main thread asks of it. */
export type ToFollowers =
  | { type: 'commit-by'; model: string; position: number; timeoutMs: number }
  | { type: 'metrics'; id: number }
  | { type: 'stop' };

export interface FollowersWorkerData {
  /** The environment the configuration is loaded from, as the main thread loaded it. */
  env: Record<string, string | undefined>;
  parts: Part[];
  /** 1 for the first thread, then one more per restart. */
  generation: number;
  /** Tests only: a module whose `decorateReadStore` wraps the thread's read store. */
  hooks?: string;
}

/** The parts that go to the thread; the rest stay on the main thread. */
const FOLLOWING: readonly Part[] = ['projections', 'executor', 'webhooks'];

/**
 * How `parts` split between the main thread and a followers thread: only a process that serves an API and
 * follows the history too, with FOLLOWERS_THREAD on. Undefined: every part on the event loop.
 */
export function followersThreadSplit(
  config: Pick<Config, 'FOLLOWERS_THREAD'>,
  parts: readonly Part[],
): { main: Part[]; thread: Part[] } | undefined {
  const thread = parts.filter((part) => FOLLOWING.includes(part));
  const main = parts.filter((part) => !FOLLOWING.includes(part));
  return config.FOLLOWERS_THREAD && thread.length > 0 && main.length > 0 ? { main, thread } : undefined;
}

/**
 * The system with the followers on a thread of their own: the thread is started, the main thread's parts are
 * built meanwhile, and both are up before this resolves. Closing stops the thread's followers first (they finish
 * and commit what they handled), then the main thread's stores close.
 */
export async function buildWithFollowersThread(
  env: Record<string, string | undefined>,
  config: Config,
  logger: Logger,
  split: { main: Part[]; thread: Part[] },
  options: BuildOptions & { hooks?: URL } = {},
): Promise<WalletOps> {
  const { hooks, ...buildOptions } = options;
  const thread = new FollowersThread({
    env,
    parts: split.thread,
    logger,
    // The consumers' backoff, from 1 s at least: a thread's start costs a few hundred ms of CPU.
    backoff: {
      firstMs: Math.max(1_000, config.CONSUMER_RETRY_BASE_MS),
      maxMs: Math.max(1_000, config.CONSUMER_RETRY_MAX_MS),
    },
    ...(hooks ? { hooks: hooks.href } : {}),
  });
  const [built, started] = await Promise.allSettled([
    buildWalletOps(config, logger, () => new Date(), split.main, { ...buildOptions, followers: thread }),
    thread.start(),
  ]);
  if (built.status === 'rejected' || started.status === 'rejected') {
    await thread.stop();
    if (built.status === 'fulfilled') await built.value.close();
    throw built.status === 'rejected' ? built.reason : (started as PromiseRejectedResult).reason;
  }
  const system = built.value;
  return {
    ...system,
    async close() {
      await thread.stop();
      await system.close();
    },
  };
}

/** The worker's module beside this one: .ts in a checkout, .js in the compiled image. */
const WORKER = new URL(`./followers-worker${extname(fileURLToPath(import.meta.url))}`, import.meta.url);

/** A running thread that sends nothing for this long (20 status periods) is reported down: blocked, not dead. */
const SILENT_AFTER_MS = 5_000;

/** A thread that ran this long before it died starts the backoff afresh. */
const STABLE_AFTER_MS = 60_000;

/**
 * The main thread's side: starts the worker, keeps what it reports, and starts a new one (with backoff) when it
 * dies. The consumers of a new thread resume from their checkpoints, as after a process restart: what a dead one
 * handled but had not committed is handled again, and the models ignore what they have seen.
 */
interface ThreadOptions {
  env: Record<string, string | undefined>;
  parts: Part[];
  logger: Logger;
  /** The waits before a new thread while they keep dying. */
  backoff: BackoffSchedule;
  hooks?: string;
}

export class FollowersThread implements FollowersElsewhere {
  private readonly options: ThreadOptions;
  private worker: Worker | undefined;
  private generation = 0;
  private upSince = 0;
  /** When the running thread last sent anything (its status comes every 250 ms). */
  private heardAt = 0;
  private failures = 0;
  private state: FollowersThreadReport['state'] = 'starting';
  private lastExit: { reason: string; at: number } | null = null;
  private restartTimer: NodeJS.Timeout | undefined;
  private readonly models = new Map<string, RemoteCommitted>();
  private readonly consumers = new Map<string, RemoteConsumer>();
  private reported: Array<WatchedConsumer<ConsumerView>> = [];
  private readonly metricsWaiting = new Map<number, (families: MetricFamilies) => void>();
  private nextMetricsId = 0;
  private stopped: Promise<void> | undefined;

  constructor(options: ThreadOptions) {
    this.options = options;
  }

  /** Resolves once the first thread is up; rejects if it dies first (the process cannot start). */
  start(): Promise<void> {
    return new Promise((resolve, reject) => this.spawn({ resolve, reject }));
  }

  committed(model: string): CommittedPositions {
    let committed = this.models.get(model);
    if (!committed) {
      committed = new RemoteCommitted((position, timeoutMs) =>
        this.send({ type: 'commit-by', model, position, timeoutMs }),
      );
      this.models.set(model, committed);
    }
    return committed;
  }

  watched(): ReadonlyArray<WatchedConsumer<ConsumerView>> {
    return this.reported;
  }

  metricFamilies(): Promise<MetricFamilies> {
    if (this.state !== 'running') return Promise.resolve([]);
    const id = this.nextMetricsId++;
    return new Promise((resolve) => {
      this.metricsWaiting.set(id, resolve);
      this.send({ type: 'metrics', id });
    });
  }

  report(): FollowersThreadReport {
    return {
      state: this.state,
      restarts: Math.max(0, this.generation - 1),
      lastExit: this.lastExit && { reason: this.lastExit.reason, at: new Date(this.lastExit.at).toISOString() },
    };
  }

  /**
   * While no thread is up after one died, or while the running one has been silent past SILENT_AFTER_MS (its event
   * loop blocked: it reports every STATUS_EVERY_MS otherwise): since when, and why.
   */
  down(): { since: number; reason: string } | undefined {
    if (this.state === 'restarting' && this.lastExit) return { since: this.lastExit.at, reason: this.lastExit.reason };
    const silentMs = Date.now() - this.heardAt;
    if (this.state === 'running' && silentMs > SILENT_AFTER_MS)
      return {
        since: this.heardAt,
        reason:
          `the followers thread has not reported for ${Math.round(silentMs / 1000)} s ` + '(its event loop is blocked)',
      };
    return undefined;
  }

  /** Stops the thread's followers (they commit what they handled and close their stores), then the thread. */
  stop(): Promise<void> {
    return (this.stopped ??= this.stopNow());
  }

  private async stopNow(): Promise<void> {
    this.state = 'stopped';
    clearTimeout(this.restartTimer);
    const worker = this.worker;
    if (!worker) return;
    const ended = new Promise<void>((resolve) => {
      worker.on('message', (message: FromFollowers) => message.type === 'stopped' && resolve());
      worker.once('exit', () => resolve());
    });
    worker.postMessage({ type: 'stop' } satisfies ToFollowers);
    await ended;
    await worker.terminate();
  }

  private send(message: ToFollowers): void {
    if (this.state === 'running') this.worker?.postMessage(message);
  }

  private spawn(first?: { resolve: () => void; reject: (error: unknown) => void }): void {
    this.generation += 1;
    const workerData: FollowersWorkerData = {
      env: this.options.env,
      parts: this.options.parts,
      generation: this.generation,
      ...(this.options.hooks ? { hooks: this.options.hooks } : {}),
    };
    const worker = new Worker(WORKER, { workerData, stdout: false, stderr: false });
    this.worker = worker;
    let failure: unknown;
    worker.on('message', (message: FromFollowers) => {
      if (this.worker !== worker) return;
      this.heardAt = Date.now();
      if (message.type === 'ready') {
        this.ready(message);
        first?.resolve();
      } else this.received(message);
    });
    worker.on('error', (error) => (failure = error));
    worker.once('exit', (code) => {
      if (this.worker !== worker) return;
      this.worker = undefined;
      const why = failure ? describeError(failure) : `it exited with code ${code}`;
      const reason = `the followers thread stopped: ${why}`;
      if (first && this.state === 'starting') return first.reject(failure ?? new Error(reason));
      this.died(reason);
    });
  }

  private ready(message: Extract<FromFollowers, { type: 'ready' }>): void {
    this.state = 'running';
    this.upSince = Date.now();
    const consumerOf = (name: string) => {
      let consumer = this.consumers.get(name);
      if (!consumer) this.consumers.set(name, (consumer = new RemoteConsumer(name, this)));
      return consumer;
    };
    this.reported = message.consumers.map(({ name, filter, lagOf }) => ({
      consumer: consumerOf(name),
      filter,
      ...(lagOf ? { lagOf: consumerOf(lagOf) } : {}),
    }));
    if (this.generation > 1) this.options.logger.info({ generation: this.generation }, 'followers thread up again');
  }

  private received(message: Exclude<FromFollowers, { type: 'ready' }>): void {
    switch (message.type) {
      case 'committed':
        for (const [model, position] of message.positions) this.models.get(model)?.moved(position);
        return;
      case 'status':
        for (const { status, downForMs } of message.consumers)
          this.consumers.get(status.name)?.reported(status, downForMs);
        return;
      case 'metrics':
        this.metricsWaiting.get(message.id)?.(message.families);
        this.metricsWaiting.delete(message.id);
        return;
      case 'stopped':
        return;
    }
  }

  private died(reason: string): void {
    for (const answer of this.metricsWaiting.values()) answer([]);
    this.metricsWaiting.clear();
    if (this.state === 'stopped') return;
    const now = Date.now();
    this.failures = now - this.upSince >= STABLE_AFTER_MS ? 1 : this.failures + 1;
    this.state = 'restarting';
    this.lastExit = { reason, at: now };
    const delayMs = Math.round(backoffMs(this.failures, this.options.backoff));
    // Not silent: /health shows it (the thread's consumers fail with this reason), and a new thread is started.
    this.options.logger.error(
      { generation: this.generation, restartInMs: delayMs, reason },
      'followers thread died; starting a new one',
    );
    this.restartTimer = setTimeout(() => this.spawn(), delayMs);
  }
}

/** A model's committed position as the followers thread reports it; a read waits on it as on a local follower. */
class RemoteCommitted implements CommittedPositions {
  position: number | null = null;
  private readonly waiters = new Set<{ position: number; resolve: (reached: boolean) => void }>();
  private readonly ask: (position: number, timeoutMs: number) => void;

  constructor(ask: (position: number, timeoutMs: number) => void) {
    this.ask = ask;
  }

  moved(position: number): void {
    if (this.position !== null && position <= this.position) return;
    this.position = position;
    for (const waiter of this.waiters) if (waiter.position <= position) waiter.resolve(true);
  }

  untilCommitted(position: number, timeoutMs: number): Promise<boolean> {
    if ((this.position ?? -1) >= position) return Promise.resolve(true);
    // The thread's follower commits a checkpoint it holds back at once when asked for it (Follower.untilCommitted).
    this.ask(position, timeoutMs);
    return new Promise<boolean>((resolve) => {
      const waiter = {
        position,
        resolve: (reached: boolean) => {
          clearTimeout(timer);
          this.waiters.delete(waiter);
          resolve(reached);
        },
      };
      const timer = setTimeout(() => waiter.resolve(false), timeoutMs);
      timer.unref();
      this.waiters.add(waiter);
    });
  }
}

/** A consumer of the followers thread, as it last reported it; failing with the thread's reason while it is down. */
class RemoteConsumer implements ConsumerView {
  readonly name: string;
  private readonly thread: FollowersThread;
  private last: { status: ConsumerStatus; downForMs: number; at: number } | undefined;

  constructor(name: string, thread: FollowersThread) {
    this.name = name;
    this.thread = thread;
  }

  reported(status: ConsumerStatus, downForMs: number): void {
    this.last = { status, downForMs, at: Date.now() };
  }

  status(): ConsumerStatus {
    const status = this.last?.status ?? {
      name: this.name,
      state: 'starting',
      failingSince: null,
      consecutiveFailures: 0,
      totalFailures: 0,
      lastError: null,
      lastErrorAt: null,
      position: null,
    };
    const down = this.thread.down();
    if (!down) return status;
    const since = new Date(down.since).toISOString();
    return { ...status, state: 'retrying', failingSince: since, lastError: down.reason, lastErrorAt: since };
  }

  downForMs(): number {
    const now = Date.now();
    const own = this.last && this.last.downForMs > 0 ? this.last.downForMs + (now - this.last.at) : 0;
    const down = this.thread.down();
    return down ? Math.max(own, now - down.since) : own;
  }
}

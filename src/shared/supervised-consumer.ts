/**
 * One supervised consumer: the single mechanism under every piece of background work that follows the event
 * store (the projections, the executor, the API-key directory, the audit sealer). A consumer is a *session*
 * function: it reads its checkpoint, subscribes from it and consumes until it is stopped or fails. When a
 * session fails, for any reason, the supervisor logs the failure once with its cause, waits (capped exponential
 * backoff with jitter, so that many consumers of many processes do not hammer a recovering store in step) and
 * starts a new session, which resumes from the checkpoint: nothing is skipped and nothing is lost, because a
 * session only moves its checkpoint over what it has applied.
 *
 * The supervisor never gives up: a store that is down for an hour is retried for an hour. What it does instead
 * is tell the truth about it: `status()` says since when the consumer has been unable to run, which /health
 * turns into a failure past a grace period so that an orchestrator restarts the process.
 */
import { inspect } from 'node:util';
import { backoffMs } from './backoff.ts';

export type ConsumerState = 'starting' | 'running' | 'retrying' | 'stopped';

export interface ConsumerStatus {
  name: string;
  state: ConsumerState;
  /** When the current streak of failures began (ISO 8601), or null while the consumer runs normally. */
  failingSince: string | null;
  /** Failures in the current streak; 0 while running normally. */
  consecutiveFailures: number;
  /** Failures since the process started. */
  totalFailures: number;
  lastError: string | null;
  lastErrorAt: string | null;
  /** The consumer's own checkpoint: every event at or below it has been applied. Null before the first read. */
  position: number | null;
}

/** What the supervisor needs of a subscription (the event store port's Subscription is one). */
export interface OwnedSubscription {
  stop(): Promise<void>;
  onCaughtUp?(listener: () => void): void;
}

export interface SessionContext {
  /** True once the consumer is being stopped: a session that sees it returns. */
  stopping(): boolean;
  /** Registers the session's subscription: stop() stops it, which ends the session's for-await; returns it. */
  own<S extends OwnedSubscription>(subscription: S): S;
  /** Reports the checkpoint the session has reached; progress also proves the consumer is running again. */
  progress(position: number): void;
}

/** The subset of pino the supervisor uses (src/shared imports no package). */
export interface ConsumerLogger {
  info(object: object, message: string): void;
  warn(object: object, message: string): void;
}

export interface SupervisedConsumerOptions {
  name: string;
  /** Runs one session: resolves when the consumer is stopped, throws when it fails. */
  session: (context: SessionContext) => Promise<void>;
  logger: ConsumerLogger;
  /** First retry delay; doubled at each consecutive failure up to maxDelayMs. Default 100 ms. */
  baseDelayMs?: number;
  /** Default 10 s. */
  maxDelayMs?: number;
  /** A session that has run this long without failing has recovered, even with no event to apply. Default 15 s. */
  stableAfterMs?: number;
  random?: () => number;
  now?: () => number;
}

export class SupervisedConsumer {
  private readonly options: SupervisedConsumerOptions;
  private state: ConsumerState = 'starting';
  private stopped = false;
  /** The current session's subscriptions, stopped by stop(). */
  private owned = new Set<OwnedSubscription>();
  /** Sessions started so far: a late signal of an ended session is ignored. */
  private session = 0;
  /** The first position the current session reported (after a failure, recovery must go beyond it). */
  private baseline: number | null = null;
  private done: Promise<void> | undefined;
  private failingSince: number | null = null;
  private consecutiveFailures = 0;
  private totalFailures = 0;
  private lastError: string | null = null;
  private lastErrorAt: number | null = null;
  private position: number | null = null;
  private wakeSleep: (() => void) | undefined;

  constructor(options: SupervisedConsumerOptions) {
    this.options = options;
  }

  get name(): string {
    return this.options.name;
  }

  start(): void {
    this.done ??= this.supervise();
  }

  /** Ends the current session (its subscription is stopped through the signal) and any wait between sessions. */
  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all([...this.owned].map((subscription) => subscription.stop()));
    this.wakeSleep?.();
    await this.done;
    this.state = 'stopped';
  }

  status(): ConsumerStatus {
    return {
      name: this.options.name,
      state: this.state,
      failingSince: this.failingSince === null ? null : new Date(this.failingSince).toISOString(),
      consecutiveFailures: this.consecutiveFailures,
      totalFailures: this.totalFailures,
      lastError: this.lastError,
      lastErrorAt: this.lastErrorAt === null ? null : new Date(this.lastErrorAt).toISOString(),
      position: this.position,
    };
  }

  /** How long the consumer has been unable to run, in ms (0 while it runs). */
  downForMs(): number {
    return this.failingSince === null ? 0 : this.now() - this.failingSince;
  }

  private async supervise(): Promise<void> {
    while (!this.stopped) {
      this.session += 1;
      this.baseline = null;
      // A session that stays up for a while has recovered even if nothing happened to prove it (a fallback for
      // subscriptions that cannot say they caught up; longer than a store's own retry budget, so that a session
      // stuck in a call that will fail is not taken for a healthy one).
      const stable = setTimeout(() => this.recovered(), this.options.stableAfterMs ?? 15_000);
      try {
        await this.options.session({
          stopping: () => this.stopped,
          own: (subscription) => this.own(subscription),
          progress: (position) => this.progressed(position),
        });
        if (this.stopped) break;
        throw new Error('the subscription ended by itself');
      } catch (error) {
        if (this.stopped) break;
        this.failed(error);
      } finally {
        this.session += 1; // signals of the session that just ended are stale from here on
        clearTimeout(stable);
        // Whatever the session left open ends with it.
        await Promise.allSettled([...this.owned].map((subscription) => subscription.stop()));
        this.owned.clear();
      }
      // Only a failed session gets here. The wait comes after the finally: during it the failed session's stable timer
      // must not run (it would declare a recovery) and its subscriptions must not stay open.
      if (!this.stopped) await this.sleep(this.delayMs());
    }
    this.state = 'stopped';
  }

  private own<S extends OwnedSubscription>(subscription: S): S {
    this.owned.add(subscription);
    if (this.stopped) void subscription.stop();
    // Caught up: the store answered a read at the head, the proof of health an idle consumer can give.
    const session = this.session;
    subscription.onCaughtUp?.(() => {
      if (session === this.session && this.state !== 'running') this.recovered();
    });
    return subscription;
  }

  /**
   * Progress proves a recovery only when it goes beyond where the session started: a session that reads its
   * checkpoint and then fails at once has proved nothing (else a dead subscription would look healthy at every
   * retry, and the streak would never grow).
   */
  private progressed(position: number): void {
    this.position = position;
    if (this.state === 'running') return;
    if (this.state === 'starting') return this.recovered();
    if (this.baseline === null) this.baseline = position;
    else if (position > this.baseline) this.recovered();
  }

  private recovered(): void {
    if (this.stopped) return;
    if (this.failingSince !== null) {
      this.options.logger.info(
        { consumer: this.options.name, failures: this.consecutiveFailures, downMs: this.now() - this.failingSince },
        'consumer recovered',
      );
    }
    this.state = 'running';
    this.failingSince = null;
    this.consecutiveFailures = 0;
  }

  private failed(error: unknown): void {
    const now = this.now();
    this.state = 'retrying';
    this.failingSince ??= now;
    this.consecutiveFailures += 1;
    this.totalFailures += 1;
    this.lastError = describeError(error);
    this.lastErrorAt = now;
    this.options.logger.warn(
      { consumer: this.options.name, err: error, failures: this.consecutiveFailures, position: this.position },
      'consumer failed; resubscribing from its checkpoint',
    );
  }

  private delayMs(): number {
    const schedule = { firstMs: this.options.baseDelayMs ?? 100, maxMs: this.options.maxDelayMs ?? 10_000 };
    return backoffMs(this.consecutiveFailures, schedule, this.options.random);
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.wakeSleep = done;
    });
  }

  private now(): number {
    return (this.options.now ?? Date.now)();
  }
}

/** The message and the causes under it, e.g. "could not commit to the event store: SQLITE_BUSY: database is locked". */
export function describeError(error: unknown): string {
  const parts: string[] = [];
  let current: unknown = error;
  for (let depth = 0; current !== undefined && current !== null && depth < 5; depth++) {
    // A thrown non-Error object is shown by its fields, not as "[object Object]".
    parts.push(
      current instanceof Error
        ? current.message
        : typeof current === 'string'
          ? current
          : inspect(current, { breakLength: Infinity }),
    );
    current = current instanceof Error ? current.cause : undefined;
  }
  return parts.join(': ');
}

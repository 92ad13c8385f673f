/**
 * The one follower of the event stream, and the one shell of every consumer of it: the projection runners, the
 * webhook outbox, key revocations, the executor, the API-key directory, the balances view and the audit sealer
 * are each a Follower built with their own handler and two policies, values passed in:
 *
 *  - the checkpoint policy (src/shared/checkpoints.ts): where the position is kept and how it is committed (with
 *    the batch's writes, shared forward only, in memory; batched);
 *  - the settling policy (src/shared/settling.ts): what a checkpoint conflict or a failed commit leads to.
 *
 * The follower owns the rest, once: a session reads the checkpoint, subscribes after it and hands the handler
 * batches of what has already arrived (a burst costs one commit); the checkpoint moves only over what is handled,
 * contiguously (an event the handler settles later holds it back); a conflict, returned as data by the policy or
 * the handler, starts a new session from the stored checkpoint; any other failure ends the session, which the
 * supervisor logs once and retries with the one backoff; `consumer.status()` is the health signal /health reads.
 * Work beside a follower (a periodic sweep, the executor's carrier) starts with it and stops before it.
 *
 * The dispatcher of webhook deliveries follows the delivery queues, not the stream: it uses the same
 * supervision (`supervise`) and nothing else of this.
 */
import type { EventFilter, EventStore, RecordedEvent } from '../ports/event-store.ts';
import type { Write } from '../ports/read-store.ts';
import { commitsNow, type CheckpointPolicy, type CommitResult, type Conflict } from './checkpoints.ts';
import { FailureStreak } from './failure-streak.ts';
import { failOnCommit, resumeFrom, settle, type SettlingPolicy } from './settling.ts';
import {
  SupervisedConsumer,
  type ConsumerLogger,
  type SessionContext,
  type SupervisedConsumerOptions,
} from './supervised-consumer.ts';

export * from './checkpoints.ts';
export * from './settling.ts';
export { FailureStreak } from './failure-streak.ts';
export {
  describeError,
  SupervisedConsumer,
  type ConsumerLogger,
  type ConsumerStatus,
  type SessionContext,
} from './supervised-consumer.ts';

export type Supervision = Pick<SupervisedConsumerOptions, 'baseDelayMs' | 'maxDelayMs' | 'stableAfterMs'>;

/** Supervision alone, for background work that follows something other than the stream (the webhook queues). */
export function supervise(
  name: string,
  logger: ConsumerLogger,
  session: SupervisedConsumerOptions['session'],
  supervision?: Supervision,
): SupervisedConsumer {
  return new SupervisedConsumer({ name, logger, ...supervision, session });
}

/** What a handler may ask of its follower while it handles a batch. */
export interface BatchContext {
  stopping(): boolean;
  /** The event at `position` is handled only once `settled` resolves: the checkpoint does not pass it before. */
  settleLater(position: number, settled: Promise<unknown>): void;
  /** The batch's checkpoint is committed whatever a batched policy says (it acted: a restart should not act again). */
  commitNow(): void;
}

/** A batch handled: the writes to commit with its checkpoint, or a conflict (the ground moved under it). */
export type Handled = Write[] | void | Conflict;

/** Work beside a follower: started after it, stopped before it in order (a periodic sweep, the executor's carrier). */
export interface Companion {
  start?(): void;
  stop?(): Promise<void>;
}

export interface FollowerOptions {
  name: string;
  eventStore: EventStore;
  filter?: EventFilter;
  checkpoint: CheckpointPolicy;
  /** Default: a failed commit ends the session (failOnCommit). */
  settling?: SettlingPolicy;
  /** Handles a batch of events, in position order. */
  handle(batch: RecordedEvent[], context: BatchContext): Promise<Handled>;
  /** Told after the handler's writes are committed (the outbox wakes the dispatcher). */
  onCommitted?(writes: Write[]): void;
  /** Runs at the start of every session, before the checkpoint is read (a handler reloads its state). */
  prepare?(): Promise<void>;
  /** Most events per batch. Default 1000. */
  batchSize?: number;
  /** Called when no event came for `afterMs` (the sealer seals what it has). */
  idle?: { afterMs: number; run(): Promise<void | Conflict> };
  beside?: Companion[];
  logger: ConsumerLogger;
  /** The supervisor's backoff between failed sessions. */
  supervision?: Supervision;
}

/** A task run every `everyMs` from start to stop, its failures logged once per streak. */
export function periodic(everyMs: number, run: () => Promise<unknown>, streak: FailureStreak): Companion {
  let timer: NodeJS.Timeout | undefined;
  return {
    start: () => (timer = setInterval(() => void streak.track(run()), everyMs)),
    stop: async () => clearInterval(timer),
  };
}

const IDLE = Symbol('idle');
type Outcome = CommitResult | { kind: 'retrying' };

export class Follower {
  private readonly options: FollowerOptions;
  private readonly settling: SettlingPolicy;
  readonly consumer: SupervisedConsumer;
  /** The last committed (or loaded) checkpoint. */
  private committed: number | null = null;
  /** The last position handed to the handler and handled (settled or not). */
  private delivered: number | null = null;
  private committedAt = Date.now();
  /** Events waiting to settle, by position. */
  private readonly unsettled = new Set<number>();
  private readonly settleWaiters: Array<() => void> = [];
  /** Callers of untilCommitted, woken by each commit that reaches their position. */
  private readonly commitWaiters = new Set<{ position: number; resolve: (reached: boolean) => void }>();
  /** An event whose settling failed: the session fails with its error at the next batch. */
  private settleFailure: { error: unknown; position: number } | undefined;
  private committing: Promise<CommitResult> | undefined;
  /** Commits what is handled every retryCommitMs (events settling between batches, a failed commit). */
  private timer: NodeJS.Timeout | undefined;
  /** The commit a batched policy held back, due at its time (commitLater). */
  private deferred: NodeJS.Timeout | undefined;
  private sessions = 0;
  private readonly commitFailures: FailureStreak;

  constructor(options: FollowerOptions) {
    this.options = options;
    this.settling = options.settling ?? failOnCommit;
    this.consumer = supervise(options.name, options.logger, (context) => this.session(context), options.supervision);
    const messages = { failed: 'checkpoint not committed; trying again', recovered: 'checkpoint committed again' };
    this.commitFailures = new FailureStreak(options.logger, messages, { consumer: options.name });
  }

  get name(): string {
    return this.options.name;
  }

  /** The events it follows (all when undefined): /ready counts its lag in them. */
  get filter(): EventFilter | undefined {
    return this.options.filter;
  }

  /** The checkpoint as this process knows it: every event at or below it is handled. */
  get position(): number | null {
    return this.committed;
  }

  /**
   * Resolves true once the checkpoint has reached `position` (every event at or below it handled and committed
   * with its writes), false after `timeoutMs` or when the follower stops: for a caller that must read its own
   * write from what this follower builds.
   */
  untilCommitted(position: number, timeoutMs: number): Promise<boolean> {
    if ((this.committed ?? -1) >= position) return Promise.resolve(true);
    // Handled but not committed yet (a batched policy holds back a checkpoint that writes nothing): commit now.
    if ((this.handledPosition ?? -1) >= position && this.consumer.status().state !== 'stopped')
      void this.commit().catch(() => {});
    return new Promise<boolean>((resolve) => {
      const waiter = {
        position,
        resolve: (reached: boolean) => {
          clearTimeout(timer);
          this.commitWaiters.delete(waiter);
          resolve(reached);
        },
      };
      const timer = setTimeout(() => waiter.resolve(false), timeoutMs);
      timer.unref();
      this.commitWaiters.add(waiter);
    });
  }

  /** Every event at or below this is handled, committed or not. */
  get handledPosition(): number | null {
    if (this.delivered === null) return this.committed;
    let safe = this.delivered;
    for (const position of this.unsettled) safe = Math.min(safe, position - 1);
    return safe;
  }

  start(): void {
    this.consumer.start();
    for (const companion of this.options.beside ?? []) companion.start?.();
  }

  /** Stops following; what is handled is committed (a failure here only means a harmless replay at the next start). */
  async stop(): Promise<void> {
    for (const companion of this.options.beside ?? []) await companion.stop?.();
    const stopped = this.consumer.stop(); // marks the session stopping at once
    for (const waiter of this.commitWaiters) waiter.resolve(false);
    this.settleWaiters.splice(0).forEach((wake) => wake()); // a session waiting for room to settle sees it
    await stopped;
    clearInterval(this.timer);
    this.timer = undefined;
    clearTimeout(this.deferred);
    this.deferred = undefined;
    const saved = await this.commitHandled().catch((error: unknown) => ({ kind: 'failed' as const, error }));
    if (saved.kind !== 'committed')
      this.options.logger.warn(
        { consumer: this.options.name, err: saved.kind === 'failed' ? saved.error : saved.reason },
        'checkpoint not saved at stop; the next start replays from the last one',
      );
  }

  private async session(context: SessionContext): Promise<void> {
    // After a failed session, a follower whose commits are retried resumes from what it handled (a failed event
    // included).
    let resume = resumeFrom(this.settling, { failedBefore: this.sessions++ > 0, handled: this.handledPosition });
    while (!context.stopping()) {
      if (this.settleFailure) {
        this.unsettled.delete(this.settleFailure.position); // delivered again from the checkpoint below
        this.settleFailure = undefined;
      }
      await this.options.prepare?.();
      if (resume.from === 'checkpoint') {
        this.committed = await this.options.checkpoint.load(this.options);
        this.committedAt = Date.now();
      }
      this.delivered = resume.from === 'handled' ? resume.position : this.committed;
      resume = { from: 'checkpoint' }; // a next turn (the ground moved) reads the checkpoint
      if (this.delivered !== null) context.progress(this.delivered);
      const subscription = context.own(
        this.options.eventStore.subscribeToAll({
          from: this.delivered ?? 'start',
          ...(this.options.filter ? { filter: this.options.filter } : {}),
        }),
      );
      try {
        const moved = await this.consume(subscription, context);
        // Someone else moved the ground (a rebuild swapped in, another sealer sealed): resume from the checkpoint.
        if (moved === undefined || settle(this.settling, moved).kind !== 'resubscribe') return;
      } finally {
        await subscription.stop();
      }
    }
  }

  /** Hands the handler each batch and commits it; returns when the subscription ends, or a conflict. */
  private async consume(subscription: AsyncIterable<RecordedEvent>, context: SessionContext): Promise<Conflict | void> {
    let asked: boolean; // cleared before each batch
    const batchContext: BatchContext = {
      stopping: context.stopping,
      settleLater: (position, settled) => this.settleLater(position, settled),
      commitNow: () => (asked = true),
    };
    const idle = this.options.idle;
    for await (const batch of batches(subscription, this.options.batchSize ?? 1000, idle?.afterMs)) {
      if (batch === IDLE) {
        const moved = await idle!.run();
        if (moved) return moved;
        continue;
      }
      if (this.settleFailure !== undefined) throw this.settleFailure.error;
      asked = false;
      const handled = (await this.options.handle(batch, batchContext)) ?? [];
      if (!Array.isArray(handled)) return handled;
      const writes = handled;
      const before = this.delivered;
      this.delivered = batch.at(-1)!.position;
      const due = commitsNow(this.options.checkpoint.every, {
        asked: writes.length > 0 || asked || this.commitWaiters.size > 0,
        positionsSince: (this.handledPosition ?? 0) - (this.committed ?? 0),
        msSince: Date.now() - this.committedAt,
      });
      if (due) {
        const outcome = await this.commit(writes).catch((error: unknown) => ({ kind: 'failed' as const, error }));
        // A batch whose writes were not committed is not handled: a checkpoint saved before the next session
        // (stop() saves what is handled) must not pass it, or its writes would be lost for good.
        if (outcome.kind !== 'committed' && writes.length > 0) this.delivered = before;
        if (outcome.kind === 'failed') throw outcome.error;
        if (outcome.kind === 'conflict') return outcome;
      } else this.commitLater();
      if (writes.length > 0) this.options.onCommitted?.(writes);
      context.progress(this.handledPosition ?? 0);
      await this.untilRoomToSettle(context);
    }
  }

  /** A checkpoint a batched policy held back is committed once its time has come, even if no batch comes to do it. */
  private commitLater(): void {
    const every = this.options.checkpoint.every;
    if (!every || this.deferred) return;
    this.deferred = setTimeout(() => {
      this.deferred = undefined;
      // A failure surfaces at the session's next commit.
      if ((this.handledPosition ?? 0) > (this.committed ?? 0)) void this.commit().catch(() => {});
    }, every.ms);
    this.deferred.unref();
  }

  /** Commits what is handled; a failed commit is settled by the policy: thrown (the session ends) or retried here. */
  private async commit(writes: Write[] = []): Promise<Outcome> {
    try {
      const result = await this.commitHandled(writes);
      if (result.kind === 'committed') this.commitFailures.succeeded();
      return result;
    } catch (error) {
      const settlement = settle(this.settling, { kind: 'commit-failed', error, writes: writes.length });
      if (settlement.kind !== 'retry-commit') throw error;
      this.commitFailures.failed(error);
      this.commitPeriodically();
      return { kind: 'retrying' };
    }
  }

  /** Commits the handled position (and the writes that go with it): one commit at a time. */
  private async commitHandled(writes: Write[] = []): Promise<CommitResult> {
    while (this.committing) await this.committing.catch(() => {});
    const position = this.handledPosition;
    if (position === null || (writes.length === 0 && position <= (this.committed ?? -1))) return { kind: 'committed' };
    this.committing = this.options.checkpoint.commit(position, writes).then((result) => {
      if (result.kind !== 'committed') return result;
      this.committed = position;
      this.committedAt = Date.now();
      for (const waiter of this.commitWaiters) if (waiter.position <= position) waiter.resolve(true);
      return result;
    });
    try {
      return await this.committing;
    } finally {
      this.committing = undefined;
    }
  }

  /**
   * From now on, what is handled beyond the checkpoint is committed every retryCommitMs too: events that settle
   * between batches, a commit to retry. A failure surfaces at the session's next commit.
   */
  private commitPeriodically(): void {
    this.timer ??= setInterval(() => {
      if ((this.handledPosition ?? 0) > (this.committed ?? 0)) void this.commit().catch(() => {});
    }, this.settling.retryCommitMs);
  }

  private settleLater(position: number, settled: Promise<unknown>): void {
    this.commitPeriodically();
    this.unsettled.add(position);
    settled.then(
      () => {
        this.unsettled.delete(position);
        this.settleWaiters.shift()?.();
      },
      (error: unknown) => {
        // It stays unsettled, holding the checkpoint back: the session fails and the next one delivers it again.
        this.settleFailure ??= { error, position };
        this.settleWaiters.shift()?.();
      },
    );
  }

  private async untilRoomToSettle(context: SessionContext): Promise<void> {
    while (this.unsettled.size >= this.settling.maxUnsettled && !context.stopping()) {
      await new Promise<void>((resolve) => this.settleWaiters.push(resolve));
    }
  }
}

/**
 * Groups a subscription's events into batches of what is already available: the first event is awaited,
 * then more are taken as long as they arrive without yielding to the event loop. When the subscription fails
 * in the middle of a batch, the events it did deliver are yielded first and the failure comes at the next
 * pull: a follower whose subscription keeps breaking still commits what it read, and makes progress. With
 * `idleMs`, IDLE is yielded when no event came for that long.
 */
export function batches(source: AsyncIterable<RecordedEvent>, maxSize: number): AsyncGenerator<RecordedEvent[]>;
export function batches(
  source: AsyncIterable<RecordedEvent>,
  maxSize: number,
  idleMs?: number,
): AsyncGenerator<RecordedEvent[] | typeof IDLE>;
export async function* batches(
  source: AsyncIterable<RecordedEvent>,
  maxSize: number,
  idleMs?: number,
): AsyncGenerator<RecordedEvent[] | typeof IDLE> {
  const iterator = source[Symbol.asyncIterator]();
  const nextTick = Symbol('next tick');
  let pending = iterator.next();
  for (;;) {
    const first = idleMs === undefined ? await pending : await raceTimer(pending, idleMs);
    if (first === IDLE) {
      yield IDLE;
      continue;
    }
    if (first.done) return;
    const batch = [first.value];
    pending = iterator.next();
    // One deadline for the whole batch, cleared when the batch is cut: a timer left waiting per event would hold
    // its event (through the race) until the event loop turns, which a catch-up in microtasks may not do for long.
    let timer: NodeJS.Immediate | undefined;
    const deadline = new Promise<typeof nextTick>((resolve) => (timer = setImmediate(() => resolve(nextTick))));
    let failure: { error: unknown } | undefined;
    let ended = false;
    while (batch.length < maxSize) {
      let next: IteratorResult<RecordedEvent> | typeof nextTick;
      try {
        next = await Promise.race([pending, deadline]);
      } catch (error) {
        failure = { error };
        break;
      }
      if (next === nextTick) break;
      if (next.done) {
        ended = true;
        break;
      }
      batch.push(next.value);
      pending = iterator.next();
    }
    clearImmediate(timer);
    yield batch;
    if (failure) throw failure.error;
    if (ended) return;
  }
}

async function raceTimer<T>(next: Promise<T>, ms: number): Promise<T | typeof IDLE> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      next,
      new Promise<typeof IDLE>((resolve) => (timer = setTimeout(() => resolve(IDLE), ms))),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

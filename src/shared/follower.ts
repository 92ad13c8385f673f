/**
 * The one follower of the event stream. Every piece of background work that follows the store (the
 * projections, the webhook outbox, key revocations, the executor, the API-key directory, the audit sealer) is
 * a follower with its own handler; the follower owns the rest, once:
 *
 *  - a session reads the checkpoint, subscribes after it, and hands the handler the events in batches of what
 *    has already arrived (a burst costs one commit, not one per event);
 *  - the checkpoint moves only over what is handled, and contiguously: an event the handler settles later
 *    (`settleLater`, the executor's operations) holds it back until it is settled, whatever came after it;
 *  - where the checkpoint lives is a policy: with the handler's writes in one atomic commit and a fence
 *    against a second writer (exclusive), forward only among processes that share it (shared), or in memory;
 *  - supervision: a failed session is logged once, retried with the one backoff and resumed from the
 *    checkpoint (nothing skipped, nothing lost); `consumer.status()` is the health signal /health reads.
 *
 * The dispatcher of webhook deliveries follows the delivery queues, not the stream: it uses the same
 * supervision (`supervise`) and nothing else of this.
 */
import type { EventFilter, EventStore, RecordedEvent } from '../ports/event-store.ts';
import { CheckpointConflictError, type ReadStore, type Write } from '../ports/read-store.ts';
import {
  SupervisedConsumer,
  type ConsumerLogger,
  type SessionContext,
  type SupervisedConsumerOptions,
} from './supervised-consumer.ts';

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

/** Where a follower's checkpoint lives: every event at or below it has been handled. */
export interface CheckpointPolicy {
  /** Read at the start of every session: where to resume (null: from the first event). */
  load(): Promise<number | null>;
  /**
   * Makes `position` durable, with the handler's writes when the checkpoint lives beside them. A policy that
   * finds someone else moved the checkpoint throws CheckpointConflictError: the follower resumes from theirs.
   */
  commit(position: number, writes: Write[]): Promise<void>;
}

/**
 * The checkpoint of a read model with one writer: committed atomically with the model's writes, fenced by the
 * checkpoint it expects (and, for a projection, the generation a rebuild raises), so that a rebuild swapped in
 * meanwhile, or a second runner of the same model, makes this one resume from the new checkpoint instead of
 * writing stale documents.
 */
export function exclusiveCheckpoint(
  readStore: ReadStore,
  name: string,
  options: { fencedByGeneration?: boolean } = {},
): CheckpointPolicy {
  let expected: number | null = null;
  let generation: number | undefined;
  return {
    async load() {
      // The generation first: a promote between the two reads then fails our first commit, never the reverse.
      if (options.fencedByGeneration) generation = await readStore.getGeneration(name);
      expected = await readStore.getCheckpoint(name);
      return expected;
    },
    async commit(position, writes) {
      await readStore.commit(writes, {
        projection: name,
        position,
        expected,
        ...(generation === undefined ? {} : { generation }),
      });
      expected = position;
    },
  };
}

/**
 * A checkpoint that several processes share (the executors', key revocations'): it only moves forward. Another
 * process may be further already (nothing is written) or move it at the same moment (compare-and-set, again).
 * Handlers of a shared checkpoint write nothing beside it.
 */
export function sharedCheckpoint(readStore: ReadStore, name: string): CheckpointPolicy {
  // The checkpoint as this process last read or wrote it: a commit is then one compare-and-set, and the
  // checkpoint is read again only when another process moved it meanwhile (undefined: read it first).
  let known: number | null | undefined;
  return {
    async load() {
      known = await readStore.getCheckpoint(name);
      return known;
    },
    async commit(position, writes) {
      if (writes.length > 0) throw new Error(`the shared checkpoint ${name} commits no writes`);
      for (let attempt = 0; attempt < 3; attempt++) {
        known ??= await readStore.getCheckpoint(name);
        if (known !== null && known >= position) return;
        const expected: number | null = known;
        known = undefined; // until the commit is known to have moved it
        try {
          await readStore.commit([], { projection: name, position, expected });
          known = position;
          return;
        } catch (error) {
          if (!(error instanceof CheckpointConflictError)) throw error;
        }
      }
    },
  };
}

/** A checkpoint kept by the handler's own state (the API-key directory in memory, the sealer's last seal). */
export function checkpointIn(load: () => Promise<number | null> | number | null): CheckpointPolicy {
  return { load: async () => load(), commit: async () => {} };
}

/** What a handler may ask of its follower while it handles a batch. */
export interface BatchContext {
  stopping(): boolean;
  /** The event at `position` is handled only once `settled` resolves: the checkpoint does not pass it before. */
  settleLater(position: number, settled: Promise<unknown>): void;
  /**
   * The batch's checkpoint is committed whatever `commitEvery` says (the handler acted: a restart should not act
   * again).
   */
  commitNow(): void;
}

/**
 * Thrown by a handler (or a checkpoint policy) when the ground moved under it, e.g. another sealer sealed
 * first: the session ends without counting a failure and a new one resumes from the checkpoint.
 */
export class Resubscribe extends Error {
  constructor(reason: string) {
    super(reason);
    this.name = 'Resubscribe';
  }
}

export interface FollowerOptions {
  name: string;
  eventStore: EventStore;
  filter?: EventFilter;
  checkpoint: CheckpointPolicy;
  /** Handles a batch of events, in position order; returns the writes to commit with the checkpoint. */
  handle(batch: RecordedEvent[], context: BatchContext): Promise<Write[] | void>;
  /** Told after the handler's writes are committed (the outbox wakes the dispatcher). */
  onCommitted?(writes: Write[]): void;
  /** Runs at the start of every session, before the checkpoint is read (a handler reloads its state). */
  prepare?(): Promise<void>;
  /** Most events per batch. Default 1000. */
  batchSize?: number;
  /**
   * A batch that writes nothing commits its checkpoint only when this many positions or ms have passed since the
   * last commit (a replay after a restart is then harmless and short). Default: every batch commits.
   */
  commitEvery?: { positions: number; ms: number };
  /** At most this many events waiting to settle (settleLater): the follower reads no more until one does. */
  maxUnsettled?: number;
  /**
   * While events wait to settle (or a best-effort commit failed), the checkpoint is committed this often. Default
   * 200 ms.
   */
  settledCommitMs?: number;
  /**
   * For a handler whose work does not depend on the checkpoint's store (the executor needs the event store and
   * the ledger only), with a checkpoint that commits no writes: a checkpoint that cannot be committed does not
   * end the session (it is tried again every settledCommitMs; the failure is logged once per streak), and a
   * resubscription resumes from what this process has handled instead of reading the checkpoint again.
   */
  checkpointBestEffort?: boolean;
  /**
   * With no checkpoint and none of the followed events in the store yet, a session first commits the head as
   * the checkpoint (a projection: the model is built and has nothing to show). Without it a model whose first
   * event arrives would look "never built" (no checkpoint while its events exist) until it is applied.
   */
  checkpointEmptyHistory?: boolean;
  /** Called when no event came for `afterMs` (the sealer seals what it has). */
  idle?: { afterMs: number; run(): Promise<void> };
  logger: ConsumerLogger;
  supervision?: Supervision;
}

const IDLE = Symbol('idle');

export class Follower {
  private readonly options: FollowerOptions;
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
  private committing: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  /** The commit commitEvery held back, due at its time (commitLater). */
  private deferred: NodeJS.Timeout | undefined;
  private sessions = 0;
  /** Commits failed in a row (a best-effort checkpoint), for logging once per streak. */
  private commitFailures = 0;

  constructor(options: FollowerOptions) {
    this.options = options;
    this.consumer = supervise(options.name, options.logger, (context) => this.session(context), options.supervision);
  }

  get name(): string {
    return this.options.name;
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
    // Handled but not committed yet (commitEvery holds back a checkpoint that writes nothing): someone waits, commit
    // now.
    if ((this.handledPosition ?? -1) >= position && this.consumer.status().state !== 'stopped')
      void this.commitOrLog().catch(() => {});
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
  }

  /** Stops following; what is handled is committed (a failure here only means a harmless replay at the next start). */
  async stop(): Promise<void> {
    const stopped = this.consumer.stop(); // marks the session stopping at once
    for (const waiter of this.commitWaiters) waiter.resolve(false);
    this.settleWaiters.splice(0).forEach((wake) => wake()); // a session waiting for room to settle sees it
    await stopped;
    clearInterval(this.timer);
    this.timer = undefined;
    clearTimeout(this.deferred);
    this.deferred = undefined;
    await this.commitHandled().catch((error: unknown) =>
      this.options.logger.warn(
        { consumer: this.options.name, err: error },
        'checkpoint not saved at stop; the next start replays from the last one',
      ),
    );
  }

  private async session(context: SessionContext): Promise<void> {
    // After a failed session, a best-effort checkpoint's follower resumes from what is handled here (a failed event
    // included).
    let resume = this.options.checkpointBestEffort && this.sessions++ > 0 ? this.handledPosition : null;
    while (!context.stopping()) {
      if (this.settleFailure) {
        this.unsettled.delete(this.settleFailure.position); // delivered again from the checkpoint below
        this.settleFailure = undefined;
      }
      await this.options.prepare?.();
      if (resume === null) {
        this.committed = await this.options.checkpoint.load();
        this.committedAt = Date.now();
        // Someone else committed first (a second runner, a promote): read their checkpoint.
        if (this.committed === null && this.options.checkpointEmptyHistory && !(await this.checkpointEmptyHistory()))
          continue;
      }
      this.delivered = resume ?? this.committed;
      resume = null; // a next turn (Resubscribe: the ground moved) reads the checkpoint
      if (this.delivered !== null) context.progress(this.delivered);
      const subscription = context.own(
        this.options.eventStore.subscribeToAll({
          from: this.delivered ?? 'start',
          ...(this.options.filter ? { filter: this.options.filter } : {}),
        }),
      );
      try {
        await this.consume(subscription, context);
        return;
      } catch (error) {
        if (!(error instanceof Resubscribe || error instanceof CheckpointConflictError)) throw error;
        // Someone else moved the ground (a rebuild swapped in, another sealer sealed): resume from the checkpoint.
      } finally {
        await subscription.stop();
      }
    }
  }

  /**
   * Commits the head as the checkpoint when no followed event is at or below it; false when another writer moved it
   * first.
   */
  private async checkpointEmptyHistory(): Promise<boolean> {
    const { eventStore, filter } = this.options;
    const head = await eventStore.headPosition();
    const [first] = await eventStore.readAll({ toPosition: head, maxCount: 1, ...(filter ? { filter } : {}) });
    if (first) return true;
    try {
      await this.options.checkpoint.commit(head, []);
    } catch (error) {
      if (error instanceof CheckpointConflictError) return false;
      throw error;
    }
    this.committed = head;
    this.committedAt = Date.now();
    return true;
  }

  private async consume(subscription: AsyncIterable<RecordedEvent>, context: SessionContext): Promise<void> {
    let commitNow: boolean; // cleared before each batch
    const batchContext: BatchContext = {
      stopping: context.stopping,
      settleLater: (position, settled) => this.settleLater(position, settled),
      commitNow: () => (commitNow = true),
    };
    const idle = this.options.idle;
    for await (const batch of batches(subscription, this.options.batchSize ?? 1000, idle?.afterMs)) {
      if (batch === IDLE) {
        await idle!.run();
        continue;
      }
      if (this.settleFailure !== undefined) throw this.settleFailure.error;
      commitNow = false;
      const writes = (await this.options.handle(batch, batchContext)) ?? [];
      const before = this.delivered;
      this.delivered = batch.at(-1)!.position;
      try {
        if (writes.length > 0 || commitNow || this.commitDue()) await this.commitOrLog(writes);
        else this.commitLater();
      } catch (error) {
        // A batch whose writes were not committed is not handled: a checkpoint saved before the next session
        // (stop() saves what is handled) must not pass it, or its writes would be lost for good.
        if (writes.length > 0) this.delivered = before;
        throw error;
      }
      if (writes.length > 0) this.options.onCommitted?.(writes);
      context.progress(this.handledPosition ?? 0);
      await this.untilRoomToSettle(context);
    }
  }

  /** A checkpoint held back by commitEvery is committed once its time has come, even if no batch comes to do it. */
  private commitLater(): void {
    const every = this.options.commitEvery;
    if (!every || this.deferred) return;
    this.deferred = setTimeout(() => {
      this.deferred = undefined;
      // A failure surfaces at the session's next commit.
      if ((this.handledPosition ?? 0) > (this.committed ?? 0)) void this.commitOrLog().catch(() => {});
    }, every.ms);
    this.deferred.unref();
  }

  private commitDue(): boolean {
    const every = this.options.commitEvery;
    if (!every || this.commitWaiters.size > 0) return true;
    return (
      (this.handledPosition ?? 0) - (this.committed ?? 0) >= every.positions ||
      Date.now() - this.committedAt >= every.ms
    );
  }

  /**
   * Commits; a best-effort checkpoint's failure is logged once per streak instead of thrown (the next commit tries
   * again).
   */
  private async commitOrLog(writes: Write[] = []): Promise<void> {
    try {
      await this.commitHandled(writes);
      if (this.commitFailures > 0)
        this.options.logger.info(
          { consumer: this.options.name, failures: this.commitFailures },
          'checkpoint committed again',
        );
      this.commitFailures = 0;
    } catch (error) {
      if (!this.options.checkpointBestEffort) throw error;
      if (this.commitFailures++ === 0)
        this.options.logger.warn({ consumer: this.options.name, err: error }, 'checkpoint not committed; trying again');
      this.commitPeriodically();
    }
  }

  /** Commits the handled position (and the writes that go with it): one commit at a time. */
  private async commitHandled(writes: Write[] = []): Promise<void> {
    while (this.committing) await this.committing.catch(() => {});
    const position = this.handledPosition;
    if (position === null || (writes.length === 0 && position <= (this.committed ?? -1))) return;
    this.committing = this.options.checkpoint.commit(position, writes).then(() => {
      this.committed = position;
      this.committedAt = Date.now();
      for (const waiter of this.commitWaiters) if (waiter.position <= position) waiter.resolve(true);
    });
    try {
      await this.committing;
    } finally {
      this.committing = undefined;
    }
  }

  /**
   * From now on, what is handled beyond the checkpoint is committed every settledCommitMs too: events that settle
   * between batches, a best-effort commit that failed. A failure surfaces at the session's next commit.
   */
  private commitPeriodically(): void {
    this.timer ??= setInterval(() => {
      if ((this.handledPosition ?? 0) > (this.committed ?? 0)) void this.commitOrLog().catch(() => {});
    }, this.options.settledCommitMs ?? 200);
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
    const max = this.options.maxUnsettled;
    while (max !== undefined && this.unsettled.size >= max && !context.stopping()) {
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

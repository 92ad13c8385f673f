/**
 * Fault injection: decorators on the three storage ports (event store, read store, ledger) that make calls
 * slow, hang or fail the way a real store does when its server is overloaded or unreachable, so that the
 * retries, recoveries and health checks can be exercised on the embedded stores (tests, soak runs).
 * Off unless configured (src/config.ts, FAULT_*); never for production.
 *
 * Every injected failure is the port's own transient error (EventStoreUnavailableError,
 * ReadStoreUnavailableError, LedgerUnavailableError) with a message ending in "(injected)", so callers
 * cannot tell it from a real one. Writes fail on either side of the real call: before it (nothing happened)
 * or after it (it happened, but the caller only sees the error, as after a timeout).
 */
import {
  EventStoreUnavailableError,
  type EventStore,
  type RecordedEvent,
  type Subscription,
} from '../ports/event-store.ts';
import { LedgerUnavailableError, type Ledger } from '../ports/ledger.ts';
import { ReadStoreUnavailableError, type Document, type FindQuery, type ReadStore } from '../ports/read-store.ts';

export interface FaultPlan {
  /** Share (0..1) of calls that fail with the transient error. */
  errorRate: number;
  /** Each call first waits a uniform random delay in [0, latencyMs]. */
  latencyMs: number;
  /** Share (0..1) of calls that hang: they wait hangMs, then fail with the transient error. */
  hangRate: number;
  hangMs: number;
  /** The source of randomness, in [0, 1); Math.random by default. Tests pass a seeded one. */
  random?: () => number;
}

/** How many faults a decorator injected; it increments the fields of the object it is given. */
export interface FaultCounters {
  /** Calls failed by an injected error (hangs not included: they are counted in `hangs`). */
  errors: number;
  /** Calls that hung, then failed. */
  hangs: number;
  /** Calls delayed by the latency. */
  delayedCalls: number;
}

export const newFaultCounters = (): FaultCounters => ({ errors: 0, hangs: 0, delayedCalls: 0 });

/** A plan that injects nothing: its decorators return the store itself. */
export const NO_FAULTS: FaultPlan = { errorRate: 0, latencyMs: 0, hangRate: 0, hangMs: 0 };

export function isActive(plan: FaultPlan): boolean {
  return plan.errorRate > 0 || plan.latencyMs > 0 || plan.hangRate > 0;
}

/** Whether an injected error hits before the real call, or possibly after it (writes: outcome unknown). */
type Side = 'before' | 'before-or-after';

/** The decision logic shared by the three decorators: one instance per decorated store. */
class Injector {
  private readonly plan: FaultPlan;
  private readonly counters: FaultCounters;
  private readonly unavailable: (message: string) => Error;
  private readonly random: () => number;

  constructor(plan: FaultPlan, counters: FaultCounters, unavailable: (message: string) => Error) {
    this.plan = plan;
    this.counters = counters;
    this.unavailable = unavailable;
    for (const rate of ['errorRate', 'hangRate'] as const) {
      if (!(plan[rate] >= 0 && plan[rate] <= 1))
        throw new RangeError(`fault plan: ${rate} must be within 0..1, got ${plan[rate]}`);
    }
    if (!(plan.latencyMs >= 0 && plan.hangMs >= 0))
      throw new RangeError('fault plan: latencyMs and hangMs must be >= 0');
    this.random = plan.random ?? Math.random;
  }

  /** Runs one call of the port under the plan. Randomness is drawn in a fixed order: hang, latency, error, side. */
  async call<T>(name: string, run: () => Promise<T>, side: Side = 'before'): Promise<T> {
    if (this.plan.hangRate > 0 && this.random() < this.plan.hangRate) {
      this.counters.hangs += 1;
      await sleep(this.plan.hangMs);
      throw this.unavailable(`${name}: no answer after ${this.plan.hangMs} ms (injected)`);
    }
    await this.delay(this.plan.latencyMs);
    if (!this.fails()) return run();
    if (side === 'before-or-after' && this.random() < 0.5) {
      // The real call runs (and may fail for real, which the caller then sees); only its answer is lost.
      await run();
      throw this.unavailable(`${name}: connection lost before the answer (injected)`);
    }
    throw this.unavailable(`${name}: unavailable (injected)`);
  }

  /** Draws whether an error is injected now, and counts it. */
  fails(): boolean {
    if (!(this.plan.errorRate > 0 && this.random() < this.plan.errorRate)) return false;
    this.counters.errors += 1;
    return true;
  }

  /** Waits a uniform random delay in [0, maxMs]; no timer at all when maxMs is 0 (keeps fast paths fast). */
  async delay(maxMs: number): Promise<void> {
    if (maxMs <= 0) return;
    this.counters.delayedCalls += 1;
    await sleep(this.random() * maxMs);
  }

  error(message: string): Error {
    return this.unavailable(message);
  }
}

// Timers are not unref'd: a CLI awaiting a delayed call must not exit with the call unfinished.
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export function withEventStoreFaults(
  store: EventStore,
  plan: FaultPlan,
  counters: FaultCounters = newFaultCounters(),
): EventStore {
  if (!isActive(plan)) return store;
  const faults = new Injector(plan, counters, (message) => new EventStoreUnavailableError(message));
  return {
    append: (stream, events, expectedRevision) =>
      faults.call('append', () => store.append(stream, events, expectedRevision), 'before-or-after'),
    appendMulti: (requests) => faults.call('appendMulti', () => store.appendMulti(requests), 'before-or-after'),
    readStream: (stream, options) => faults.call('readStream', () => store.readStream(stream, options)),
    readAll: (options) => faults.call('readAll', () => store.readAll(options)),
    headPosition: () => faults.call('headPosition', () => store.headPosition()),
    subscribeToAll: (options) => new FaultySubscription(store.subscribeToAll(options), faults, plan.latencyMs / 10),
    close: () => store.close(),
  };
}

/**
 * A subscription that breaks at the error rate: the failing next() rejects, the inner subscription is
 * stopped, and every later next() is done, as with a real subscription whose connection dropped (the
 * consumer resubscribes from its checkpoint). Each next() is delayed by at most a tenth of the latency: a
 * real subscription streams, it does not pay a round trip per event.
 */
class FaultySubscription implements Subscription, AsyncIterableIterator<RecordedEvent> {
  private readonly inner: Subscription;
  private readonly faults: Injector;
  private readonly latencyMs: number;
  private readonly iterator: AsyncIterator<RecordedEvent>;
  private broken = false;
  /** next() calls are chained: with random delays, concurrent ones could otherwise reach the inner one out of order. */
  private tail: Promise<unknown> = Promise.resolve();

  constructor(inner: Subscription, faults: Injector, latencyMs: number) {
    this.inner = inner;
    this.faults = faults;
    this.latencyMs = latencyMs;
    this.iterator = inner[Symbol.asyncIterator]();
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  next(): Promise<IteratorResult<RecordedEvent>> {
    const result = this.tail.then(() => this.pull());
    this.tail = result.catch(() => undefined);
    return result;
  }

  async return(): Promise<IteratorResult<RecordedEvent>> {
    await this.stop();
    return { done: true, value: undefined };
  }

  onCaughtUp(listener: () => void): void {
    this.inner.onCaughtUp?.(() => {
      if (!this.broken) listener();
    });
  }

  async stop(): Promise<void> {
    this.broken = true;
    await this.inner.stop();
  }

  private async pull(): Promise<IteratorResult<RecordedEvent>> {
    if (this.broken) return { done: true, value: undefined };
    await this.faults.delay(this.latencyMs);
    if (this.faults.fails()) {
      await this.stop();
      throw this.faults.error('subscription dropped (injected)');
    }
    return this.iterator.next();
  }
}

export function withReadStoreFaults(
  store: ReadStore,
  plan: FaultPlan,
  counters: FaultCounters = newFaultCounters(),
): ReadStore {
  if (!isActive(plan)) return store;
  const faults = new Injector(plan, counters, (message) => new ReadStoreUnavailableError(message));
  return {
    defineCollections: (definitions) => store.defineCollections(definitions),
    get: <T extends Document>(collection: string, id: string) => faults.call('get', () => store.get<T>(collection, id)),
    find: <T extends Document>(collection: string, query?: FindQuery) =>
      faults.call('find', () => store.find<T>(collection, query)),
    findText: <T extends Document>(collection: string, query: FindQuery, field: string) =>
      faults.call('findText', () => store.findText<T>(collection, query, field)),
    count: (collection, query) => faults.call('count', () => store.count(collection, query)),
    commit: (writes, checkpoint) => faults.call('commit', () => store.commit(writes, checkpoint), 'before-or-after'),
    getMany: <T extends Document>(collection: string, ids: string[]) =>
      faults.call('getMany', () => store.getMany<T>(collection, ids)),
    getCheckpoint: (projection) => faults.call('getCheckpoint', () => store.getCheckpoint(projection)),
    getGeneration: (projection) => faults.call('getGeneration', () => store.getGeneration(projection)),
    promote: (source, target, checkpoints) =>
      faults.call('promote', () => store.promote(source, target, checkpoints), 'before-or-after'),
    dropCollection: (name) => faults.call('dropCollection', () => store.dropCollection(name)),
    incrementCounter: (collection, id, change) =>
      faults.call('incrementCounter', () => store.incrementCounter(collection, id, change), 'before-or-after'),
    take: <T extends Document>(collection: string, id: string) =>
      faults.call('take', () => store.take<T>(collection, id), 'before-or-after'),
    close: () => store.close(),
  };
}

/**
 * An "after" failure of submit is a transaction the ledger executed unbeknown to the caller: the executor must find it
 * by operation id.
 */
export function withLedgerFaults(
  ledger: Ledger,
  plan: FaultPlan,
  counters: FaultCounters = newFaultCounters(),
): Ledger {
  if (!isActive(plan)) return ledger;
  const faults = new Injector(plan, counters, (message) => new LedgerUnavailableError(message));
  return {
    submit: (transfer) => faults.call('submit', () => ledger.submit(transfer), 'before-or-after'),
    // A void lost after it committed is retried by the executor: voiding is idempotent.
    void: (operationID) => faults.call('void', () => ledger.void(operationID), 'before-or-after'),
    fateOf: (operationID) => faults.call('fateOf', () => ledger.fateOf(operationID)),
    findByOperationID: (operationID) => faults.call('findByOperationID', () => ledger.findByOperationID(operationID)),
    balance: (wallet) => faults.call('balance', () => ledger.balance(wallet)),
    transactions: (options) => faults.call('transactions', () => ledger.transactions(options)),
    close: () => ledger.close(),
  };
}

import type { EventFilter, EventStore } from './ports/event-store.ts';
import { EventStoreUnavailableError } from './ports/event-store.ts';
import { ReadStoreUnavailableError } from './ports/read-store.ts';
import { StoreCorruptedError } from './ports/store-corrupted.ts';
import { describeError } from './shared/supervised-consumer.ts';
import type { ConsumerStatus, SupervisedConsumer } from './shared/follower.ts';

/** What health and readiness read of a consumer: one of this thread's, or one a followers thread reports on. */
export type ConsumerView = Pick<SupervisedConsumer, 'name' | 'status' | 'downForMs'>;

/** A supervised consumer of this process, with the events it follows (to measure how far behind it is). */
export interface WatchedConsumer<C extends ConsumerView = SupervisedConsumer> {
  readonly consumer: C;
  readonly filter?: EventFilter | undefined;
  /**
   * For a consumer that does not read the event log itself but works on what another one queued (the webhook
   * dispatcher sends what the outbox queued): its lag is that consumer's.
   */
  lagOf?: ConsumerView;
}

export interface ConsumerReport extends ConsumerStatus {
  /** Matching events after its position, counted up to a cap (null when the store could not be read). */
  lagEvents: number | null;
  /** Age of the oldest matching event it has not applied yet: 0 when caught up (null when unknown). */
  lagSeconds: number | null;
}

/**
 * Liveness: the process is alive unless one of its consumers has been unable to run for longer than the
 * grace. It reads no store, so it answers at once even while a store is locked or down.
 */
export function liveness(
  watched: ReadonlyArray<WatchedConsumer<ConsumerView>>,
  graceMs: number,
  corruption?: CorruptionWatch,
  writes?: WriteWatch,
): {
  alive: boolean;
  failing: Array<{ consumer: string; downForMs: number; lastError: string | null }>;
  corrupted?: CorruptionReport;
  writesFailing?: WritesFailingReport;
} {
  const failing = watched
    .map(({ consumer }) => ({
      consumer: consumer.name,
      downForMs: consumer.downForMs(),
      lastError: consumer.status().lastError,
    }))
    .filter((entry) => entry.downForMs > graceMs);
  const corrupted = corruption?.report();
  // A corrupted store fails at once: no grace, since waiting does not mend it.
  if (corrupted) return { alive: false, failing, corrupted };
  // Writes refused for longer than the grace (a read-only database) count as a consumer that cannot run.
  const writesFailing = writes?.report();
  if (writesFailing && writesFailing.downForMs > graceMs) return { alive: false, failing, writesFailing };
  return { alive: failing.length === 0, failing };
}

export interface WritesFailingReport {
  /** The store whose writes fail (`events` or `read models`): each has its own streak. */
  store: string;
  since: string;
  downForMs: number;
  failures: number;
  lastError: string;
}

/**
 * Whether this process's writes go through: every append to the event store and every write to the read store
 * (a create, an approval, the executor's outcomes, a projection's commit) tells it how it ended. A store that
 * answers reads but refuses writes (a read-only database, a demoted primary, a standby) leaves the consumers
 * idle and healthy, so it is seen here only. Writes fail from the first write refused as unavailable until
 * one succeeds on the same store (a lock on the events table leaves the read models' writes going through);
 * /ready answers 503 meanwhile, /health once it lasts longer than its grace. A streak with no write tried for
 * `staleAfterMs` is forgotten: a process taken out of the load balancer gets traffic again, which tells.
 */
export class WriteWatch {
  private readonly now: () => number;
  private readonly staleAfterMs: number;
  private readonly streaks = new Map<string, { since: number; last: number; failures: number; lastError: string }>();

  constructor(options: { now?: () => number; staleAfterMs?: number } = {}) {
    this.now = options.now ?? Date.now;
    this.staleAfterMs = options.staleAfterMs ?? 10_000;
  }

  succeeded(store: string): void {
    this.streaks.delete(store);
  }

  /** Only the stores' unavailable errors count: a refusal or a conflict is the store answering. */
  failed(store: string, error: unknown): void {
    if (!(error instanceof EventStoreUnavailableError || error instanceof ReadStoreUnavailableError)) return;
    const now = this.now();
    const previous = this.streaks.get(store);
    const current = previous && now - previous.last <= this.staleAfterMs ? previous : undefined;
    this.streaks.set(store, {
      since: current?.since ?? now,
      last: now,
      failures: (current?.failures ?? 0) + 1,
      lastError: describeError(error),
    });
  }

  /** The longest streak of writes failing now, or null. */
  report(): WritesFailingReport | null {
    const now = this.now();
    let longest: WritesFailingReport | null = null;
    for (const [store, streak] of this.streaks) {
      if (now - streak.last > this.staleAfterMs) continue;
      if (longest && longest.downForMs >= now - streak.since) continue;
      longest = {
        store,
        since: new Date(streak.since).toISOString(),
        downForMs: now - streak.since,
        failures: streak.failures,
        lastError: streak.lastError,
      };
    }
    return longest;
  }

  /**
   * The store (named `name` in reports), with the outcome of each call of `writes` told to this watch, and the
   * failures of `reads`: the reads a write needs first (a command's stream reads, held by a lock on the table) fail
   * the writes too, but one that succeeds says nothing of them (a read-only database answers reads).
   */
  watch<T extends object>(
    name: string,
    store: T,
    methods: { writes: ReadonlyArray<keyof T & string>; reads?: ReadonlyArray<keyof T & string> },
  ): T {
    const writes = new Set<string | symbol>(methods.writes);
    const reads = new Set<string | symbol>(methods.reads ?? []);
    const succeeded = () => this.succeeded(name);
    const failed = (error: unknown) => this.failed(name, error);
    return new Proxy(store, {
      get: wrapOnce((object, value, property) => {
        if (!(writes.has(property) || reads.has(property))) return value;
        const onSuccess = writes.has(property) ? succeeded : noop;
        return (...args: unknown[]) => {
          const result = value.apply(object, args);
          if (result instanceof Promise) result.then(onSuccess, failed);
          return result;
        };
      }),
    });
  }
}

export interface CorruptionReport {
  store: string;
  reason: string;
  since: string;
}

/**
 * Remembers the first StoreCorruptedError any call on a watched store met, for good: from then on the process
 * refuses to serve (/health fails with "corrupted", the API answers 503 /problems/store-corrupted), whichever
 * request or consumer met it, until an operator restores the store and restarts the process.
 */
export class CorruptionWatch {
  private readonly clock: () => Date;
  private readonly onFound: (error: StoreCorruptedError) => void;
  private found: { error: StoreCorruptedError; since: Date } | null = null;

  constructor(clock: () => Date, onFound: (error: StoreCorruptedError) => void = () => {}) {
    this.clock = clock;
    this.onFound = onFound;
  }

  get error(): StoreCorruptedError | null {
    return this.found?.error ?? null;
  }

  report(): CorruptionReport | null {
    return (
      this.found && {
        store: this.found.error.store,
        reason: this.found.error.reason,
        since: this.found.since.toISOString(),
      }
    );
  }

  record(error: unknown): void {
    if (!(error instanceof StoreCorruptedError) || this.found) return;
    this.found = { error, since: this.clock() };
    this.onFound(error);
  }

  /** The store, with every call's failure (and every subscription's) seen first by this watch. */
  watch<T extends object>(store: T): T {
    return observeFailures(store, (error) => this.record(error));
  }
}

/** A proxy whose methods report what they throw or reject with; a returned async iterable's failures too. */
function observeFailures<T extends object>(target: T, seen: (error: unknown) => void): T {
  const observe = (result: unknown): unknown => {
    if (result instanceof Promise)
      return result.catch((error: unknown) => {
        seen(error);
        throw error;
      });
    if (result !== null && typeof result === 'object' && Symbol.asyncIterator in result)
      return observeIterable(result as AsyncIterable<unknown> & object, seen);
    return result;
  };
  return new Proxy(target, {
    get: wrapOnce((object, value) => (...args: unknown[]) => {
      try {
        return observe(value.apply(object, args));
      } catch (error) {
        seen(error);
        throw error;
      }
    }),
  });
}

const noop = () => {};

type Method = (...args: unknown[]) => unknown;

/**
 * A proxy's `get` that wraps each method once, not once per read of it (a closure per call on every request's path):
 * the wrapper is kept per property, and made again only if the property now holds another function.
 */
function wrapOnce<T extends object>(
  wrap: (object: T, method: Method, property: string | symbol) => unknown,
): (object: T, property: string | symbol) => unknown {
  const wrapped = new Map<string | symbol, { method: Method; wrapper: unknown }>();
  return (object, property) => {
    const value: unknown = Reflect.get(object, property, object);
    if (typeof value !== 'function') return value;
    const known = wrapped.get(property);
    if (known?.method === value) return known.wrapper;
    const wrapper = wrap(object, value as Method, property);
    wrapped.set(property, { method: value as Method, wrapper });
    return wrapper;
  };
}

function observeIterable<I extends AsyncIterable<unknown> & object>(iterable: I, seen: (error: unknown) => void): I {
  return new Proxy(iterable, {
    get(object, property) {
      const value: unknown = Reflect.get(object, property, object);
      if (property !== Symbol.asyncIterator)
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(object) : value;
      return () => {
        const iterator = (value as () => AsyncIterator<unknown>).call(object);
        const next = (...args: [] | [unknown]) =>
          iterator.next(...args).catch((error: unknown) => {
            seen(error);
            throw error;
          });
        return {
          ...bindAll(iterator),
          next,
          [Symbol.asyncIterator]() {
            return this;
          },
        };
      };
    },
  });
}

/** An iterator's optional return/throw, bound to it. */
function bindAll(iterator: AsyncIterator<unknown>): Partial<AsyncIterator<unknown>> {
  return {
    ...(iterator.return ? { return: iterator.return.bind(iterator) } : {}),
    ...(iterator.throw ? { throw: iterator.throw.bind(iterator) } : {}),
  };
}

/** Each consumer's state and lag, for /ready and `projections status`. */
export async function consumerReports(
  eventStore: EventStore,
  watched: ReadonlyArray<WatchedConsumer<ConsumerView>>,
  now: Date,
  cap = 1000,
): Promise<ConsumerReport[]> {
  let head: number | null = null;
  try {
    head = await eventStore.headPosition();
  } catch {
    // Reported as unknown lag: the state and last error say why.
  }
  return Promise.all(
    watched.map(async ({ consumer, filter, lagOf }) => {
      const status = consumer.status();
      if (head === null) return { ...status, lagEvents: null, lagSeconds: null };
      const position = (lagOf ?? consumer).status().position;
      try {
        const pending = await eventStore.readAll({
          fromPosition: (position ?? 0) + 1,
          toPosition: head,
          maxCount: cap,
          ...(filter ? { filter } : {}),
        });
        const oldest = pending[0];
        return {
          ...status,
          lagEvents: pending.length,
          lagSeconds: oldest ? Math.max(0, (now.getTime() - Date.parse(oldest.createdAt)) / 1000) : 0,
        };
      } catch {
        return { ...status, lagEvents: null, lagSeconds: null };
      }
    }),
  );
}

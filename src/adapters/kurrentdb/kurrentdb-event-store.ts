/**
 * The EventStore port on KurrentDB (formerly EventStoreDB), through its maintained Node client
 * @kurrent/kurrentdb-client (the successor of @eventstore/db-client, same API). The value mapping lives in
 * kurrentdb-mapping.ts (positions, revisions, filters, errors); this file makes the calls.
 *
 * - append: `appendToStream` with the expected revision as the client's stream state.
 * - appendMulti over several streams: `multiStreamAppend`, KurrentDB 25.1+, all or nothing. On an older server
 *   the client answers "unsupported" and the adapter refuses with KurrentDbRefusedError (permanent) saying
 *   which version is needed. It never falls back to appending stream by stream: the callers rely on appendMulti
 *   being atomic (an operation, its hold and its volume reservation are written together or not at all), and
 *   a partial write would break exactly the invariants it protects.
 * - Positions of an append come from its own answer where it has them. KurrentDB answers an append with its
 *   `CommitPosition`, the log position of the append's last event (the server's StorageChaser acknowledges an
 *   implicit transaction at its TransactionEnd record; appendToStream's `position` has commit = prepare = that).
 *   So a single-stream append costs no read, and in a multi-stream append (whose records are written in request
 *   order) the last stream's last event is at the answer's position. Only the other streams of a multi-stream
 *   append have their last event read back (the event at its new revision), retried a few times.
 * - Once an append has committed, it is never reported as failed (K1): a caller that sees an error may retry
 *   without an idempotency key and write it twice. When a read-back still fails, the result for that stream
 *   holds its exact revision and, as its position, the append's own position: the position of the append's last
 *   event, at or after that stream's last event and inside the same atomic commit (so "wait until position P is
 *   projected" still covers the stream's events). If not even that is known (an answer without a position), the
 *   position is 0.
 * - readStream of a missing stream is [] (the client's StreamNotFoundError).
 * - readAll, headPosition and subscriptions leave out system events (`$`-prefixed streams or types).
 * - Every read carries a `maxCount` and is read to its end (`drain`): client 1.3 reads go through a Rust bridge
 *   (@kurrent/bridge) whose iterator has no `return()`, and the client exposes no way to cancel a read, so
 *   leaving a `for await` early would leave the gRPC read open on the server until the bridge's stream is
 *   garbage-collected. readAll and headPosition page explicitly: each page is one bounded read, drained, and
 *   the next starts at the last event of the previous one (a real event position, which the server accepts).
 * - Every read has a deadline (`readDeadlineMs`, default 10 s, the client's own default deadline for its gRPC
 *   calls such as appends). Client 1.3 reads go through the native bridge, which takes no deadline and cannot be
 *   cancelled, so the adapter races each read against a timer and answers EventStoreUnavailableError when it
 *   expires (the read is abandoned; the bridge finishes or drops it). Without it one stalled read held the
 *   command pipeline's lock on its stream, and every later append to that stream in the process waited behind it.
 * - subscribeToAll: a catch-up subscription on the server (catch-up then live, in order, gap-free); the port's
 *   filter is sent as the server filter KurrentDB supports and applied again here.
 */
import {
  BACKWARDS,
  END,
  FORWARDS,
  KurrentDBClient,
  START,
  excludeSystemEvents,
  type AllStreamResolvedEvent,
  type AllStreamSubscription,
  type Position,
  type ReadPosition,
  type ResolvedEvent,
} from '@kurrent/kurrentdb-client';
import {
  type AppendResult,
  type EventFilter,
  type EventStore,
  EventStoreUnavailableError,
  type ExpectedRevision,
  type NewEvent,
  type ReadAllOptions,
  type ReadStreamOptions,
  type RecordedEvent,
  type StreamAppend,
  type SubscribeOptions,
  type Subscription,
} from '../../ports/event-store.ts';
import {
  isStreamNotFound,
  isSystemEvent,
  keep,
  matchesNothing,
  prepareAppends,
  readAllStart,
  subscriptionStart,
  toMultiStreamRequests,
  toPortPosition,
  toRecordedEvent,
  toLogPosition,
  toSafeNumber,
  toServerFilter,
  toStreamState,
  translateError,
} from './kurrentdb-mapping.ts';

export interface KurrentDbEventStoreOptions {
  /** e.g. `kurrentdb://localhost:2113?tls=false` (KURRENTDB_URL). */
  connectionString: string;
  /**
   * Most events one server read of $all asks for (its maxCount) when the caller's own maxCount does not bound
   * it lower; at least 2 (a page after the first repeats the previous page's last event). Default 500. The
   * contract suite runs with a tiny page as well, so that every read crosses page boundaries on a real server.
   */
  readPageSize?: number;
  /**
   * How long any one read (a stream, a page of $all, the head, a position read back) may take before it fails
   * with EventStoreUnavailableError; default 10,000 ms. A subscription is not a read: it stays open.
   */
  readDeadlineMs?: number;
}

/** See KurrentDbEventStoreOptions.readPageSize. */
export const DEFAULT_READ_PAGE_SIZE = 500;
/** See KurrentDbEventStoreOptions.readDeadlineMs. */
export const DEFAULT_READ_DEADLINE_MS = 10_000;
/** Pauses between the tries of reading back an appended event's position (K1): three tries in about 0.25 s. */
const READ_BACK_PAUSES_MS = [50, 200];
/** headPosition reads backwards in pages this small: the newest non-system event is almost always the first. */
const HEAD_PAGE_SIZE = 16;

/** Opens the adapter; the client connects on first use, so an unreachable server shows on the first call. */
export function openKurrentDbEventStore(options: KurrentDbEventStoreOptions): EventStore {
  const pageSize = options.readPageSize ?? DEFAULT_READ_PAGE_SIZE;
  if (!Number.isSafeInteger(pageSize) || pageSize < 2)
    throw new Error(`readPageSize must be an integer >= 2, got ${String(pageSize)}`);
  const readDeadlineMs = options.readDeadlineMs ?? DEFAULT_READ_DEADLINE_MS;
  if (!Number.isSafeInteger(readDeadlineMs) || readDeadlineMs < 1)
    throw new Error(`readDeadlineMs must be an integer >= 1, got ${String(readDeadlineMs)}`);
  return new KurrentDbEventStore(KurrentDBClient.connectionString(options.connectionString), pageSize, readDeadlineMs);
}

class KurrentDbEventStore implements EventStore {
  private readonly client: KurrentDBClient;
  private readonly pageSize: number;
  private readonly readDeadlineMs: number;
  private readonly subscriptions = new Set<KurrentSubscription>();
  private closing: Promise<void> | undefined;

  constructor(client: KurrentDBClient, pageSize: number, readDeadlineMs: number) {
    this.client = client;
    this.pageSize = pageSize;
    this.readDeadlineMs = readDeadlineMs;
  }

  async append(stream: string, events: NewEvent[], expectedRevision: ExpectedRevision): Promise<AppendResult> {
    const [result] = await this.appendMulti([{ stream, events, expectedRevision }]);
    return result!;
  }

  async appendMulti(requests: StreamAppend[]): Promise<AppendResult[]> {
    this.assertOpen();
    // Validation errors are the caller's and leave before anything is sent.
    const prepared = prepareAppends(requests);
    const multi = prepared.length > 1 ? toMultiStreamRequests(prepared) : undefined;
    const expected = new Map(prepared.map((request) => [request.stream, request.expectedRevision]));
    let revisions: Array<{ stream: string; revision: number }>;
    /** The log position of the append's last event, from the answer (see the file's comment). */
    let commit: bigint | undefined;
    try {
      if (multi) {
        const result = await this.client.multiStreamAppend(multi);
        commit = result.position;
        const byStream = new Map(result.responses.map((response) => [response.streamName, response.revision]));
        revisions = prepared.map(({ stream }) => {
          const revision = byStream.get(stream);
          if (revision === undefined)
            throw new EventStoreUnavailableError(
              `KurrentDB's answer to a multi-stream append did not name stream ${stream}`,
            );
          return { stream, revision: toSafeNumber(revision, 'revision') };
        });
      } else {
        const [one] = prepared;
        const result = await this.client.appendToStream(one!.stream, one!.events, {
          streamState: toStreamState(one!.expectedRevision),
        });
        commit = result.position?.commit;
        revisions = [{ stream: one!.stream, revision: toSafeNumber(result.nextExpectedRevision, 'revision') }];
      }
    } catch (error) {
      throw translateError(error, expected);
    }
    // The append has committed: nothing from here on may throw.
    const appended = commit === undefined ? null : portPositionOrNull(commit);
    return Promise.all(
      revisions.map(async ({ stream, revision }, i) => {
        const last = i === revisions.length - 1;
        const position = (last ? appended : null) ?? (await this.positionOf(stream, revision)) ?? appended ?? 0;
        return { nextExpectedRevision: revision, position };
      }),
    );
  }

  async readStream(stream: string, options: ReadStreamOptions = {}): Promise<RecordedEvent[]> {
    this.assertOpen();
    const backwards = options.direction === 'backwards';
    if (options.fromRevision !== undefined) checkNonNegativeInteger('fromRevision', options.fromRevision);
    if (options.maxCount !== undefined) checkNonNegativeInteger('maxCount', options.maxCount);
    if (options.maxCount === 0) return [];
    let read: ResolvedEvent[];
    try {
      // Unbounded when the caller gives no maxCount, but read to its end either way: nothing is left open.
      read = await this.read(
        `a read of stream ${stream}`,
        this.client.readStream(stream, {
          direction: backwards ? BACKWARDS : FORWARDS,
          fromRevision: options.fromRevision === undefined ? (backwards ? END : START) : BigInt(options.fromRevision),
          ...(options.maxCount === undefined ? {} : { maxCount: options.maxCount }),
        }),
      );
    } catch (error) {
      if (isStreamNotFound(error)) return [];
      throw translateError(error);
    }
    try {
      return read.map(toRecordedEvent).filter((event): event is RecordedEvent => event !== null);
    } catch (error) {
      throw translateError(error);
    }
  }

  async readAll(options: ReadAllOptions = {}): Promise<RecordedEvent[]> {
    this.assertOpen();
    const start = readAllStart(options.fromPosition ?? 0);
    const to = options.toPosition ?? Number.MAX_SAFE_INTEGER;
    checkNonNegativeInteger('toPosition', to);
    const maxCount = options.maxCount ?? Number.MAX_SAFE_INTEGER;
    checkNonNegativeInteger('maxCount', maxCount);
    if (maxCount === 0 || matchesNothing(options.filter) || to < start.minimum) return [];
    const filter = toServerFilter(options.filter);
    const lastLog = toLogPosition(to);
    const events: RecordedEvent[] = [];
    let from: ReadPosition = start.from;
    /**
     * The log position of the last event of the previous page: the next page starts with it again (reads are
     * inclusive).
     */
    let seen: bigint | null = null;
    try {
      for (;;) {
        // Events are dropped here (system events, the other half of the filter, the one repeated or before the
        // start), so a page cannot be sized to the answer exactly: one more than still wanted, at most a page.
        const pageSize = Math.min(this.pageSize, maxCount - events.length + 1);
        const page = await this.read(
          'a read of $all',
          this.client.readAll({ direction: FORWARDS, fromPosition: from, maxCount: pageSize, filter }),
        );
        let last: Position | undefined;
        for (const resolved of page) {
          const position = resolved.event?.position;
          if (position) {
            if (seen !== null && position.commit <= seen) continue;
            // Past the end, system events included: no further page is read for events the caller cannot get.
            if (position.commit > lastLog) return events;
            last = position;
          }
          const event = mapAllEvent(resolved);
          if (!event) continue;
          if (event.position > to) return events;
          if (!keep(event, options.filter, start.minimum)) continue;
          events.push(event);
          if (events.length >= maxCount) return events;
        }
        // A short page is the end of $all; a page that brought nothing new cannot happen with pages of 2 or more.
        if (page.length < pageSize || !last) return events;
        from = { commit: last.commit, prepare: last.prepare };
        seen = last.commit;
      }
    } catch (error) {
      throw translateError(error);
    }
  }

  async headPosition(): Promise<number> {
    this.assertOpen();
    const pageSize = Math.min(this.pageSize, HEAD_PAGE_SIZE);
    let from: ReadPosition = END;
    let seen: bigint | null = null;
    try {
      for (;;) {
        // The server leaves out system event types; an event of a system stream with an ordinary type is left out
        // here, and when a whole page is such events the read goes on backwards from the oldest of them.
        const page = await this.read(
          'a read of the head of $all',
          this.client.readAll({
            direction: BACKWARDS,
            fromPosition: from,
            maxCount: pageSize,
            filter: excludeSystemEvents(),
          }),
        );
        let last: Position | undefined;
        for (const resolved of page) {
          const position = resolved.event?.position;
          if (position) {
            if (seen !== null && position.commit >= seen) continue;
            last = position;
          }
          const event = mapAllEvent(resolved);
          if (event) return event.position;
        }
        if (page.length < pageSize || !last) return 0;
        from = { commit: last.commit, prepare: last.prepare };
        seen = last.commit;
      }
    } catch (error) {
      throw translateError(error);
    }
  }

  subscribeToAll(options: SubscribeOptions): Subscription {
    this.assertOpen();
    const start = subscriptionStart(options.from);
    const open = async () => {
      const from = start.from ?? (await this.positionBefore(start.includeFrom!));
      return this.client.subscribeToAll({ fromPosition: from, filter: toServerFilter(options.filter) });
    };
    const subscription: KurrentSubscription = new KurrentSubscription({
      open: matchesNothing(options.filter) ? null : open,
      filter: options.filter,
      minimum: start.minimum,
      onStop: () => this.subscriptions.delete(subscription),
    });
    this.subscriptions.add(subscription);
    return subscription;
  }

  /** Stops the subscriptions and closes the client's connections. Idempotent. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      await Promise.all([...this.subscriptions].map((subscription) => subscription.stop()));
      await this.client.dispose();
    })();
    return this.closing;
  }

  /**
   * The global position of a stream's event at a revision, read back from the leader, which just wrote it; a
   * failed read is tried again after a short pause, and null is the answer when none succeeds (the caller then
   * uses what it knows: never an error after a commit).
   */
  private async positionOf(stream: string, revision: number): Promise<number | null> {
    // All the tries together within one read deadline: the caller is waiting for a commit that already happened.
    const until = Date.now() + this.readDeadlineMs;
    for (let attempt = 0; attempt < READ_BACK_PAUSES_MS.length + 1; attempt++) {
      if (attempt > 0) await sleep(READ_BACK_PAUSES_MS[attempt - 1]!);
      if (this.closing || Date.now() >= until) return null;
      try {
        const reading = this.client.readStream(stream, {
          fromRevision: BigInt(revision),
          maxCount: 1,
          requiresLeader: true,
        });
        const [resolved] = await this.read(`a read-back of stream ${stream}`, reading, until - Date.now());
        if (resolved?.event) return toPortPosition(resolved.event.position);
      } catch {
        // tried again below; the append stands whatever happens here
      }
    }
    return null;
  }

  /** The position of the event just before a log position (any event, system ones too), or the start. */
  private async positionBefore(log: bigint): Promise<ReadPosition> {
    try {
      const [resolved] = await this.read(
        'a read of $all',
        this.client.readAll({ direction: BACKWARDS, fromPosition: { commit: log, prepare: log }, maxCount: 1 }),
      );
      if (resolved?.event?.position) return resolved.event.position;
    } catch (error) {
      throw translateError(error);
    }
    return START;
  }

  /** A read drained to its end (see drain), failing as unavailable when it takes longer than the deadline. */
  private read<T>(what: string, reading: AsyncIterable<T>, ms = this.readDeadlineMs): Promise<T[]> {
    return withDeadline(drain(reading), ms, what);
  }

  private assertOpen(): void {
    if (this.closing) throw new EventStoreUnavailableError('the event store is closed');
  }
}

/**
 * Reads a client read to its end and returns what it delivered. Never leave a client read early: in client 1.3
 * the iterator under it (the Rust bridge's) has no `return()`, and the client offers no cancel for reads, so
 * an abandoned read stays open on the server. Callers bound every read with maxCount; draining then costs at
 * most the rest of one page, and the server completes the call.
 */
async function drain<T>(reading: AsyncIterable<T>): Promise<T[]> {
  const items: T[] = [];
  for await (const item of reading) items.push(item);
  return items;
}

/**
 * The work, or EventStoreUnavailableError once `ms` have passed. The work is not cancelled (a bridge read cannot
 * be); its late outcome is ignored.
 */
function withDeadline<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new EventStoreUnavailableError(`KurrentDB did not answer ${what} within ${ms} ms`)),
      ms,
    );
    timer.unref();
  });
  work.catch(noop);
  return Promise.race([work, expired]).finally(() => clearTimeout(timer));
}

/** The port's number for the log position of an appended event, or null when it cannot be numbered. */
function portPositionOrNull(log: bigint): number | null {
  try {
    return toPortPosition({ commit: log, prepare: log });
  } catch {
    return null;
  }
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** An event read from $all, or null for what the port never shows (system events, links to nothing). */
function mapAllEvent(resolved: AllStreamResolvedEvent): RecordedEvent | null {
  const event = resolved.event;
  if (!event || isSystemEvent(event.streamId, event.type)) return null;
  return toRecordedEvent(resolved);
}

interface KurrentSubscriptionOptions {
  /** Opens the server subscription; null when the filter matches nothing (then nothing ever arrives). */
  open: (() => Promise<AllStreamSubscription>) | null;
  filter: EventFilter | undefined;
  /** Events below this port position are not delivered (the checkpoint itself and before). */
  minimum: number;
  onStop: () => void;
}

type Ending = { kind: 'stopped' } | { kind: 'failed'; error: unknown };

const DONE: IteratorResult<RecordedEvent> = { done: true, value: undefined };
const noop = () => {};

/**
 * The port's Subscription over the client's: events mapped and filtered, `stop()` ending a waiting next() at
 * once, errors delivered to the consumer's next() (after which the subscription is stopped: the consumer
 * resubscribes from its checkpoint). The client's subscription is a stream that emits 'error' events; they are
 * captured here from the start, so an error before the first next() is not lost (nor thrown as uncaught).
 */
class KurrentSubscription implements Subscription, AsyncIterableIterator<RecordedEvent> {
  private readonly options: KurrentSubscriptionOptions;
  private source: AllStreamSubscription | null = null;
  /** The client's iterator once the server subscription is open (null: it never will be). */
  private readonly ready: Promise<AsyncIterator<AllStreamResolvedEvent> | null>;
  private readonly ending: Promise<Ending>;
  private end!: (ending: Ending) => void;
  private stopped = false;
  private failure: Error | undefined;
  private lastPosition = -1;
  private readonly caughtUpListeners: Array<() => void> = [];
  /** next() calls are chained so concurrent callers cannot reorder or share events. */
  private tail: Promise<unknown> = Promise.resolve();

  constructor(options: KurrentSubscriptionOptions) {
    this.options = options;
    this.ending = new Promise((resolve) => (this.end = resolve));
    const opening = options.open ? options.open() : new Promise<never>(noop);
    this.ready = opening.then(
      (source) => {
        if (this.stopped) {
          void cancel(source); // never rejects: it swallows unsubscribe's failure
          return null;
        }
        source.on('error', (error: unknown) => this.end({ kind: 'failed', error }));
        // The server says when the subscription has caught up and gone live (KurrentDB 23.10 and later).
        source.on('caughtUp', () => this.caughtUpListeners.forEach((listener) => listener()));
        this.source = source;
        return source[Symbol.asyncIterator]();
      },
      (error: unknown) => {
        this.end({ kind: 'failed', error });
        return null;
      },
    );
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  next(): Promise<IteratorResult<RecordedEvent>> {
    const result = this.tail.then(() => this.pull());
    this.tail = result.catch(noop);
    return result;
  }

  async return(): Promise<IteratorResult<RecordedEvent>> {
    await this.stop();
    return DONE;
  }

  onCaughtUp(listener: () => void): void {
    this.caughtUpListeners.push(listener);
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.end({ kind: 'stopped' });
    this.options.onStop();
    // A subscription still opening is cancelled when it arrives (see the constructor).
    if (this.source) await cancel(this.source);
  }

  private async pull(): Promise<IteratorResult<RecordedEvent>> {
    if (this.failure !== undefined) throw this.failure;
    const opened = await Promise.race([this.ready, this.ending]);
    const iterator = opened && 'next' in opened ? opened : null;
    while (!this.stopped) {
      const pending = iterator ? iterator.next() : new Promise<never>(noop);
      pending.catch(noop); // settled after a stop or a captured error: nobody is waiting for it any more
      const next = await Promise.race([
        pending.then((result) => ({ kind: 'next' as const, result })),
        this.ending,
      ]).catch((error: unknown) => ({ kind: 'failed' as const, error }));
      if (next.kind === 'stopped') return DONE;
      if (next.kind === 'failed') return this.fail(next.error);
      if (next.result.done)
        return this.fail(new EventStoreUnavailableError('the KurrentDB subscription ended unexpectedly'));
      let event: RecordedEvent | null;
      try {
        event = mapAllEvent(next.result.value);
      } catch (error) {
        return this.fail(error);
      }
      // Positions only grow; the guard drops a repeat should the server ever send one.
      if (!event || event.position <= this.lastPosition || !keep(event, this.options.filter, this.options.minimum))
        continue;
      this.lastPosition = event.position;
      return { done: false, value: event };
    }
    return DONE;
  }

  /** An error ends the subscription; the consumer's next() gets it (unless it had stopped: then it is done). */
  private async fail(error: unknown): Promise<IteratorResult<RecordedEvent>> {
    if (this.stopped) return DONE;
    this.failure = translateError(error);
    await this.stop();
    throw this.failure;
  }
}

/** Ends a client subscription: cancels the gRPC call, then ends the stream. */
async function cancel(source: AllStreamSubscription): Promise<void> {
  await source.unsubscribe().catch(noop);
  source.destroy();
}

function checkNonNegativeInteger(name: string, value: number): void {
  if (!Number.isSafeInteger(value) || value < 0)
    throw new Error(`${name} must be an integer >= 0, got ${String(value)}`);
}

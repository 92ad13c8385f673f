/**
 * One reader of the log per process and store. Every follower of a process subscribes to the same store with
 * its own filter and checkpoint; alone, each one read the head and a page at every append, most of them to find
 * nothing for their filter (11 subscriptions, two wake-ups each per append on PostgreSQL). Behind this decorator
 * one subscription reads each page once and hands every subscriber the events its filter matches, in memory; a
 * subscriber whose filter matches nothing in a page moves its cursor without a read. That subscription reads what
 * any subscriber may want: when every filter names event types (or every one stream prefixes), those of them all,
 * else everything (a process that serves the write API alone follows the API keys' streams, not every create); a
 * subscriber that wants more than it reads restarts it, and every subscriber joins the new one as after a failure.
 *
 * Each subscriber keeps the port's guarantees (in order, no gap, no duplicate) and its own backpressure:
 * - it joins the shared reader only at the reader's position: one behind it (a checkpoint from before a
 *   restart, a rebuilt model) reads the store itself, filtered, up to where the reader is, then joins; one
 *   within the reader's memory of recent events joins at once from that memory;
 * - one that does not keep up (more than `maxBuffered` events waiting) is cut loose at the last event it holds
 *   and reads the store itself from there, as one behind: it loses nothing and holds nobody back;
 * - a failure of the shared subscription ends every subscriber that was fed by it, as a store subscription's
 *   failure would: each follower resubscribes from its checkpoint.
 * The shared subscription starts at the store's head when the first subscriber comes and stops with the last.
 */
import {
  EventStoreUnavailableError,
  matchesFilter,
  type EventFilter,
  type EventStore,
  type RecordedEvent,
  type SubscribeOptions,
  type Subscription,
} from '../ports/event-store.ts';

export interface SharedReaderOptions {
  /** Events a subscriber may have waiting before it is cut loose to read the store itself. Default 5000. */
  maxBuffered?: number;
  /** The newest events the reader keeps, so that a subscriber a little behind joins without a read. Default 1000. */
  recent?: number;
  /** Events per read of a subscriber behind the reader. Default 1000. */
  pageSize?: number;
}

/** The store with every subscription of this process served by one shared reader; every other call passes through. */
export function withSharedReader(store: EventStore, options: SharedReaderOptions = {}): EventStore {
  const reader = new SharedReader(store, options);
  return {
    append: (stream, events, expectedRevision) => store.append(stream, events, expectedRevision),
    appendMulti: (requests) => store.appendMulti(requests),
    readStream: (stream, readOptions) => store.readStream(stream, readOptions),
    readAll: (readOptions) => store.readAll(readOptions),
    headPosition: () => store.headPosition(),
    subscribeToAll: (subscribeOptions) => reader.subscribe(subscribeOptions),
    async close() {
      await reader.close();
      await store.close();
    },
  };
}

class SharedReader {
  private readonly store: EventStore;
  readonly maxBuffered: number;
  private readonly recentMax: number;
  readonly pageSize: number;
  private readonly subscribers = new Set<SharedSubscription>();
  /** Subscribers fed by the shared subscription. */
  private readonly attached = new Set<SharedSubscription>();
  private inner: Subscription | undefined;
  /** What the shared subscription reads (undefined: everything). */
  private innerFilter: EventFilter | undefined;
  /** Raised at each start and stop of the shared subscription: a pump of an older one does nothing more. */
  private generation = 0;
  private starting: Promise<void> | undefined;
  /** Every event at or below this has been handed to the attached subscribers (undefined: not running). */
  private cursor: number | undefined;
  /** The newest events read, all of those after `recentFrom`. */
  private recent: RecordedEvent[] = [];
  private recentFrom = 0;
  private caughtUp = false;
  /** The pump, paused while no subscriber is attached. */
  private resume: (() => void) | undefined;
  private closed = false;

  constructor(store: EventStore, options: SharedReaderOptions) {
    this.store = store;
    this.maxBuffered = options.maxBuffered ?? 5000;
    this.recentMax = options.recent ?? 1000;
    this.pageSize = options.pageSize ?? 1000;
  }

  subscribe(options: SubscribeOptions): Subscription {
    if (this.closed) return this.store.subscribeToAll(options); // the store refuses as it does when closed
    const from = options.from === 'start' ? -1 : options.from;
    if (!Number.isSafeInteger(from) || from < -1)
      throw new Error(`from must be an integer >= 0, got ${String(options.from)}`);
    const subscription = new SharedSubscription(this, from, options.filter);
    this.subscribers.add(subscription);
    if (this.inner && !covers(this.innerFilter, options.filter)) this.restart();
    return subscription;
  }

  /**
   * Brings a subscriber that holds nothing to the reader: it joins when the reader's memory reaches back to its
   * cursor, else it reads one page of the store itself, up to the reader's position. Throws what the store threw.
   */
  async catchUp(subscription: SharedSubscription): Promise<void> {
    while (this.cursor === undefined) {
      if (this.closed) throw new EventStoreUnavailableError('the event store is closed');
      await this.start();
      if (subscription.stopped) return;
    }
    if (this.join(subscription)) return;
    const to = this.cursor!;
    const events = await this.store.readAll({
      fromPosition: subscription.cursor + 1,
      toPosition: to,
      maxCount: this.pageSize,
      ...(subscription.filter ? { filter: subscription.filter } : {}),
    });
    if (subscription.stopped) return;
    subscription.take(events, events.length === this.pageSize ? events.at(-1)!.position : to);
  }

  /** The subscriber is fed by the shared subscription from now on (false: it is too far behind). */
  private join(subscription: SharedSubscription): boolean {
    if (this.cursor === undefined || subscription.cursor < this.recentFrom) return false;
    subscription.take(
      this.recent.filter((event) => event.position > subscription.cursor && matchesFilter(event, subscription.filter)),
      this.cursor,
    );
    this.attached.add(subscription);
    subscription.attached = true;
    if (this.caughtUp) subscription.caughtUp();
    const resume = this.resume;
    this.resume = undefined;
    resume?.();
    return true;
  }

  /** Cut loose: the subscriber reads the store itself from its cursor. */
  detach(subscription: SharedSubscription): void {
    this.attached.delete(subscription);
    subscription.attached = false;
  }

  remove(subscription: SharedSubscription): void {
    this.detach(subscription);
    this.subscribers.delete(subscription);
    if (this.subscribers.size === 0) this.stopInner();
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([...this.subscribers].map((subscription) => subscription.stop()));
    this.stopInner();
  }

  /** Starts the shared subscription at the store's head (once, whoever asks meanwhile). */
  private start(): Promise<void> {
    this.starting ??= (async () => {
      const head = await this.store.headPosition();
      if (this.subscribers.size === 0 || this.closed) return;
      const generation = ++this.generation;
      const filter = unionOf([...this.subscribers].map((subscription) => subscription.filter));
      const inner = this.store.subscribeToAll({ from: head, ...(filter ? { filter } : {}) });
      this.inner = inner;
      this.innerFilter = filter;
      this.cursor = head;
      this.recentFrom = head;
      this.recent = [];
      this.caughtUp = false;
      inner.onCaughtUp?.(() => {
        if (generation !== this.generation) return;
        this.caughtUp = true;
        for (const subscription of this.attached) subscription.caughtUp();
      });
      void this.pump(inner, generation);
    })().finally(() => (this.starting = undefined));
    return this.starting;
  }

  private async pump(inner: Subscription, generation: number): Promise<void> {
    const iterator = inner[Symbol.asyncIterator]();
    let failure: { error: unknown } | undefined;
    try {
      for (;;) {
        while (this.attached.size === 0 && generation === this.generation)
          await new Promise<void>((resolve) => (this.resume = resolve));
        if (generation !== this.generation) return;
        const next = await iterator.next();
        if (generation !== this.generation) return;
        if (next.done) break;
        this.hand(next.value);
      }
    } catch (error) {
      failure = { error };
    }
    if (generation !== this.generation) return;
    // The shared subscription ended (the store closed) or failed: so does every subscription it fed.
    const fed = [...this.attached];
    this.stopInner();
    for (const subscription of fed) subscription.end(failure);
  }

  private hand(event: RecordedEvent): void {
    this.cursor = event.position;
    this.caughtUp = false;
    this.recent.push(event);
    if (this.recent.length > 2 * this.recentMax)
      this.recentFrom = this.recent.splice(0, this.recent.length - this.recentMax).at(-1)!.position;
    for (const subscription of this.attached) subscription.offer(event);
  }

  /** The shared subscription stopped for one that reads more: its subscribers read up to it themselves, and join it. */
  private restart(): void {
    const fed = [...this.attached];
    this.stopInner();
    for (const subscription of fed) subscription.wake();
  }

  private stopInner(): void {
    this.generation += 1;
    const inner = this.inner;
    this.inner = undefined;
    this.cursor = undefined;
    this.recent = [];
    for (const subscription of this.attached) subscription.attached = false;
    this.attached.clear();
    const resume = this.resume;
    this.resume = undefined;
    resume?.();
    void inner?.stop().catch(() => {});
  }
}

const DONE: IteratorResult<RecordedEvent> = { done: true, value: undefined };

/** One subscriber: its own cursor, filter and buffer; fed by the shared reader or reading the store itself. */
class SharedSubscription implements Subscription, AsyncIterableIterator<RecordedEvent> {
  private readonly reader: SharedReader;
  readonly filter: EventFilter | undefined;
  /** Every matching event at or below this is in the buffer or delivered. */
  cursor: number;
  attached = false;
  stopped = false;
  private buffer: RecordedEvent[] = [];
  private index = 0;
  private failure: { error: unknown } | undefined;
  private waiter: (() => void) | undefined;
  private tail: Promise<unknown> = Promise.resolve();
  private pulls = 0;
  private readonly caughtUpListeners: Array<() => void> = [];

  constructor(reader: SharedReader, from: number, filter: EventFilter | undefined) {
    this.reader = reader;
    this.cursor = from;
    this.filter = filter;
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  next(): Promise<IteratorResult<RecordedEvent>> {
    if (this.pulls === 0 && !this.stopped && this.index < this.buffer.length)
      return Promise.resolve({ done: false, value: this.shift() });
    this.pulls += 1;
    const result = this.tail.then(() => this.pull()).finally(() => (this.pulls -= 1));
    this.tail = result.catch(() => undefined);
    return result;
  }

  async return(): Promise<IteratorResult<RecordedEvent>> {
    await this.stop();
    return DONE;
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.buffer = [];
    this.index = 0;
    this.reader.remove(this);
    this.wake();
  }

  onCaughtUp(listener: () => void): void {
    this.caughtUpListeners.push(listener);
  }

  /** An event of the shared subscription, in position order. */
  offer(event: RecordedEvent): void {
    if (event.position <= this.cursor) return;
    if (!matchesFilter(event, this.filter)) {
      this.cursor = event.position;
      return;
    }
    // Too slow: what it holds stays, and it reads the rest itself once it has used it.
    if (this.buffer.length - this.index >= this.reader.maxBuffered) return this.reader.detach(this);
    this.buffer.push(event);
    this.cursor = event.position;
    this.wake();
  }

  /** Events read for it (matching, after its cursor, in order); everything up to `scannedTo` has been examined. */
  take(events: RecordedEvent[], scannedTo: number): void {
    for (const event of events) if (event.position > this.cursor) this.buffer.push(event);
    this.cursor = Math.max(this.cursor, scannedTo);
    if (events.length > 0) this.wake();
  }

  caughtUp(): void {
    this.caughtUpListeners.forEach((listener) => listener());
  }

  /** The shared subscription ended: with its failure, or cleanly (the store closed). */
  end(failure: { error: unknown } | undefined): void {
    if (!failure) return void this.stop();
    this.failure = failure;
    this.wake();
  }

  private async pull(): Promise<IteratorResult<RecordedEvent>> {
    while (!this.stopped) {
      if (this.index < this.buffer.length) return { done: false, value: this.shift() };
      if (this.failure) {
        const { error } = this.failure;
        await this.stop();
        throw error;
      }
      if (this.attached) {
        await new Promise<void>((resolve) => (this.waiter = resolve));
        continue;
      }
      try {
        await this.reader.catchUp(this);
      } catch (error) {
        if (this.stopped) break;
        // A failed read ends the subscription, as the store's own does: the follower resubscribes from its checkpoint.
        await this.stop();
        throw error;
      }
    }
    return DONE;
  }

  private shift(): RecordedEvent {
    const event = this.buffer[this.index++]!;
    if (this.index === this.buffer.length) {
      this.buffer = [];
      this.index = 0;
    } else if (this.index >= 1024) {
      this.buffer = this.buffer.slice(this.index);
      this.index = 0;
    }
    return event;
  }

  wake(): void {
    const waiter = this.waiter;
    this.waiter = undefined;
    waiter?.();
  }
}

/** One filter that keeps every event any of `filters` keeps (undefined: none does short of everything). */
function unionOf(filters: Array<EventFilter | undefined>): EventFilter | undefined {
  if (filters.some((filter) => filter === undefined)) return undefined;
  const all = filters as EventFilter[];
  if (all.every((filter) => filter.eventTypes))
    return { eventTypes: [...new Set(all.flatMap((filter) => filter.eventTypes!))] };
  if (all.every((filter) => filter.streamPrefixes))
    return { streamPrefixes: [...new Set(all.flatMap((filter) => filter.streamPrefixes!))] };
  return undefined;
}

/** Whether every event `filter` keeps is one `inner` keeps. */
function covers(inner: EventFilter | undefined, filter: EventFilter | undefined): boolean {
  if (inner === undefined) return true;
  if (filter === undefined) return false;
  const types = inner.eventTypes;
  if (types && !filter.eventTypes?.every((type) => types.includes(type))) return false;
  const prefixes = inner.streamPrefixes;
  if (prefixes && !filter.streamPrefixes?.every((prefix) => prefixes.some((wider) => prefix.startsWith(wider))))
    return false;
  return true;
}

import type { RecordedEvent } from '../../ports/event-store.ts';

/** What one read of the store returned to a subscription. */
export interface Page {
  /** Matching events after the cursor, in position order. */
  events: RecordedEvent[];
  /** Every position up to here has been examined: the next read starts after it. */
  scannedTo: number;
  /** True when nothing committed beyond `scannedTo` was visible: wait before reading again. */
  caughtUp: boolean;
}

export interface PollingSubscriptionOptions {
  /** The checkpoint: delivery starts with the first event after it (0 for every event). */
  after: number;
  /**
   * Reads the page after a position. It may wait (a busy database is retried on timers) and should stop waiting
   * when `signal` aborts (the subscription stopped). Each read must see one consistent state: the SQLite store
   * reads head and page in one synchronous attempt, so nothing can interleave with them. At most `limit` events:
   * a page with exactly `limit` is full, and may stop short of what it could have scanned.
   */
  readPage: (after: number, signal: AbortSignal, limit: number) => Promise<Page>;
  /** Asked at each wait: the store may poll less once it is told of other processes' commits. */
  pollIntervalMs: number | (() => number);
  /** Called once when the subscription ends, whoever ended it. */
  onStop: () => void;
}

const DONE: IteratorResult<RecordedEvent> = { done: true, value: undefined };

/**
 * The first read of a subscription asks for this many events, and each full page doubles the next, up to
 * MAX_PAGE_SIZE. A consumer that fails after a few events (a transient fault of its read model) subscribes again
 * from its checkpoint: with pages of a thousand from the start, each such retry parsed up to a thousand events it
 * never used (most of the executor's CPU under 10% injected faults). Catching up pays a handful of extra reads.
 */
export const FIRST_PAGE_SIZE = 32;
/** Events a subscription holds in memory per read. */
export const MAX_PAGE_SIZE = 1000;

/**
 * A catch-up subscription over a store that is only ever read by position: read pages after a cursor until
 * caught up, then wait for a wake-up (an append through the same store instance) or the poll interval (to see
 * other processes' appends), then read again. The same loop does catch-up and live delivery, so there is no
 * hand-over between them where an event could be missed or delivered twice.
 *
 * A timer exists only while a `next()` is waiting, and stop() clears it, so a stopped subscription never keeps
 * the process alive.
 */
export class PollingSubscription implements AsyncIterableIterator<RecordedEvent> {
  private readonly options: PollingSubscriptionOptions;
  private cursor: number;
  private pageSize = FIRST_PAGE_SIZE;
  private buffer: RecordedEvent[] = [];
  private index = 0;
  private stopped = false;
  /** The pull in progress: next() calls are chained so concurrent callers cannot reorder or share events. */
  private tail: Promise<unknown> = Promise.resolve();
  /** next() calls queued or running on the slow path; the fast path must not overtake them. */
  private pulls = 0;
  private timer: NodeJS.Timeout | undefined;
  private readonly caughtUpListeners: Array<() => void> = [];
  private wakeWaiter: (() => void) | undefined;
  /** Counts wake-ups, so one that comes while a read is in flight is not lost by the sleep after it. */
  private wakeups = 0;
  /** Aborted by stop(): a read waiting out a busy database gives up at once. */
  private readonly stopping = new AbortController();
  /** The wake-up count when the last read that reached the head began (undefined: it did not reach it). */
  private caughtUpAt: number | undefined;
  /** The highest head a wake-up told of: committed before any read that starts after it. */
  private toldHead = -1;
  /** While a read is in flight: the head it is sure to see (toldHead when it began); -1 otherwise. */
  private readCovers = -1;
  /** A page read is in flight: its answer sets the cursor, so nothing else may move it meanwhile. */
  private reading = false;

  constructor(options: PollingSubscriptionOptions) {
    this.options = options;
    this.cursor = options.after;
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  next(): Promise<IteratorResult<RecordedEvent>> {
    // Fast path for catch-up: an event already buffered needs no read and no chaining.
    if (this.pulls === 0 && !this.stopped && this.index < this.buffer.length) {
      return Promise.resolve({ done: false, value: this.buffer[this.index++]! });
    }
    this.pulls += 1;
    const result = this.tail.then(() => this.pull()).finally(() => (this.pulls -= 1));
    this.tail = result.catch(() => undefined);
    return result;
  }

  /** `break` out of for-await calls this: the subscription stops. */
  async return(): Promise<IteratorResult<RecordedEvent>> {
    await this.stop();
    return DONE;
  }

  /** Ends the subscription: a waiting next() resolves done at once, and every later one too. Idempotent. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.buffer = [];
    this.index = 0;
    this.stopping.abort();
    this.wake();
    this.options.onStop();
  }

  /**
   * New events may be committed: cut the current wait short. Told the head they reach, a subscription that has
   * already read up to it stays asleep (a notification of a commit whose events it has read).
   */
  wake(head?: number): void {
    if (head !== undefined && !this.stopped) {
      // Read already, or committed before the read in flight began (which therefore sees it).
      if (head <= this.cursor || head <= this.readCovers) return;
      this.toldHead = Math.max(this.toldHead, head);
    }
    this.wakeups += 1;
    clearTimeout(this.timer);
    this.timer = undefined;
    const waiter = this.wakeWaiter;
    this.wakeWaiter = undefined;
    waiter?.();
  }

  onCaughtUp(listener: () => void): void {
    this.caughtUpListeners.push(listener);
  }

  /**
   * This process has just committed positions (after, to], all of them, none of which this subscription wants (its
   * filter matches none of the events): one that has read up to `after` and is not reading moves past them without a
   * read. False when it cannot (it is behind, or a read is in flight): the caller wakes it instead.
   */
  passOver(after: number, to: number): boolean {
    if (this.stopped || this.reading || this.cursor < after) return false;
    this.cursor = Math.max(this.cursor, to);
    return true;
  }

  private async pull(): Promise<IteratorResult<RecordedEvent>> {
    while (!this.stopped) {
      if (this.index < this.buffer.length) return { done: false, value: this.buffer[this.index++]! };
      // The last read reached the head and nothing woke us since it began: no read until something does (a page
      // that brought events and the head, an append's, is not followed by a read that finds nothing).
      if (this.caughtUpAt === this.wakeups) {
        this.caughtUpAt = undefined;
        await this.sleep();
        continue;
      }
      const wakeups = this.wakeups;
      const page = await this.readPage();
      if (!page) break; // stopped while reading
      this.buffer = page.events;
      this.index = 0;
      if (page.events.length >= this.pageSize) this.pageSize = Math.min(this.pageSize * 2, MAX_PAGE_SIZE);
      this.cursor = page.scannedTo;
      if (page.caughtUp) this.caughtUpListeners.forEach((listener) => listener());
      this.caughtUpAt = page.caughtUp ? wakeups : undefined;
    }
    return DONE;
  }

  /** The next page, or undefined when the subscription was stopped meanwhile (its events are not wanted). */
  private async readPage(): Promise<Page | undefined> {
    this.readCovers = this.toldHead;
    this.reading = true;
    try {
      const page = await this.options.readPage(this.cursor, this.stopping.signal, this.pageSize);
      return this.stopped ? undefined : page;
    } catch (error) {
      if (this.stopped) return undefined;
      // A failed read ends the subscription: the consumer's for-await throws and must resubscribe from its checkpoint.
      void this.stop(); // only marks and wakes: the failure that matters is the one thrown below
      throw error;
    } finally {
      this.readCovers = -1;
      this.reading = false;
    }
  }

  private sleep(): Promise<void> {
    return new Promise((resolve) => {
      this.wakeWaiter = resolve;
      const { pollIntervalMs } = this.options;
      this.timer = setTimeout(
        () => this.wake(),
        typeof pollIntervalMs === 'function' ? pollIntervalMs() : pollIntervalMs,
      );
    });
  }
}

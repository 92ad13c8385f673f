import { describe, expect, it } from 'vitest';
import {
  FIRST_PAGE_SIZE,
  MAX_PAGE_SIZE,
  type Page,
  PollingSubscription,
} from '../../src/adapters/sqlite/polling-subscription.ts';
import type { RecordedEvent } from '../../src/ports/event-store.ts';

/**
 * The subscription's memory is one page whatever the history: it reads a page only when the consumer has taken
 * every event of the previous one (backpressure), and a catch-up over many pages lets the event loop run between
 * them, so that what waits for the loop (timers, I/O, the batches' deadlines) is not held until the head.
 */
const PAGE = 10;
const HEAD = 1000;
const event = (position: number): RecordedEvent => ({
  id: String(position),
  type: 'T',
  data: {},
  metadata: {},
  stream: 's',
  revision: position,
  position,
  createdAt: '',
});

function pagedStore() {
  const reads: number[] = [];
  const readPage = async (after: number): Promise<Page> => {
    reads.push(after);
    const upTo = Math.min(HEAD, after + PAGE);
    const events = Array.from({ length: upTo - after }, (_, i) => event(after + i + 1));
    return { events, scannedTo: upTo, caughtUp: upTo >= HEAD };
  };
  return { reads, readPage };
}

describe('PollingSubscription', () => {
  it('when the consumer pulls slowly, then the subscription never holds more than one page ahead of it', async () => {
    const store = pagedStore();
    const subscription = new PollingSubscription({
      after: 0,
      readPage: store.readPage,
      pollIntervalMs: 1000,
      onStop: () => {},
    });
    let consumed = 0;
    for (let i = 0; i < 35; i++) {
      await subscription.next();
      consumed += 1;
      // Let everything that does not need the consumer run: a subscription that reads ahead would do it now.
      await new Promise((resolve) => setTimeout(resolve, 0));
      const read = store.reads.length * PAGE;
      expect(read - consumed).toBeLessThan(PAGE);
    }
    expect(store.reads).toEqual([0, 10, 20, 30]);
    await subscription.stop();
  });
});

describe('PollingSubscription page sizes', () => {
  function limitedStore(head: number) {
    const limits: number[] = [];
    let parsed = 0;
    const readPage = async (after: number, _signal: AbortSignal, limit: number): Promise<Page> => {
      limits.push(limit);
      const upTo = Math.min(head, after + limit);
      parsed += upTo - after;
      return {
        events: Array.from({ length: upTo - after }, (_, i) => event(after + i + 1)),
        scannedTo: upTo,
        caughtUp: upTo >= head,
      };
    };
    return { limits, parsed: () => parsed, readPage };
  }

  it('given a long history, when a consumer stops after a few events (a fault, then a new subscription), then it read one small page, not a thousand events', async () => {
    const store = limitedStore(5000);
    const subscription = new PollingSubscription({
      after: 0,
      readPage: store.readPage,
      pollIntervalMs: 1000,
      onStop: () => {},
    });
    for (let i = 0; i < 5; i++) await subscription.next();
    await subscription.stop();
    expect(store.parsed()).toBe(FIRST_PAGE_SIZE);
  });

  it('given a long history, when a consumer reads it all, then each full page doubles the next up to the maximum, and every event arrives once in order', async () => {
    const store = limitedStore(5000);
    const subscription = new PollingSubscription({
      after: 0,
      readPage: store.readPage,
      pollIntervalMs: 1000,
      onStop: () => {},
    });
    const positions: number[] = [];
    for (let i = 0; i < 5000; i++) positions.push(((await subscription.next()).value as RecordedEvent).position);
    await subscription.stop();
    expect(positions).toEqual(Array.from({ length: 5000 }, (_, i) => i + 1));
    expect(store.limits.slice(0, 7)).toEqual([32, 64, 128, 256, 512, MAX_PAGE_SIZE, MAX_PAGE_SIZE]);
    expect(Math.max(...store.limits)).toBe(MAX_PAGE_SIZE);
  });
});

describe('PollingSubscription wake-ups', () => {
  it('when told of a head it has already read (its own commit woke it first), then it does not read again; a head beyond it does', async () => {
    let head = 3;
    const reads: number[] = [];
    const readPage = async (after: number): Promise<Page> => {
      reads.push(after);
      const events = Array.from({ length: head - after }, (_, i) => event(after + i + 1));
      return { events, scannedTo: head, caughtUp: true };
    };
    const subscription = new PollingSubscription({ after: 0, readPage, pollIntervalMs: 60_000, onStop: () => {} });
    for (let i = 0; i < 3; i++) await subscription.next();
    const waiting = subscription.next(); // its first read reached the head: asleep, no read that finds nothing
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(reads).toEqual([0]);
    subscription.wake(3);
    subscription.wake(2);
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(reads).toEqual([0]);
    head = 4;
    subscription.wake(4);
    expect((await waiting).value?.position).toBe(4);
    expect(reads).toEqual([0, 3]);
    await subscription.stop();
  });
});

describe('PollingSubscription wake-ups during a read', () => {
  it("when an append wakes it and the append's notification comes while that read is in flight, then it reads once: no read for the notification, none that finds nothing", async () => {
    let head = 1;
    const reads: number[] = [];
    let release: (() => void) | undefined;
    const readPage = async (after: number): Promise<Page> => {
      reads.push(after);
      if (reads.length > 1) await new Promise<void>((resolve) => (release = resolve)); // reads after the first are held
      const events = Array.from({ length: head - after }, (_, i) => event(after + i + 1));
      return { events, scannedTo: head, caughtUp: true };
    };
    const subscription = new PollingSubscription({ after: 0, readPage, pollIntervalMs: 60_000, onStop: () => {} });
    expect((await subscription.next()).value?.position).toBe(1);
    const waiting = subscription.next(); // caught up at the first read: asleep, no read
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(reads).toEqual([0]);
    head = 2;
    subscription.wake(2); // this process's own commit: a read begins
    await new Promise((resolve) => setTimeout(resolve, 10));
    subscription.wake(2); // its notification, while that read is in flight
    release!();
    expect((await waiting).value?.position).toBe(2);
    const after = subscription.next();
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(reads).toEqual([0, 1]);
    head = 3;
    subscription.wake(3);
    await new Promise((resolve) => setTimeout(resolve, 10));
    release!();
    expect((await after).value?.position).toBe(3);
    expect(reads).toEqual([0, 1, 2]);
    await subscription.stop();
  });
});

describe('PollingSubscription passing over its own commits', () => {
  /** A store whose head moves as the test says, and whose reads are counted. */
  function movingStore(head: number) {
    const state = { head, reads: [] as number[], hold: undefined as Promise<void> | undefined };
    const readPage = async (after: number): Promise<Page> => {
      state.reads.push(after);
      await state.hold;
      const events = Array.from({ length: state.head - after }, (_, i) => event(after + i + 1));
      return { events, scannedTo: state.head, caughtUp: true };
    };
    return { state, readPage };
  }
  const settle = () => new Promise((resolve) => setTimeout(resolve, 10));

  it('given a subscriber that has read up to a commit of this process it wants nothing of, when it passes over it, then it reads nothing, and reads on from past it', async () => {
    const { state, readPage } = movingStore(2);
    const subscription = new PollingSubscription({ after: 0, readPage, pollIntervalMs: 60_000, onStop: () => {} });
    for (let i = 0; i < 2; i++) await subscription.next();
    const waiting = subscription.next();
    await settle();
    state.head = 5;
    expect(subscription.passOver(2, 5)).toBe(true);
    subscription.wake(5); // the commit's own notification
    await settle();
    expect(state.reads).toEqual([0]);
    state.head = 6;
    subscription.wake(6);
    expect((await waiting).value?.position).toBe(6);
    expect(state.reads).toEqual([0, 5]);
    await subscription.stop();
  });

  it('given a subscriber behind the commit (another process committed before it), when asked to pass over it, then it refuses and reads what it has not seen', async () => {
    const { state, readPage } = movingStore(2);
    const subscription = new PollingSubscription({ after: 0, readPage, pollIntervalMs: 60_000, onStop: () => {} });
    for (let i = 0; i < 2; i++) await subscription.next();
    const waiting = subscription.next();
    await settle();
    state.head = 5; // position 3 is another process's
    expect(subscription.passOver(3, 5)).toBe(false);
    subscription.wake(5);
    expect((await waiting).value?.position).toBe(3);
    expect(state.reads).toEqual([0, 2]);
    await subscription.stop();
  });

  it('given a read in flight, when asked to pass over a commit, then it refuses: the read sets where it is', async () => {
    const { state, readPage } = movingStore(1);
    let release: () => void = () => {};
    const subscription = new PollingSubscription({ after: 0, readPage, pollIntervalMs: 60_000, onStop: () => {} });
    state.hold = new Promise<void>((resolve) => (release = resolve));
    const first = subscription.next();
    await settle();
    expect(state.reads).toEqual([0]);
    expect(subscription.passOver(0, 1)).toBe(false);
    release();
    expect((await first).value?.position).toBe(1);
    await subscription.stop();
  });
});

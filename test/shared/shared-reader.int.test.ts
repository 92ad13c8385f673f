/**
 * One reader of the log per process, on the real embedded store: subscribers of different filters and checkpoints
 * each get exactly their events, once, in order, while the store is read once per page by one subscription; a
 * slow subscriber holds nobody back and loses nothing; a failure of the shared subscription ends the
 * subscriptions it fed, and followers resume from their checkpoints.
 */
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openSqliteEventStore } from '../../src/adapters/sqlite/sqlite-event-store.ts';
import {
  EventStoreUnavailableError,
  type EventFilter,
  type EventStore,
  type RecordedEvent,
  type Subscription,
} from '../../src/ports/event-store.ts';
import { checkpointIn, Follower } from '../../src/shared/follower.ts';
import { withSharedReader, type SharedReaderOptions } from '../../src/shared/shared-reader.ts';
import { waitFor } from '../support/system.ts';
import { tempDir } from '../support/temp-dir.ts';

const SILENT = { info() {}, warn() {} };
const FAST = { baseDelayMs: 10, maxDelayMs: 50 };

let dir: ReturnType<typeof tempDir>;
let inner: EventStore;
/** What the shared reader asks of the store underneath. */
let calls: { subscribeToAll: number; readAll: number; failNext: boolean; filters: Array<EventFilter | undefined> };
let opened: Subscription[];
const closers: Array<() => Promise<void>> = [];

beforeEach(() => {
  dir = tempDir('shared-reader-');
  inner = openSqliteEventStore({ file: join(dir.path, 'events.sqlite') });
  calls = { subscribeToAll: 0, readAll: 0, failNext: false, filters: [] };
  opened = [];
});
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
  await inner.close();
  dir.cleanup();
});

/** The store as the shared reader sees it, counting its calls; `failNext` makes the next subscription fail at its next pull. */
function counted(): EventStore {
  return {
    ...bind(inner),
    readAll: (options) => {
      calls.readAll += 1;
      return inner.readAll(options);
    },
    subscribeToAll: (options) => {
      calls.subscribeToAll += 1;
      calls.filters.push(options.filter);
      const subscription = inner.subscribeToAll(options);
      opened.push(subscription);
      const iterator = subscription[Symbol.asyncIterator]();
      return {
        stop: () => subscription.stop(),
        onCaughtUp: (listener) => subscription.onCaughtUp?.(listener),
        [Symbol.asyncIterator]: () => ({
          next: async () => {
            if (calls.failNext) {
              calls.failNext = false;
              await subscription.stop();
              throw new EventStoreUnavailableError('subscription dropped (test)');
            }
            return iterator.next();
          },
        }),
      };
    },
    close: async () => {},
  };
}

function bind(store: EventStore): EventStore {
  return {
    append: (...args) => store.append(...args),
    appendMulti: (requests) => store.appendMulti(requests),
    readStream: (...args) => store.readStream(...args),
    readAll: (options) => store.readAll(options),
    headPosition: () => store.headPosition(),
    subscribeToAll: (options) => store.subscribeToAll(options),
    close: () => store.close(),
  };
}

function shared(options: SharedReaderOptions = {}): EventStore {
  const store = withSharedReader(counted(), options);
  closers.push(() => store.close());
  return store;
}

/** Appends `count` events, alternating over streams a-, b- and c-, types by stream; returns them as stored. */
async function appendMixed(count: number): Promise<void> {
  for (let i = 0; i < count; i++) {
    const kind = ['a', 'b', 'c'][i % 3]!;
    await inner.append(`${kind}-${i % 7}`, [{ type: `${kind.toUpperCase()}Happened`, data: { i } }], 'any');
  }
}

/** Collects what a subscription delivers, in order. */
function collect(subscription: Subscription): { events: RecordedEvent[]; failure: () => unknown } {
  const events: RecordedEvent[] = [];
  let failure: unknown;
  void (async () => {
    try {
      for await (const event of subscription) events.push(event);
    } catch (error) {
      failure = error;
    }
  })();
  return { events, failure: () => failure };
}

const positionsOf = (events: RecordedEvent[]) => events.map((event) => event.position);

async function expected(filter: EventFilter | undefined, after: number): Promise<number[]> {
  return positionsOf(await inner.readAll({ fromPosition: after + 1, ...(filter ? { filter } : {}) }));
}

describe('the shared reader', () => {
  it('given subscribers of different filters and checkpoints, when events come live and from history, then each gets exactly its events, once, in order, and the log is followed by one subscription', async () => {
    await appendMixed(30);
    const store = shared();
    const filters: Array<EventFilter | undefined> = [
      undefined,
      { streamPrefixes: ['a-'] },
      { eventTypes: ['BHappened'] },
      { eventTypes: ['CHappened', 'AHappened'] },
      { eventTypes: ['NeverHappened'] },
    ];
    const starts: Array<'start' | number> = ['start', 10, 'start', 25, 30];
    const subscribers = filters.map((filter, i) => ({
      filter,
      from: starts[i]!,
      seen: collect(store.subscribeToAll({ from: starts[i]!, ...(filter ? { filter } : {}) })),
    }));
    await appendMixed(60);
    for (const { filter, from, seen } of subscribers) {
      const wanted = await expected(filter, from === 'start' ? 0 : from);
      await waitFor(() => seen.events.length >= wanted.length);
      await new Promise((resolve) => setTimeout(resolve, 20)); // nothing more arrives: no duplicate
      expect(positionsOf(seen.events)).toEqual(wanted);
    }
    expect(calls.subscribeToAll).toBe(1);
  });

  it('given subscribers following live, when events are appended, then none of them reads the store itself', async () => {
    await appendMixed(5);
    const store = shared();
    const seen = [{ eventTypes: ['AHappened'] }, { eventTypes: ['BHappened'] }, { eventTypes: ['NeverHappened'] }].map(
      (filter) => collect(store.subscribeToAll({ from: 5, filter })),
    );
    await waitFor(() => calls.subscribeToAll === 1);
    await new Promise((resolve) => setTimeout(resolve, 20));
    const readsBefore = calls.readAll;
    await appendMixed(30);
    await waitFor(() => seen[0]!.events.length === 10 && seen[1]!.events.length === 10);
    expect(seen[2]!.events).toEqual([]);
    expect(calls.readAll).toBe(readsBefore);
  });

  it('given a subscriber that does not pull, when many events come, then the others get theirs at once and the slow one later gets every one of its events, in order', async () => {
    const store = shared({ maxBuffered: 5, recent: 4, pageSize: 7 });
    const fast = collect(store.subscribeToAll({ from: 'start', filter: { eventTypes: ['AHappened'] } }));
    const slow = store.subscribeToAll({ from: 'start' });
    const slowIterator = slow[Symbol.asyncIterator]();
    const first = await Promise.race([slowIterator.next(), appendMixed(90).then(() => 'appended' as const)]);
    // The fast subscriber has everything while the slow one took one event at most.
    await waitFor(() => fast.events.length === 30);
    expect(positionsOf(fast.events)).toEqual(await expected({ eventTypes: ['AHappened'] }, 0));
    const slowEvents: RecordedEvent[] = first === 'appended' ? [] : first.done ? [] : [first.value];
    while (slowEvents.length < 90) {
      const next = await slowIterator.next();
      if (next.done) break;
      slowEvents.push(next.value);
    }
    expect(positionsOf(slowEvents)).toEqual(await expected(undefined, 0));
    // Cut loose, it read the store itself, and joined the shared reader again once level with it.
    expect(calls.readAll).toBeGreaterThan(0);
    await appendMixed(3);
    const live = await slowIterator.next();
    expect(live.done ? null : live.value.position).toBe(91);
    expect(calls.subscribeToAll).toBe(1);
  });

  it('given followers on the shared reader, when its subscription fails, then every follower resumes from its checkpoint and handles each event once', async () => {
    const store = shared();
    const handled = new Map<string, number[]>();
    const followers = ['AHappened', 'BHappened', 'CHappened'].map((type) => {
      handled.set(type, []);
      let position: number | null = null;
      const follower = new Follower({
        name: type,
        eventStore: store,
        filter: { eventTypes: [type] },
        checkpoint: checkpointIn(() => position),
        logger: SILENT,
        supervision: FAST,
        handle: async (batch) => {
          handled.get(type)!.push(...positionsOf(batch));
          position = batch.at(-1)!.position;
        },
      });
      follower.start();
      closers.push(() => follower.stop());
      return follower;
    });
    await appendMixed(30);
    await waitFor(() => [...handled.values()].every((positions) => positions.length === 10));
    calls.failNext = true;
    await appendMixed(30);
    for (const [type, positions] of handled) {
      const wanted = await expected({ eventTypes: [type] }, 0);
      await waitFor(() => positions.length >= wanted.length);
      expect(positions).toEqual(wanted);
    }
    expect(calls.subscribeToAll).toBeGreaterThan(1); // the failed subscription was replaced
    expect(followers.every((follower) => follower.consumer.status().state === 'running')).toBe(true);
  });

  it('given subscribers that all filter by event type, when events come, then the shared subscription reads only their types; when a subscriber of another type comes, then it reads that type too and nobody misses an event', async () => {
    await appendMixed(6);
    const store = shared();
    const a = collect(store.subscribeToAll({ from: 0, filter: { eventTypes: ['AHappened'] } }));
    const b = collect(store.subscribeToAll({ from: 0, filter: { eventTypes: ['BHappened'] } }));
    await appendMixed(30);
    await waitFor(() => a.events.length === 12 && b.events.length === 12);
    expect(calls.filters).toEqual([{ eventTypes: ['AHappened', 'BHappened'] }]);
    const c = collect(store.subscribeToAll({ from: 0, filter: { eventTypes: ['CHappened'] } }));
    await appendMixed(30);
    for (const [seen, type] of [
      [a, 'AHappened'],
      [b, 'BHappened'],
      [c, 'CHappened'],
    ] as const) {
      const wanted = await expected({ eventTypes: [type] }, 0);
      await waitFor(() => seen.events.length >= wanted.length);
      await new Promise((resolve) => setTimeout(resolve, 20)); // nothing more arrives: no duplicate
      expect(positionsOf(seen.events)).toEqual(wanted);
    }
    expect(calls.filters).toEqual([
      { eventTypes: ['AHappened', 'BHappened'] },
      { eventTypes: ['AHappened', 'BHappened', 'CHappened'] },
    ]);
    // Stream prefixes likewise; a subscriber of every event makes it read everything.
    const prefixed = shared();
    const x = collect(prefixed.subscribeToAll({ from: 0, filter: { streamPrefixes: ['a-'] } }));
    await waitFor(() => x.events.length === 22);
    const everything = collect(prefixed.subscribeToAll({ from: 0 }));
    await appendMixed(3);
    await waitFor(() => everything.events.length === 69 && x.events.length === 23);
    expect(calls.filters.slice(2)).toEqual([{ streamPrefixes: ['a-'] }, undefined]);
  });

  it('given every subscriber stopped, then the shared subscription stops too, and a new subscriber starts it again at the head', async () => {
    await appendMixed(3);
    const store = shared();
    const one = store.subscribeToAll({ from: 0 });
    const got = await one[Symbol.asyncIterator]().next();
    expect(got.done ? null : got.value.position).toBe(1);
    await waitFor(() => calls.subscribeToAll === 1);
    await one.stop();
    await appendMixed(3);
    const two = collect(store.subscribeToAll({ from: 4 }));
    await waitFor(() => two.events.length === 2);
    expect(positionsOf(two.events)).toEqual([5, 6]);
    expect(calls.subscribeToAll).toBe(2);
  });
});

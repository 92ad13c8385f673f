/**
 * How the KurrentDB adapter reads, with the client MOCKED AT ITS BOUNDARY: `KurrentDBClient.connectionString`
 * returns a scripted client whose readAll/readStream answer from an in-memory $all. This is not a test of
 * KurrentDB (the contract suite, test/adapters/kurrentdb-event-store.int.test.ts, is, where KURRENTDB_URL is set);
 * it proves what only the calls can show: every read the adapter makes carries a maxCount, and every read is
 * read to its end, never abandoned.
 *
 * Why "read to its end": in client 1.3 a read goes through the Rust bridge (@kurrent/bridge), whose iterator
 * has only next(), no return(), and the client exposes no way to cancel a read. A `break` out of a for-await
 * over a read therefore leaves the gRPC read open on the server until the bridge's stream is garbage-collected.
 * The scripted reads below have the same shape (next() only), and note whether they were read to `done`.
 *
 * The scripted server also refuses, as KurrentDB does (InvalidPosition), a read from a position that is not
 * the position of an event, so the adapter's explicit paging is held to real event boundaries.
 */
import { KurrentDBClient } from '@kurrent/kurrentdb-client';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { openKurrentDbEventStore } from '../../src/adapters/kurrentdb/kurrentdb-event-store.ts';
import type { EventStore } from '../../src/ports/event-store.ts';

interface StoredEvent {
  streamId: string;
  type: string;
  revision: number;
  /** Log position: commit = prepare. */
  log: bigint;
}

interface ReadCall {
  kind: 'readAll' | 'readStream';
  options: Record<string, unknown>;
  /** The iterator answered done: the read ran to its end (the server completed it). */
  drained: boolean;
}

type Position = { commit: bigint; prepare: bigint };

/** A scripted client: $all in memory, reads shaped like the bridge's (next() only). */
class ScriptedClient {
  private readonly log: StoredEvent[];
  readonly calls: ReadCall[] = [];

  constructor(log: StoredEvent[]) {
    this.log = log;
  }

  readAll(
    options: {
      direction?: string;
      fromPosition?: 'start' | 'end' | Position;
      maxCount?: number | bigint;
      filter?: { filterOn: string; regex?: string };
    } = {},
  ) {
    const call: ReadCall = { kind: 'readAll', options, drained: false };
    this.calls.push(call);
    const backwards = options.direction === 'backwards';
    const matches = (event: StoredEvent) => {
      const filter = options.filter;
      if (!filter?.regex) return true;
      return new RegExp(filter.regex).test(filter.filterOn === 'eventType' ? event.type : event.streamId);
    };
    let selected: StoredEvent[];
    const from = options.fromPosition ?? (backwards ? 'end' : 'start');
    if (from !== 'start' && from !== 'end' && !this.log.some((event) => event.log === from.commit)) {
      return this.failing(call, new Error(`InvalidPosition: ${from.commit} is not the position of an event`));
    }
    if (backwards) {
      // Backwards from a position: the events before it (KurrentDB's backward read of $all is exclusive).
      selected = [...this.log]
        .reverse()
        .filter((event) => from === 'end' || from === 'start' || event.log < from.commit);
    } else {
      selected = this.log.filter((event) => from === 'start' || from === 'end' || event.log >= from.commit);
    }
    const max = Number(options.maxCount ?? Number.MAX_SAFE_INTEGER);
    return this.reading(call, selected.filter(matches).slice(0, max));
  }

  readStream(
    stream: string,
    options: { fromRevision?: bigint | 'start' | 'end'; maxCount?: number | bigint; direction?: string } = {},
  ) {
    const call: ReadCall = { kind: 'readStream', options: { stream, ...options }, drained: false };
    this.calls.push(call);
    let events = this.log.filter((event) => event.streamId === stream);
    if (options.direction === 'backwards') events = events.reverse();
    const from = options.fromRevision;
    if (typeof from === 'bigint')
      events = events.filter((event) =>
        options.direction === 'backwards' ? event.revision <= Number(from) : event.revision >= Number(from),
      );
    return this.reading(call, events.slice(0, Number(options.maxCount ?? Number.MAX_SAFE_INTEGER)));
  }

  /** An append (one stream): the events go to the end of $all. */
  async appendToStream(stream: string, events: unknown[]): Promise<{ nextExpectedRevision: bigint }> {
    let revision = this.log.filter((event) => event.streamId === stream).length - 1;
    for (const _ of events) {
      revision += 1;
      this.log.push({ streamId: stream, type: 'Appended', revision, log: (this.log.at(-1)?.log ?? 0n) + 100n });
    }
    return { nextExpectedRevision: BigInt(revision) };
  }

  async dispose(): Promise<void> {}

  private reading(call: ReadCall, events: StoredEvent[]): AsyncIterable<unknown> {
    let index = 0;
    const next = async () => {
      if (index < events.length) return { done: false, value: resolved(events[index++]!) };
      call.drained = true;
      return { done: true, value: undefined };
    };
    // Like the bridge's iterator: no return(), so leaving a for-await early cancels nothing.
    return { [Symbol.asyncIterator]: () => ({ next }) };
  }

  private failing(call: ReadCall, error: Error): AsyncIterable<unknown> {
    return {
      [Symbol.asyncIterator]: () => ({
        next: async () => {
          call.drained = true; // a failed call is over on the server
          throw error;
        },
      }),
    };
  }
}

function resolved(event: StoredEvent) {
  return {
    event: {
      streamId: event.streamId,
      id: `00000000-0000-4000-8000-${event.log.toString().padStart(12, '0')}`,
      type: event.type,
      revision: BigInt(event.revision),
      created: new Date('2026-01-01T00:00:00Z'),
      data: { log: Number(event.log) },
      metadata: {},
      isJson: true,
      position: { commit: event.log, prepare: event.log },
    },
  };
}

/** $all: `count` application events in two streams, at sparse log positions, with system events mixed in. */
function history(
  count: number,
  options: { systemEveryN?: number; trailingSystemStreamEvents?: number } = {},
): StoredEvent[] {
  const log: StoredEvent[] = [];
  const revisions = new Map<string, number>();
  let position = 0n;
  const add = (streamId: string, type: string) => {
    position += 137n + BigInt(log.length % 5) * 11n; // records are of different sizes: positions are sparse
    const revision = revisions.get(streamId) ?? 0;
    revisions.set(streamId, revision + 1);
    log.push({ streamId, type, revision, log: position });
  };
  for (let i = 0; i < count; i++) {
    if (options.systemEveryN && i % options.systemEveryN === 0) add('$stats-127.0.0.1:2113', '$statsCollected');
    add(i % 2 === 0 ? 'wallet-a' : 'operation-b', i % 3 === 0 ? 'WalletCredited' : 'OperationRequested');
  }
  // Events of a system stream with an ordinary type: the server's filter (on the type) lets them through.
  for (let i = 0; i < (options.trailingSystemStreamEvents ?? 0); i++) add('$projections-$all', 'ProjectionUpdated');
  return log;
}

function scripted(log: StoredEvent[], readPageSize?: number): { store: EventStore; client: ScriptedClient } {
  const client = new ScriptedClient(log);
  vi.spyOn(KurrentDBClient, 'connectionString').mockReturnValue(client as unknown as KurrentDBClient);
  const store = openKurrentDbEventStore({
    connectionString: 'kurrentdb://scripted:2113?tls=false',
    ...(readPageSize === undefined ? {} : { readPageSize }),
  });
  return { store, client };
}

/** Every read carried a finite maxCount no larger than `bound`, and was read to its end. */
function expectBoundedAndClosed(client: ScriptedClient, bound: number): void {
  expect(client.calls.length).toBeGreaterThan(0);
  for (const call of client.calls) {
    const max = Number(call.options.maxCount);
    expect(
      Number.isFinite(max) && max >= 1 && max <= bound,
      `${call.kind} ${JSON.stringify(call.options, (_, v) => (typeof v === 'bigint' ? v.toString() : v))}`,
    ).toBe(true);
    expect(call.drained, `${call.kind} was left open`).toBe(true);
  }
}

const positions = (log: StoredEvent[]) =>
  log
    .filter((event) => !event.streamId.startsWith('$') && !event.type.startsWith('$'))
    .map((event) => Number(event.log) * 4);

afterEach(() => {
  vi.restoreAllMocks();
});

describe('KurrentDB adapter reads (client mocked at its boundary)', () => {
  it('given a history longer than a page, when readAll runs without a maxCount, then it pages with bounded reads, each read to its end, and returns every event once in order', async () => {
    const log = history(23, { systemEveryN: 4 });
    const { store, client } = scripted(log, 5);
    const events = await store.readAll();
    expect(events.map((event) => event.position)).toEqual(positions(log));
    expect(client.calls.filter((call) => call.kind === 'readAll').length).toBeGreaterThan(5);
    expectBoundedAndClosed(client, 5);
  });

  it('given a maxCount smaller than the history, when readAll stops at it, then the read it stopped in was still read to its end', async () => {
    const log = history(40);
    const { store, client } = scripted(log);
    const events = await store.readAll({ maxCount: 3 });
    expect(events.map((event) => event.position)).toEqual(positions(log).slice(0, 3));
    // The caller's maxCount bounds the server read too (plus one, for an event dropped on our side).
    expectBoundedAndClosed(client, 4);
  });

  it('given a toPosition in the middle, when readAll reaches it, then it returns up to it and no read stays open', async () => {
    const log = history(30);
    const { store, client } = scripted(log, 4);
    const all = positions(log);
    const events = await store.readAll({ fromPosition: all[5]! + 1, toPosition: all[12]! });
    expect(events.map((event) => event.position)).toEqual(all.slice(6, 13));
    expectBoundedAndClosed(client, 4);
  });

  it('given a filter on types and stream prefixes, when readAll pages, then the server filter is sent with each bounded read and the other half applied here', async () => {
    const log = history(25);
    const { store, client } = scripted(log, 3);
    const events = await store.readAll({ filter: { eventTypes: ['WalletCredited'], streamPrefixes: ['wallet-'] } });
    const expected = log
      .filter((event) => event.type === 'WalletCredited' && event.streamId.startsWith('wallet-'))
      .map((event) => Number(event.log) * 4);
    expect(events.map((event) => event.position)).toEqual(expected);
    for (const call of client.calls) expect(call.options.filter).toMatchObject({ filterOn: 'eventType' });
    expectBoundedAndClosed(client, 3);
  });

  it('when the head is asked, then one bounded backward read answers, read to its end', async () => {
    const log = history(50);
    const { store, client } = scripted(log);
    expect(await store.headPosition()).toBe(positions(log).at(-1));
    expect(client.calls).toHaveLength(1);
    expect(client.calls[0]!.options).toMatchObject({ direction: 'backwards', fromPosition: 'end' });
    expectBoundedAndClosed(client, 16);
  });

  it('given more system-stream events at the end than a page holds, when the head is asked, then it pages backwards to the newest application event', async () => {
    const log = history(10, { trailingSystemStreamEvents: 40 });
    const { store, client } = scripted(log);
    expect(await store.headPosition()).toBe(positions(log).at(-1));
    expect(client.calls.length).toBeGreaterThan(2);
    expectBoundedAndClosed(client, 16);
  });

  it('given an empty store, when the head is asked, then it is 0 after one bounded read', async () => {
    const { store, client } = scripted([]);
    expect(await store.headPosition()).toBe(0);
    expectBoundedAndClosed(client, 16);
  });

  it('when a stream is read with a maxCount, or an append reads its position back, then those reads are bounded and read to their end too', async () => {
    const log = history(12);
    const { store, client } = scripted(log);
    const [first] = await store.readStream('wallet-a', { maxCount: 1 });
    expect(first?.revision).toBe(0);
    const [last] = await store.readStream('wallet-a', { direction: 'backwards', maxCount: 1 });
    expect(last?.revision).toBe(5);
    const appended = await store.append('wallet-a', [{ type: 'Appended', data: {} }], 5);
    expect(appended).toEqual({ nextExpectedRevision: 6, position: Number(log.at(-1)!.log) * 4 });
    expect(client.calls.at(-1)!.options).toMatchObject({ stream: 'wallet-a', fromRevision: 6n });
    expectBoundedAndClosed(client, 1);
  });
});

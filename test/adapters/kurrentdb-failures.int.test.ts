/**
 * How the KurrentDB adapter handles failures around a call, on a REAL client instance
 * (`KurrentDBClient.connectionString`, pointed at a closed port) whose network methods are stubbed: the
 * append answers as the client answers after the server committed (`multiStreamAppend`'s
 * `{position, responses}`, `appendToStream`'s `{nextExpectedRevision, position}`), and the reads fail or stall
 * as the client's reads do in a leader election or a partition (its UnavailableError, or a bridge iterator that
 * never answers). This proves the adapter's handling, not KurrentDB's behaviour: where the server puts the
 * position of an append (the log position of the append's last event, its `CommitPosition`) is read from
 * KurrentDB's source and documented in kurrentdb-event-store.ts; the contract suite on a real server
 * (kurrentdb-event-store.int.test.ts, with KURRENTDB_URL) checks it.
 */
import { KurrentDBClient, UnavailableError as ClientUnavailableError } from '@kurrent/kurrentdb-client';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  openKurrentDbEventStore,
  type KurrentDbEventStoreOptions,
} from '../../src/adapters/kurrentdb/kurrentdb-event-store.ts';
import { EventStoreUnavailableError, type EventStore } from '../../src/ports/event-store.ts';

const CLOSED = 'kurrentdb://127.0.0.1:1?tls=false';
const stores: EventStore[] = [];

/** The adapter on a real client instance; the test stubs the client's methods it needs. */
function open(options: Partial<KurrentDbEventStoreOptions> = {}): { store: EventStore; client: KurrentDBClient } {
  const client = KurrentDBClient.connectionString(CLOSED);
  vi.spyOn(KurrentDBClient, 'connectionString').mockReturnValue(client);
  const store = openKurrentDbEventStore({ connectionString: CLOSED, ...options });
  stores.push(store);
  return { store, client };
}

afterEach(async () => {
  vi.restoreAllMocks();
  for (const store of stores.splice(0)) await store.close();
});

/** A read as the client returns it: an async iterable of resolved events (the bridge's iterator has only next()). */
function readOf(events: Array<{ stream: string; revision: number; log: number }>): AsyncIterable<unknown> {
  let i = 0;
  return {
    [Symbol.asyncIterator]: () => ({
      next: async () => {
        const event = events[i++];
        if (!event) return { done: true, value: undefined };
        const position = { commit: BigInt(event.log), prepare: BigInt(event.log) };
        return {
          done: false,
          value: {
            event: {
              streamId: event.stream,
              id: '00000000-0000-4000-8000-000000000001',
              type: 'Happened',
              revision: BigInt(event.revision),
              created: new Date(0),
              data: {},
              metadata: {},
              isJson: true,
              position,
            },
          },
        };
      },
    }),
  };
}

/** A read that fails as the client's reads fail while the leader is being elected. */
function failingRead(): AsyncIterable<unknown> {
  return {
    [Symbol.asyncIterator]: () => ({
      next: async () => Promise.reject(new ClientUnavailableError(undefined, 'no leader')),
    }),
  };
}

/** A read that never answers (a stalled call in the client's native bridge). */
function stalledRead(): AsyncIterable<unknown> {
  return { [Symbol.asyncIterator]: () => ({ next: () => new Promise(() => {}) }) };
}

const event = { type: 'Happened', data: {} };

describe('KurrentDB adapter (K1): a committed append is never reported as failed', () => {
  it('given a multi-stream append that committed, when every read-back of a position fails, then the append still succeeds: revisions from the answer, positions as known', async () => {
    const { store, client } = open();
    vi.spyOn(client, 'multiStreamAppend').mockResolvedValue({
      position: 1000n,
      responses: [
        { streamName: 'operation-1', revision: 0n },
        { streamName: 'wallet-1', revision: 7n },
      ],
    });
    const reads = vi.spyOn(client, 'readStream').mockImplementation(() => failingRead() as never);
    const results = await store.appendMulti([
      { stream: 'operation-1', events: [event], expectedRevision: 'no_stream' },
      { stream: 'wallet-1', events: [event], expectedRevision: 6 },
    ]);
    // The last stream's last event is the append's own position (4 x 1000); the other stream's could not be read
    // back, so it gets the append's position too: at or after its last event, inside the same atomic commit.
    expect(results).toEqual([
      { nextExpectedRevision: 0, position: 4000 },
      { nextExpectedRevision: 7, position: 4000 },
    ]);
    expect(reads.mock.calls.length).toBeGreaterThan(1); // retried before answering with what is known
    expect(reads.mock.calls.every(([stream]) => stream === 'operation-1')).toBe(true);
  });

  it('given a multi-stream append that committed, when a read-back fails once, then it is retried and the exact position returned', async () => {
    const { store, client } = open();
    vi.spyOn(client, 'multiStreamAppend').mockResolvedValue({
      position: 1000n,
      responses: [
        { streamName: 'operation-1', revision: 0n },
        { streamName: 'wallet-1', revision: 7n },
      ],
    });
    let calls = 0;
    vi.spyOn(client, 'readStream').mockImplementation(
      () => (calls++ === 0 ? failingRead() : readOf([{ stream: 'operation-1', revision: 0, log: 900 }])) as never,
    );
    const results = await store.appendMulti([
      { stream: 'operation-1', events: [event], expectedRevision: 'no_stream' },
      { stream: 'wallet-1', events: [event], expectedRevision: 6 },
    ]);
    expect(results).toEqual([
      { nextExpectedRevision: 0, position: 3600 },
      { nextExpectedRevision: 7, position: 4000 },
    ]);
  });

  it('given a single-stream append that committed, when its answer carries the position, then no read-back is made (none can fail it)', async () => {
    const { store, client } = open();
    vi.spyOn(client, 'appendToStream').mockResolvedValue({
      success: true,
      nextExpectedRevision: 3n,
      position: { commit: 500n, prepare: 500n },
    });
    const reads = vi.spyOn(client, 'readStream').mockImplementation(() => failingRead() as never);
    expect(await store.append('wallet-1', [event, event], 1)).toEqual({ nextExpectedRevision: 3, position: 2000 });
    expect(reads).not.toHaveBeenCalled();
  });
});

describe('KurrentDB adapter (K6): every read has a deadline', () => {
  const outcome = <T>(promise: Promise<T>, ms = 2_000) =>
    Promise.race([
      promise.then(
        (value) => ({ value }),
        (error: unknown) => ({ error }),
      ),
      new Promise<{ stalled: true }>((resolve) => setTimeout(() => resolve({ stalled: true }), ms)),
    ]);

  it('given a read that never answers, when a stream, $all or the head is read, then each fails as unavailable at the deadline instead of waiting for ever', async () => {
    const { store, client } = open({ readDeadlineMs: 100 });
    vi.spyOn(client, 'readStream').mockImplementation(() => stalledRead() as never);
    vi.spyOn(client, 'readAll').mockImplementation(() => stalledRead() as never);
    const reads: Array<() => Promise<unknown>> = [
      () => store.readStream('wallet-1'),
      () => store.readAll({ maxCount: 10 }),
      () => store.headPosition(),
    ];
    for (const read of reads) {
      const started = Date.now();
      const result = await outcome(read());
      expect(result).toMatchObject({ error: expect.any(EventStoreUnavailableError) });
      expect((result as { error: Error }).error.message).toMatch(/did not answer .* 100 ms/);
      expect(Date.now() - started).toBeLessThan(1_500);
    }
  });

  it('given the read-back of a committed multi-stream append that never answers, when the deadline passes, then the append still answers with what is known', async () => {
    const { store, client } = open({ readDeadlineMs: 50 });
    vi.spyOn(client, 'multiStreamAppend').mockResolvedValue({
      position: 1000n,
      responses: [
        { streamName: 'operation-1', revision: 0n },
        { streamName: 'wallet-1', revision: 7n },
      ],
    });
    vi.spyOn(client, 'readStream').mockImplementation(() => stalledRead() as never);
    const result = await outcome(
      store.appendMulti([
        { stream: 'operation-1', events: [event], expectedRevision: 'no_stream' },
        { stream: 'wallet-1', events: [event], expectedRevision: 6 },
      ]),
    );
    expect(result).toEqual({
      value: [
        { nextExpectedRevision: 0, position: 4000 },
        { nextExpectedRevision: 7, position: 4000 },
      ],
    });
  });

  it('when the deadline option is not a positive integer, then the adapter refuses to open', () => {
    expect(() => openKurrentDbEventStore({ connectionString: CLOSED, readDeadlineMs: 0 })).toThrow(/readDeadlineMs/);
  });
});

/**
 * The hash-chain decorator on the embedded store: every event carries its hash and its stream's previous
 * hash, whatever the expected revision, for single and multi-stream appends, back-to-back appends that
 * are still in flight, and two store instances on one file (two processes).
 */
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openSqliteEventStore } from '../../src/adapters/sqlite/sqlite-event-store.ts';
import { canonicalJson } from '../../src/shared/canonical-json.ts';
import { GENESIS_HASH, eventHash, isHashChained, unwrapHashChain, withHashChain } from '../../src/audit/hash-chain.ts';
import { ChainChecker, type AuditProblem } from '../../src/audit/verify.ts';
import {
  type EventStore,
  type NewEvent,
  type RecordedEvent,
  WrongExpectedVersionError,
} from '../../src/ports/event-store.ts';
import { tempDir } from '../support/temp-dir.ts';

const event = (n: number, extra: Record<string, unknown> = {}): NewEvent => ({
  type: 'Happened',
  data: { n, ...extra },
  metadata: { actor: 'operator:test', correlationId: `c-${n}` },
});

/** Every problem a full replay of the store finds with the chains (none when every stream chains). */
async function chainProblems(store: EventStore): Promise<AuditProblem[]> {
  const problems: AuditProblem[] = [];
  const checker = new ChainChecker({ add: (problem) => problems.push(problem) });
  for (const recorded of await store.readAll()) checker.check(recorded);
  return problems;
}

function expectChained(events: RecordedEvent[]): void {
  let previous = GENESIS_HASH;
  events.forEach((recorded, revision) => {
    expect(recorded.revision).toBe(revision);
    expect(recorded.metadata.previousHash).toBe(previous);
    expect(recorded.metadata.hash).toBe(eventHash(recorded));
    previous = recorded.metadata.hash as string;
  });
}

describe('withHashChain', () => {
  let dir: ReturnType<typeof tempDir>;
  let raw: EventStore;
  let store: EventStore;
  const file = () => join(dir.path, 'events.sqlite');

  beforeEach(() => {
    dir = tempDir('hash-chain-');
    raw = openSqliteEventStore({ file: file() });
    store = withHashChain(raw);
  });
  afterEach(async () => {
    await store.close();
    dir.cleanup();
  });

  it('when events are appended to two streams, then each stream chains from the genesis hash, independently', async () => {
    await store.append('a-1', [event(1), event(2)], 'no_stream');
    await store.append('b-1', [event(3)], 'no_stream');
    await store.append('a-1', [event(4)], 1);
    await store.append('b-1', [event(5)], 'stream_exists');
    await store.append('a-1', [event(6)], 'any');

    const a = await store.readStream('a-1');
    const b = await store.readStream('b-1');
    expect(a.map((e) => (e.data as { n: number }).n)).toEqual([1, 2, 4, 6]);
    expectChained(a);
    expectChained(b);
    expect(a[0]!.metadata).toMatchObject({ actor: 'operator:test', correlationId: 'c-1', previousHash: GENESIS_HASH });
    expect(await chainProblems(store)).toEqual([]);
  });

  it('when a hash is computed, then it covers the id, the stream, the revision, the type, the data and the metadata but no key order', async () => {
    await store.append(
      'a-1',
      [
        {
          id: '00000000-0000-4000-8000-000000000001',
          type: 'T',
          data: { b: 1, a: { y: [1, 'x'], x: null } },
          metadata: { z: 1, actor: 'x' },
        },
      ],
      'no_stream',
    );
    const [stored] = await store.readStream('a-1');
    expect(stored!.id).toBe('00000000-0000-4000-8000-000000000001');
    const reordered = { ...stored!, data: { a: { x: null, y: [1, 'x'] }, b: 1 } };
    expect(eventHash(reordered)).toBe(stored!.metadata.hash);
    for (const changed of [
      { id: '00000000-0000-4000-8000-000000000002' },
      { stream: 'a-2' },
      { revision: 1 },
      { type: 'U' },
      { data: { b: 2, a: { y: [1, 'x'], x: null } } },
      { metadata: { ...stored!.metadata, z: 2 } },
    ]) {
      expect(eventHash({ ...stored!, ...changed })).not.toBe(stored!.metadata.hash);
    }
    expect(canonicalJson({ b: [undefined, 1], a: undefined, c: 'é"\n', d: -0 })).toBe(
      '{"b":[null,1],"c":"é\\"\\n","d":0}',
    );
  });

  it('when the store keeps the JSON the chain made to hash an event, then the event reads back as JSON.stringify would have stored it', async () => {
    const data = {
      z: 'é😀\n',
      a: [3, undefined, { y: -0, x: NaN }],
      skipped: undefined,
      at: new Date('2026-11-23T07:00:00.000Z'),
      '10': 1,
      '9': 2,
    };
    const metadata = {
      correlationId: 'c-1',
      actor: 'operator:test',
      causationId: undefined,
      hash: 'forged',
      previousHash: 'forged',
    };
    await store.append('a-1', [{ type: 'T', data, metadata }], 'no_stream');
    await store.append('a-1', [{ type: 'T', data: { b: 1 }, metadata: {} }], 0);
    const stored = await raw.readStream('a-1');
    expect(stored[0]!.data).toEqual(JSON.parse(JSON.stringify(data)));
    expect(stored[0]!.metadata).toEqual({
      correlationId: 'c-1',
      actor: 'operator:test',
      previousHash: GENESIS_HASH,
      hash: stored[0]!.metadata.hash,
    });
    expect(stored[1]!.metadata).toEqual({ previousHash: stored[0]!.metadata.hash, hash: stored[1]!.metadata.hash });
    expectChained(stored);
    expect(await chainProblems(raw)).toEqual([]);
  });

  it("when an event's metadata already carries a hash and a previousHash, then the chain's replace them and the caller's metadata is left as given", async () => {
    const given = { actor: 'operator:test', correlationId: 'c-1', hash: 'forged', previousHash: 'forged' };
    const plain = { actor: 'operator:test', correlationId: 'c-2' };
    await store.append('m-1', [{ type: 'Happened', data: { n: 1 }, metadata: given }], 'no_stream');
    await store.append('m-1', [{ type: 'Happened', data: { n: 2 }, metadata: plain }], 0);
    const stored = await store.readStream('m-1');
    expectChained(stored);
    expect(stored.map((recorded) => recorded.metadata.correlationId)).toEqual(['c-1', 'c-2']);
    expect(given).toEqual({ actor: 'operator:test', correlationId: 'c-1', hash: 'forged', previousHash: 'forged' });
    expect(plain).toEqual({ actor: 'operator:test', correlationId: 'c-2' });
  });

  it('when appendMulti writes several streams, then every stream chains and the call stays atomic', async () => {
    await store.append('a-1', [event(1)], 'no_stream');
    await store.appendMulti([
      { stream: 'a-1', events: [event(2), event(3)], expectedRevision: 0 },
      { stream: 'b-1', events: [event(4)], expectedRevision: 'no_stream' },
      { stream: 'c-1', events: [event(5)], expectedRevision: 'any' },
    ]);
    await expect(
      store.appendMulti([
        { stream: 'a-1', events: [event(6)], expectedRevision: 2 },
        { stream: 'b-1', events: [event(7)], expectedRevision: 5 },
      ]),
    ).rejects.toBeInstanceOf(WrongExpectedVersionError);
    expect(await raw.readStream('a-1')).toHaveLength(3);
    expectChained(await store.readStream('a-1'));
    expectChained(await store.readStream('b-1'));
    expectChained(await store.readStream('c-1'));
  });

  it('given a failed append, when the stream is appended to again, then it chains on what was stored, not on the failed events', async () => {
    await store.append('a-1', [event(1)], 'no_stream');
    // The cache now holds the head that this failed call would have written: it must be dropped.
    await expect(
      store.appendMulti([
        { stream: 'a-1', events: [event(2)], expectedRevision: 0 },
        { stream: 'b-1', events: [event(3)], expectedRevision: 0 },
      ]),
    ).rejects.toBeInstanceOf(WrongExpectedVersionError);
    await store.append('a-1', [event(4)], 0);
    await store.append('a-1', [event(5)], 'any');
    const a = await store.readStream('a-1');
    expect(a.map((e) => (e.data as { n: number }).n)).toEqual([1, 4, 5]);
    expectChained(a);
  });

  it('when appends on one stream are submitted back to back without waiting (speculatively), then they all commit and chain', async () => {
    const results = await Promise.all([
      store.append('a-1', [event(1)], 'no_stream'),
      store.append('a-1', [event(2), event(3)], 0),
      store.appendMulti([
        { stream: 'a-1', events: [event(4)], expectedRevision: 2 },
        { stream: 'b-1', events: [event(5)], expectedRevision: 'no_stream' },
      ]),
      store.append('a-1', [event(6)], 'any'),
      store.append('a-1', [event(7)], 4),
    ]);
    expect(
      results.map((r) => ('nextExpectedRevision' in r ? r.nextExpectedRevision : r[0]!.nextExpectedRevision)),
    ).toEqual([0, 2, 3, 4, 5]);
    const a = await store.readStream('a-1');
    expect(a.map((e) => (e.data as { n: number }).n)).toEqual([1, 2, 3, 4, 6, 7]);
    expectChained(a);
  });

  it('given an in-flight append that fails, when an append was chained on it, then that one fails too instead of committing on another head', async () => {
    const other = withHashChain(openSqliteEventStore({ file: file() }));
    try {
      await store.append('a-1', [event(1)], 'no_stream');
      // Another process appends one event: our cache still believes revision 0 is the head.
      await other.append('a-1', [event(2)], 0);
      const first = store.append('a-1', [event(3)], 0); // fails: revision 1 exists
      const second = store.append('a-1', [event(4)], 1); // built on the first: its expected revision matches the OTHER event
      await expect(first).rejects.toBeInstanceOf(WrongExpectedVersionError);
      await expect(second).rejects.toBeInstanceOf(WrongExpectedVersionError);
      await store.append('a-1', [event(5)], 1);
      const a = await store.readStream('a-1');
      expect(a.map((e) => (e.data as { n: number }).n)).toEqual([1, 2, 5]);
      expectChained(a);
    } finally {
      await other.close();
    }
  });

  it('given another process appending to the same stream, when appending with any, then the conflict is retried at the new head and the chain holds', async () => {
    const other = withHashChain(openSqliteEventStore({ file: file() }));
    try {
      await store.append('a-1', [event(1)], 'any');
      await other.append('a-1', [event(2)], 'any');
      await store.append('a-1', [event(3)], 'any'); // stale cache (head 0): WrongExpectedVersion inside, retried
      await other.append('a-1', [event(4)], 'stream_exists');
      await Promise.all([store.append('a-1', [event(5)], 'any'), other.append('a-1', [event(6)], 'any')]);
      const a = await store.readStream('a-1');
      expect(a).toHaveLength(6);
      expectChained(a);
      expect(await chainProblems(store)).toEqual([]);
    } finally {
      await other.close();
    }
  });

  it('when stream_exists names a missing stream or a revision is wrong, then the append fails as on the raw store', async () => {
    await expect(store.append('nope-1', [event(1)], 'stream_exists')).rejects.toMatchObject({
      stream: 'nope-1',
      expected: 'stream_exists',
      actual: 'no_stream',
    });
    await store.append('a-1', [event(1)], 'no_stream');
    await expect(store.append('a-1', [event(2)], 'no_stream')).rejects.toBeInstanceOf(WrongExpectedVersionError);
    await expect(store.append('a-1', [event(2)], 3)).rejects.toMatchObject({ stream: 'a-1', expected: 3, actual: 0 });
    await expect(store.appendMulti([])).rejects.toThrow(/at least one stream/);
    await expect(store.append('a-1', [{ type: 'T', data: undefined }], 0)).rejects.toThrow();
    await store.append('a-1', [event(3)], 0); // the refused call left nothing behind
    expectChained(await store.readStream('a-1'));
  });

  it('when wrapped twice or unwrapped, then the decorator is applied once and the raw store is reachable (for imports)', () => {
    expect(withHashChain(store)).toBe(store);
    expect(isHashChained(store)).toBe(true);
    expect(unwrapHashChain(store)).toBe(raw);
    expect(unwrapHashChain(raw)).toBe(raw);
  });

  it('given a stream written before the chain existed, when it is appended to, then the new event links to the old one by its content hash', async () => {
    await raw.append('old-1', [event(1)], 'no_stream');
    await store.append('old-1', [event(2)], 0);
    const [legacy, chained] = await store.readStream('old-1');
    expect(legacy!.metadata.hash).toBeUndefined();
    expect(chained!.metadata.previousHash).toBe(eventHash(legacy!));
    expect(await chainProblems(store)).toEqual([]);
  });
});

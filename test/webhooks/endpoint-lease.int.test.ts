import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openSqliteReadStore } from '../../src/adapters/sqlite/sqlite-read-store.ts';
import { withReadStoreFaults } from '../../src/faults/fault-injection.ts';
import type { ReadStore } from '../../src/ports/read-store.ts';
import { EndpointLeases, WEBHOOK_LEASES_COLLECTION } from '../../src/webhooks/endpoint-lease.ts';
import { tempDir } from '../support/temp-dir.ts';

/**
 * The webhook endpoints' heartbeat lease on the embedded read store: two "processes" (two EndpointLeases), each
 * with its own monotonic clock that the test moves. No wall clock is read anywhere.
 */
let dir: ReturnType<typeof tempDir>;
let readStore: ReadStore;
beforeEach(() => {
  dir = tempDir('endpoint-lease-');
  readStore = openSqliteReadStore({ file: join(dir.path, 'read-models.sqlite') });
  return readStore.defineCollections([{ name: 'log' }, WEBHOOK_LEASES_COLLECTION]);
});
afterEach(async () => {
  await readStore.close();
  dir.cleanup();
});

const LEASE_MS = 1_000;
const ENDPOINT = 'whe_1';
const processAt = () => {
  const clock = { now: 0 };
  return { leases: new EndpointLeases(readStore, LEASE_MS, () => clock.now), clock };
};
const entry = (id: string) => [{ op: 'upsert' as const, collection: 'log', doc: { id } }];
/**
 * A "process" whose read store loses answers on demand (the fault injector, its draws scripted): `lose('after')`
 * makes its next call happen but fail as if the connection dropped before the answer, `lose('before')` fail unmade.
 */
const processWithFaults = () => {
  const draws: number[] = [];
  const faulty = withReadStoreFaults(readStore, {
    errorRate: 0.5,
    latencyMs: 0,
    hangRate: 0,
    hangMs: 0,
    random: () => draws.shift() ?? 0.99,
  });
  const clock = { now: 0 };
  const lose = (side: 'before' | 'after') => draws.push(0, side === 'after' ? 0 : 0.99);
  return { leases: new EndpointLeases(faulty, LEASE_MS, () => clock.now), clock, lose };
};

describe('the heartbeat lease on a webhook endpoint', () => {
  it('when the lease is free, then the first process takes it and another does not', async () => {
    const [a, b] = [processAt(), processAt()];
    expect(await a.leases.hold(ENDPOINT, 100)).toBe(true);
    expect(await b.leases.hold(ENDPOINT, 100)).toBe(false);
  });

  it('when the holder keeps beating, then a peer never takes the lease over, however long it watches', async () => {
    const [a, b] = [processAt(), processAt()];
    await a.leases.hold(ENDPOINT, 100);
    for (let i = 0; i < 10; i++) {
      expect(await b.leases.hold(ENDPOINT, 100)).toBe(false);
      [a.clock.now, b.clock.now] = [a.clock.now + 600, b.clock.now + 600];
      expect(await a.leases.commitUnder(ENDPOINT, entry(`beat-${i}`))).toBe(true);
    }
    expect(await b.leases.hold(ENDPOINT, 100)).toBe(false);
  });

  it("when the beat has not moved for a lease of the peer's own clock, then the peer takes over, and the old holder's write is refused and not written", async () => {
    const [a, b] = [processAt(), processAt()];
    await a.leases.hold(ENDPOINT, 100);
    expect(await b.leases.hold(ENDPOINT, 100)).toBe(false); // first seen
    b.clock.now += LEASE_MS - 1;
    expect(await b.leases.hold(ENDPOINT, 100)).toBe(false);
    b.clock.now += 1;
    expect(await b.leases.hold(ENDPOINT, 100)).toBe(true);
    // The old holder, resumed (its clock did not move: it was paused), records what it did: refused.
    expect(await a.leases.commitUnder(ENDPOINT, entry('stale'))).toBe(false);
    expect(await readStore.get('log', 'stale')).toBeNull();
    expect(await b.leases.commitUnder(ENDPOINT, entry('fresh'))).toBe(true);
    expect(await a.leases.hold(ENDPOINT, 100)).toBe(false);
  });

  it("when the holder's own lease runs short, then it beats before going on, so a peer watching starts counting afresh", async () => {
    const [a, b] = [processAt(), processAt()];
    await a.leases.hold(ENDPOINT, 100);
    await b.leases.hold(ENDPOINT, 100);
    a.clock.now += 450;
    b.clock.now += 450;
    expect(await a.leases.hold(ENDPOINT, 100)).toBe(true); // 450 + 100 > 500: a beat
    b.clock.now += 600;
    expect(await b.leases.hold(ENDPOINT, 100)).toBe(false);
  });

  it('when the holder releases the lease, then a peer takes it at once', async () => {
    const [a, b] = [processAt(), processAt()];
    await a.leases.hold(ENDPOINT, 100);
    await a.leases.release(ENDPOINT);
    expect(await b.leases.hold(ENDPOINT, 100)).toBe(true);
    expect(await a.leases.hold(ENDPOINT, 100)).toBe(false);
  });

  it('when two peers take over the same dead lease, then only one gets it', async () => {
    const [a, b, c] = [processAt(), processAt(), processAt()];
    await a.leases.hold(ENDPOINT, 100);
    await Promise.all([b.leases.hold(ENDPOINT, 100), c.leases.hold(ENDPOINT, 100)]);
    b.clock.now += LEASE_MS;
    c.clock.now += LEASE_MS;
    const taken = await Promise.all([b.leases.hold(ENDPOINT, 100), c.leases.hold(ENDPOINT, 100)]);
    expect(taken.filter(Boolean)).toHaveLength(1);
  });

  it("when the answer to the holder's beat was lost after it was written, then the holder finds the lease its own at its next look, without waiting a lease, and a peer does not get it", async () => {
    const [a, b] = [processWithFaults(), processAt()];
    expect(await a.leases.hold(ENDPOINT, 100)).toBe(true);
    a.lose('after');
    await expect(a.leases.commitUnder(ENDPOINT, entry('recorded'))).rejects.toThrow(/before the answer/);
    expect(await readStore.get('log', 'recorded')).not.toBeNull();
    expect(await a.leases.hold(ENDPOINT, 100)).toBe(true);
    expect(await b.leases.hold(ENDPOINT, 100)).toBe(false);
    expect(await a.leases.commitUnder(ENDPOINT, entry('next'))).toBe(true);
  });

  it("when the holder's beat failed before it was written, then the holder keeps the lease at its next look", async () => {
    const a = processWithFaults();
    expect(await a.leases.hold(ENDPOINT, 100)).toBe(true);
    a.lose('before');
    await expect(a.leases.commitUnder(ENDPOINT, entry('unwritten'))).rejects.toThrow(/unavailable/);
    expect(await readStore.get('log', 'unwritten')).toBeNull();
    expect(await a.leases.hold(ENDPOINT, 100)).toBe(true);
    expect(await a.leases.commitUnder(ENDPOINT, entry('next'))).toBe(true);
  });

  it("when the holder's release failed, then the holder finds the lease its own at its next look", async () => {
    const a = processWithFaults();
    expect(await a.leases.hold(ENDPOINT, 100)).toBe(true);
    a.lose('before');
    await expect(a.leases.release(ENDPOINT)).rejects.toThrow(/unavailable/);
    expect(await a.leases.hold(ENDPOINT, 100)).toBe(true);
  });

  it('when a peer took over the lease meanwhile with the very beat whose answer the holder lost, then the old holder does not take it back', async () => {
    const [a, b] = [processWithFaults(), processAt()];
    expect(await a.leases.hold(ENDPOINT, 100)).toBe(true);
    expect(await b.leases.hold(ENDPOINT, 100)).toBe(false); // first seen
    // a's beat fails unwritten, and a stays away for a lease: b takes over, writing the beat a had tried to write.
    a.lose('before');
    await expect(a.leases.commitUnder(ENDPOINT, entry('unwritten'))).rejects.toThrow(/unavailable/);
    b.clock.now += LEASE_MS;
    expect(await b.leases.hold(ENDPOINT, 100)).toBe(true);
    expect(await a.leases.hold(ENDPOINT, 100)).toBe(false);
    expect(await a.leases.commitUnder(ENDPOINT, entry('stale'))).toBe(false);
    expect(await b.leases.commitUnder(ENDPOINT, entry('fresh'))).toBe(true);
    expect(await readStore.get('log', 'stale')).toBeNull();
  });

  it('when the holder finds its lost beat its own after a while, then it beats again before an attempt that would outlast its count', async () => {
    const [a, b] = [processWithFaults(), processAt()];
    expect(await a.leases.hold(ENDPOINT, 100)).toBe(true);
    a.lose('after');
    await expect(a.leases.commitUnder(ENDPOINT, entry('recorded'))).rejects.toThrow(/before the answer/);
    expect(await b.leases.hold(ENDPOINT, 100)).toBe(false); // b starts counting at the lost beat
    a.clock.now += 450;
    b.clock.now += 450;
    // Counted from when a began the lost write: 450 + 100 > 500, so a beats first; b counts afresh.
    expect(await a.leases.hold(ENDPOINT, 100)).toBe(true);
    b.clock.now += 600;
    expect(await b.leases.hold(ENDPOINT, 100)).toBe(false);
  });
});

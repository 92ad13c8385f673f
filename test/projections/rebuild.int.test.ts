/**
 * A rebuild's commits, at the ReadStore boundary: the embedded stores, with the read store's commits recorded.
 * MongoDB ends any transaction older than 60 s (transactionLifetimeLimitSeconds), so a rebuild that committed
 * the documents of 100,000 events in one transaction could never finish on a large history; this proves the
 * rebuild keeps every commit bounded, not what MongoDB does with them (no server runs here).
 */
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openSqliteEventStore } from '../../src/adapters/sqlite/sqlite-event-store.ts';
import { openSqliteReadStore } from '../../src/adapters/sqlite/sqlite-read-store.ts';
import type { EventStore } from '../../src/ports/event-store.ts';
import type { Checkpoint, Document, ReadStore, Write } from '../../src/ports/read-store.ts';
import type { Positioned, Projection } from '../../src/projections/projection.ts';
import { REBUILD_WRITES_PER_COMMIT, rebuildProjection } from '../../src/projections/rebuild.ts';
import { tempDir } from '../support/temp-dir.ts';

/** One document per wallet and one for all: a history of N wallets touches N + 1 documents. */
type CountDoc = Document & Positioned & { count: number };
const COUNTS: Projection<CountDoc> = {
  name: 'counts',
  collection: { name: 'counts', indexes: [['position']] },
  eventTypes: ['WalletCredited'],
  documentIds: (event) => ['all', `wallet:${(event.data as { wallet: { id: string } }).wallet.id}`],
  evolve: (doc, event, id) => ({ id, count: (doc?.count ?? 0) + 1, position: event.position }),
};

let dir: ReturnType<typeof tempDir>;
let eventStore: EventStore;
let readStore: ReadStore;
const commits: Array<{ writes: Write[]; checkpoint: Checkpoint | undefined }> = [];

beforeEach(async () => {
  dir = tempDir('rebuild-');
  eventStore = openSqliteEventStore({ file: join(dir.path, 'events.sqlite') });
  const inner = openSqliteReadStore({ file: join(dir.path, 'read-models.sqlite') });
  readStore = new Proxy(inner, {
    get(target, property, receiver) {
      if (property === 'commit') {
        return (writes: Write[], checkpoint?: Checkpoint) => {
          commits.push({ writes, checkpoint });
          return target.commit(writes, checkpoint);
        };
      }
      const value = Reflect.get(target, property, receiver) as unknown;
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  await readStore.defineCollections([COUNTS.collection]);
});
afterEach(async () => {
  commits.splice(0);
  await eventStore.close();
  await readStore.close();
  dir.cleanup();
});

describe('rebuild: bounded commits', () => {
  it('given a history touching more documents than one commit may carry, when rebuilt, then every commit stays within the bound, each is fenced by the shadow checkpoint, and the model is whole', async () => {
    const wallets = 2_500;
    await eventStore.append(
      'credits',
      Array.from({ length: wallets }, (_, i) => ({
        type: 'WalletCredited',
        data: { wallet: { kind: 'merchant', id: `m${i}` }, amount: '1.00' },
      })),
      'no_stream',
    );

    const result = await rebuildProjection({ eventStore, readStore }, COUNTS);

    expect(result.events).toBe(wallets);
    const shadowCommits = commits.filter((commit) => commit.writes.length > 0);
    expect(shadowCommits.length).toBeGreaterThanOrEqual(Math.ceil((wallets + 1) / REBUILD_WRITES_PER_COMMIT));
    for (const { writes, checkpoint } of shadowCommits) {
      expect(writes.length).toBeLessThanOrEqual(REBUILD_WRITES_PER_COMMIT);
      // Every chunk is fenced: a second rebuild of the same projection would be refused, not interleaved.
      expect(checkpoint).toMatchObject({ projection: 'counts__rebuild', expected: expect.any(Number) });
    }
    // Only the last chunk of a span moves the checkpoint to what was folded.
    expect(shadowCommits.at(-1)!.checkpoint!.position).toBe(result.position);
    expect(
      shadowCommits.slice(0, -1).every((commit) => commit.checkpoint!.position === commit.checkpoint!.expected),
    ).toBe(true);

    expect(await readStore.count('counts')).toBe(wallets + 1);
    expect((await readStore.get<CountDoc>('counts', 'all'))?.count).toBe(wallets);
    expect((await readStore.get<CountDoc>('counts', 'wallet:m2499'))?.count).toBe(1);
    expect(await readStore.getCheckpoint('counts')).toBe(result.position);
  });
});

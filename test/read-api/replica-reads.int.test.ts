import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openSqliteReadStore } from '../../src/adapters/sqlite/sqlite-read-store.ts';
import type { ReadStore } from '../../src/ports/read-store.ts';
import { ReadStoreUnavailableError } from '../../src/ports/read-store.ts';
import { withReplicaReads } from '../../src/read-api/replica-reads.ts';
import { tempDir } from '../support/temp-dir.ts';

/**
 * The replica's rule on two embedded read stores, one standing for the primary and one for its standby (the
 * standby's replay is what the test commits to it). The end-to-end run on PostgreSQL is
 * test/faults/postgres-read-replica.e2e.test.ts.
 */
const MODEL = { name: 'things-model', collection: { name: 'things' } };
const OTHER = { name: 'sessions' };

describe('reads through a replica (withReplicaReads)', () => {
  let dir: ReturnType<typeof tempDir>;
  let primary: ReadStore;
  let replica: ReadStore;

  beforeEach(async () => {
    dir = tempDir('replica-reads-');
    primary = openSqliteReadStore({ file: join(dir.path, 'primary.sqlite') });
    replica = openSqliteReadStore({ file: join(dir.path, 'replica.sqlite') });
    for (const store of [primary, replica]) await store.defineCollections([MODEL.collection, OTHER]);
  });

  afterEach(async () => {
    await Promise.allSettled([primary.close(), replica.close()]);
    dir.cleanup();
  });

  /** A projection's commit: the document and the model's checkpoint, on one store. */
  const project = (store: ReadStore, position: number, value: string) =>
    store.commit([{ op: 'upsert', collection: MODEL.collection.name, doc: { id: 'a', value } }], {
      projection: MODEL.name,
      position,
    });
  const reads = (waitMs: number) => withReplicaReads({ primary, replica, models: [MODEL], waitMs });

  it('given a replica as far as the primary, when a model is read, then the replica answers', async () => {
    await project(primary, 5, 'p5');
    await project(replica, 5, 'r5');
    const store = reads(200);
    expect(await store.get(MODEL.collection.name, 'a')).toMatchObject({ value: 'r5' });
    expect(await store.find(MODEL.collection.name)).toMatchObject([{ value: 'r5' }]);
    expect(store.counts).toEqual({ replica: 2, primary: 0 });
  });

  it('given a replica behind, when it catches up within the wait, then the read waits for it and the replica answers', async () => {
    await project(primary, 7, 'p7');
    await project(replica, 5, 'r5');
    const store = reads(2_000);
    const answer = store.get(MODEL.collection.name, 'a');
    setTimeout(() => void project(replica, 7, 'r7'), 50);
    expect(await answer).toMatchObject({ value: 'r7' });
    expect(store.counts).toEqual({ replica: 1, primary: 0 });
  });

  it('given a replica that stays behind, when the wait passes, then the primary answers, and the next reads at once until it catches up', async () => {
    await project(primary, 7, 'p7');
    await project(replica, 5, 'r5');
    const store = reads(600);
    expect(await store.get(MODEL.collection.name, 'a')).toMatchObject({ value: 'p7' });
    const started = performance.now();
    expect(await store.count(MODEL.collection.name)).toBe(1);
    expect(performance.now() - started).toBeLessThan(300);
    expect(store.counts).toEqual({ replica: 0, primary: 2 });
    await project(replica, 7, 'r7');
    expect(await store.get(MODEL.collection.name, 'a')).toMatchObject({ value: 'r7' });
  });

  it('given a failing replica, when a model is read, then the primary answers', async () => {
    await project(primary, 7, 'p7');
    const failing = { ...replica, getCheckpoint: () => Promise.reject(new ReadStoreUnavailableError('standby down')) };
    const store = withReplicaReads({ primary, replica: failing, models: [MODEL], waitMs: 1_000 });
    expect(await store.get(MODEL.collection.name, 'a')).toMatchObject({ value: 'p7' });
    expect(store.counts).toEqual({ replica: 0, primary: 1 });
  });

  it('when writing or reading what no projection builds, then the primary alone is used', async () => {
    const store = reads(100);
    await store.commit([{ op: 'upsert', collection: OTHER.name, doc: { id: 's', user: 'u' } }]);
    expect(await store.get(OTHER.name, 's')).toMatchObject({ user: 'u' });
    expect(await replica.get(OTHER.name, 's')).toBeNull();
    expect(await store.take(OTHER.name, 's')).toMatchObject({ user: 'u' });
    await project(store, 3, 'p3');
    expect(await store.getCheckpoint(MODEL.name)).toBe(3);
    expect(await replica.getCheckpoint(MODEL.name)).toBeNull();
    expect(store.counts).toEqual({ replica: 0, primary: 0 });
  });
});

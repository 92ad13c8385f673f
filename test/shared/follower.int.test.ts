/**
 * The one follower of the event stream, on the real embedded stores: its checkpoint moves only over what is
 * handled and contiguously (an event settled later holds it back), an exclusive checkpoint moved by someone
 * else makes it resume from theirs, a shared one only moves forward, and a handler that asks to resubscribe
 * is not counted as a failure.
 */
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openSqliteEventStore } from '../../src/adapters/sqlite/sqlite-event-store.ts';
import { openSqliteReadStore } from '../../src/adapters/sqlite/sqlite-read-store.ts';
import type { EventStore, RecordedEvent } from '../../src/ports/event-store.ts';
import type { ReadStore, Write } from '../../src/ports/read-store.ts';
import {
  batched,
  checkpointIn,
  conflict,
  exclusiveCheckpoint,
  failOnCommit,
  Follower,
  sharedCheckpoint,
  type FollowerOptions,
} from '../../src/shared/follower.ts';
import { waitFor } from '../support/system.ts';
import { tempDir } from '../support/temp-dir.ts';

const SILENT = { info() {}, warn() {} };
const FAST = { baseDelayMs: 10, maxDelayMs: 50 };

let dir: ReturnType<typeof tempDir>;
let eventStore: EventStore;
let readStore: ReadStore;
const followers: Follower[] = [];

beforeEach(async () => {
  dir = tempDir('follower-');
  eventStore = openSqliteEventStore({ file: join(dir.path, 'events.sqlite') });
  readStore = openSqliteReadStore({ file: join(dir.path, 'read-models.sqlite') });
  await readStore.defineCollections([{ name: 'seen' }]);
});
afterEach(async () => {
  for (const follower of followers.splice(0)) await follower.stop();
  await eventStore.close();
  await readStore.close();
  dir.cleanup();
});

async function append(count: number, type = 'Ticked'): Promise<number[]> {
  const positions: number[] = [];
  for (let i = 0; i < count; i++)
    positions.push((await eventStore.append('ticks-1', [{ type, data: { i } }], 'any')).position);
  return positions;
}

function follow(options: Partial<FollowerOptions> & Pick<FollowerOptions, 'handle' | 'checkpoint'>): Follower {
  const follower = new Follower({ name: 'test', eventStore, logger: SILENT, supervision: FAST, ...options });
  followers.push(follower);
  follower.start();
  return follower;
}

/** A promise the test settles. */
function deferred() {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

describe('the follower', () => {
  it('given events handled with writes, when it stops and starts again, then it resumes after its checkpoint and handles each event once', async () => {
    const handled: number[] = [];
    const handle = async (batch: RecordedEvent[]) => {
      handled.push(...batch.map((event) => event.position));
      return batch.map((event) => ({ op: 'upsert' as const, collection: 'seen', doc: { id: String(event.position) } }));
    };
    await append(3);
    const first = follow({ checkpoint: exclusiveCheckpoint(readStore, 'test'), handle });
    await waitFor(() => handled.length === 3);
    await first.stop();
    await append(2);
    follow({ checkpoint: exclusiveCheckpoint(readStore, 'test'), handle });
    await waitFor(() => handled.length === 5);
    expect(new Set(handled).size).toBe(5);
    expect(await readStore.count('seen')).toBe(5);
    expect(await readStore.getCheckpoint('test')).toBe(handled.at(-1));
  });

  it('given an event settled later, when the events after it are settled, then the checkpoint stays before it until it settles too', async () => {
    const [p1, p2, p3] = await append(3);
    const slow = deferred();
    const follower = follow({
      checkpoint: sharedCheckpoint(readStore, 'shared'),
      settling: { ...failOnCommit, retryCommitMs: 10 },
      handle: async (batch, context) =>
        batch.forEach((event) =>
          context.settleLater(event.position, event.position === p2 ? slow.promise : Promise.resolve()),
        ),
    });
    await waitFor(() => follower.handledPosition === p1);
    await waitFor(async () => (await readStore.getCheckpoint('shared')) === p1);
    slow.resolve();
    await waitFor(async () => (await readStore.getCheckpoint('shared')) === p3);
  });

  it('given a shared checkpoint another process moved further, when this follower commits an older position, then the checkpoint does not go back', async () => {
    const positions = await append(3);
    await readStore.commit([], { projection: 'shared', position: positions[2]! + 100, expected: null });
    const policy = sharedCheckpoint(readStore, 'shared');
    await policy.commit(positions[1]!, []);
    expect(await readStore.getCheckpoint('shared')).toBe(positions[2]! + 100);
  });

  it('given an exclusive checkpoint moved by someone else, when its policy commits, then it answers a conflict as data and writes nothing', async () => {
    const policy = exclusiveCheckpoint(readStore, 'moved');
    expect(await policy.load({ eventStore })).toBeNull();
    await readStore.commit([], { projection: 'moved', position: 5, expected: null });
    const writes: Write[] = [{ op: 'upsert', collection: 'seen', doc: { id: 'stale' } }];
    expect(await policy.commit(3, writes)).toMatchObject({ kind: 'conflict' });
    expect(await readStore.get('seen', 'stale')).toBeNull();
    expect(await readStore.getCheckpoint('moved')).toBe(5);
  });

  it('given an exclusive checkpoint moved by someone else, when the follower commits, then nothing of its batch is written and it resumes from their checkpoint', async () => {
    const [p1, p2, p3] = await append(3);
    const gate = deferred();
    const batches: number[][] = [];
    follow({
      checkpoint: exclusiveCheckpoint(readStore, 'x'),
      batchSize: 1,
      handle: async (batch) => {
        batches.push(batch.map((event) => event.position));
        if (batches.length === 1) await gate.promise;
        return [{ op: 'upsert', collection: 'seen', doc: { id: `from-${batch[0]!.position}` } }];
      },
    });
    await waitFor(() => batches.length === 1);
    // Another writer (a promoted rebuild) moved the checkpoint to p2 meanwhile.
    await readStore.commit([], { projection: 'x', position: p2!, expected: null });
    gate.resolve();
    await waitFor(() => batches.some(([position]) => position === p3));
    expect(await readStore.get('seen', `from-${p1}`)).toBeNull();
    expect(batches.flat()).not.toContain(p2); // resumed after their checkpoint
    await waitFor(async () => (await readStore.getCheckpoint('x')) === p3);
  });

  it('given a handler that answers a conflict, then the session starts again from the checkpoint and no failure is counted', async () => {
    await append(2);
    let position: number | null = null;
    let resubscribed = 0;
    const follower = follow({
      checkpoint: checkpointIn(() => position),
      handle: async (batch) => {
        if (resubscribed === 0) {
          resubscribed += 1;
          return conflict('the ground moved');
        }
        position = batch.at(-1)!.position;
      },
    });
    await waitFor(() => position !== null);
    expect(follower.consumer.status()).toMatchObject({ totalFailures: 0 });
  });

  it('given work beside a follower, when it starts and stops, then that work starts with it and stops, in order, before its last commit', async () => {
    const [p1] = await append(1);
    const steps: string[] = [];
    const shared = sharedCheckpoint(readStore, 'beside');
    const follower = follow({
      checkpoint: batched(
        { ...shared, commit: (position, writes) => (steps.push('commit'), shared.commit(position, writes)) },
        { positions: 1000, ms: 60_000 },
      ),
      handle: async () => {},
      beside: [
        { start: () => steps.push('start a'), stop: async () => void steps.push('stop a') },
        { stop: async () => void steps.push('stop b') },
      ],
    });
    await waitFor(() => follower.handledPosition === p1);
    expect(steps).toEqual(['start a']);
    await follower.stop();
    expect(steps).toEqual(['start a', 'stop a', 'stop b', 'commit']);
    expect(await readStore.getCheckpoint('beside')).toBe(p1);
  });

  it('given a handler that fails, then the failure is counted and the events are delivered again from the checkpoint', async () => {
    const [p1] = await append(1);
    const deliveries: number[] = [];
    const follower = follow({
      checkpoint: exclusiveCheckpoint(readStore, 'f'),
      handle: async (batch) => {
        deliveries.push(batch[0]!.position);
        if (deliveries.length === 1) throw new Error('handler failed');
        return [];
      },
    });
    await waitFor(() => deliveries.length === 2);
    expect(deliveries).toEqual([p1, p1]);
    await waitFor(async () => (await readStore.getCheckpoint('f')) === p1);
    expect(follower.consumer.status()).toMatchObject({ totalFailures: 1, lastError: 'handler failed' });
  });

  it('given a batch whose commit with its writes failed, when the follower stops before its next session, then the checkpoint does not pass the batch and the next start writes it', async () => {
    const [p1] = await append(1);
    const exclusive = exclusiveCheckpoint(readStore, 'lost');
    let failNext = false;
    // The first batch commits; the second's commit is lost (nothing written), as with a dropped connection.
    const flaky = {
      load: (stream: Parameters<typeof exclusive.load>[0]) => exclusive.load(stream),
      async commit(position: number, writes: Write[]) {
        if (failNext && writes.length > 0) throw new Error('connection lost (before the commit)');
        return exclusive.commit(position, writes);
      },
    };
    const toDocs = async (batch: RecordedEvent[]) =>
      batch.map((event) => ({ op: 'upsert' as const, collection: 'seen', doc: { id: String(event.position) } }));
    // A backoff longer than the test: stop() comes while the failed session waits to be retried.
    const first = new Follower({
      name: 'lost',
      eventStore,
      logger: SILENT,
      supervision: { baseDelayMs: 60_000, maxDelayMs: 60_000 },
      checkpoint: flaky,
      batchSize: 1,
      handle: toDocs,
    });
    first.start();
    await waitFor(async () => (await readStore.getCheckpoint('lost')) === p1);
    failNext = true;
    const [p2] = await append(1);
    await waitFor(() => first.consumer.status().totalFailures === 1);
    await first.stop();
    expect(
      await readStore.getCheckpoint('lost'),
      'the checkpoint, after a batch whose writes were never committed',
    ).toBe(p1);

    follow({ checkpoint: exclusiveCheckpoint(readStore, 'lost'), handle: toDocs });
    await waitFor(async () => (await readStore.getCheckpoint('lost')) === p2);
    expect((await readStore.find<{ id: string }>('seen')).map((doc) => Number(doc.id)).sort((a, b) => a - b)).toEqual([
      p1,
      p2,
    ]);
  });

  it('given at most two events waiting to settle, then the follower reads no more until one settles', async () => {
    await append(4);
    const waiting = [deferred(), deferred(), deferred(), deferred()];
    const delivered: number[] = [];
    follow({
      checkpoint: sharedCheckpoint(readStore, 'bounded'),
      batchSize: 1,
      settling: { ...failOnCommit, maxUnsettled: 2 },
      handle: async (batch, context) => {
        for (const event of batch) {
          delivered.push(event.position);
          context.settleLater(event.position, waiting[delivered.length - 1]!.promise);
        }
      },
    });
    await waitFor(() => delivered.length === 2);
    await new Promise((resolve) => setTimeout(resolve, 100)); // time for a third delivery, which must not come
    expect(delivered).toHaveLength(2);
    waiting[0]!.resolve();
    await waitFor(() => delivered.length === 3);
  });

  it('given a handler that writes nothing and a batched checkpoint, then the checkpoint moves only once enough positions passed', async () => {
    const positions = await append(5);
    follow({
      checkpoint: batched(exclusiveCheckpoint(readStore, 'sparse'), { positions: 3, ms: 60_000 }),
      batchSize: 1,
      handle: async () => [],
    });
    await waitFor(async () => (await readStore.getCheckpoint('sparse')) === positions[2]);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(await readStore.getCheckpoint('sparse')).toBe(positions[2]);
  });

  it('given a handler that writes nothing and a batched checkpoint, when no batch comes after the last, then the held-back checkpoint is committed once its time has come', async () => {
    const positions = await append(2);
    follow({
      checkpoint: batched(exclusiveCheckpoint(readStore, 'idle'), { positions: 1000, ms: 150 }),
      handle: async () => [],
    });
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await readStore.getCheckpoint('idle')).toBeNull();
    await waitFor(async () => (await readStore.getCheckpoint('idle')) === positions[1], 2000);
  });

  it('given a checkpoint held back by a batched policy, when someone waits for it (read-your-writes), then it is committed at once', async () => {
    const positions = await append(2);
    const follower = follow({
      checkpoint: batched(exclusiveCheckpoint(readStore, 'awaited'), { positions: 1000, ms: 60_000 }),
      handle: async () => [],
    });
    await waitFor(() => follower.handledPosition === positions[1]);
    expect(await readStore.getCheckpoint('awaited')).toBeNull();
    expect(await follower.untilCommitted(positions[1]!, 2000)).toBe(true);
    expect(await readStore.getCheckpoint('awaited')).toBe(positions[1]);
  });
});

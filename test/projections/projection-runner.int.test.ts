import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openSqliteEventStore } from '../../src/adapters/sqlite/sqlite-event-store.ts';
import { openSqliteReadStore } from '../../src/adapters/sqlite/sqlite-read-store.ts';
import type { WalletRef } from '../../src/domain/events.ts';
import { streams } from '../../src/domain/streams.ts';
import type { EventStore, RecordedEvent, Subscription } from '../../src/ports/event-store.ts';
import { CheckpointConflictError, type Document, type ReadStore } from '../../src/ports/read-store.ts';
import { balancesProjection } from '../../src/projections/balances.ts';
import type { Positioned, ProjectedEvent, Projection } from '../../src/projections/projection.ts';
import { applyBatch, createProjectionRunner } from '../../src/projections/projection-runner.ts';
import type { Follower } from '../../src/shared/follower.ts';
import { rebuildProjection } from '../../src/projections/rebuild.ts';
import { waitFor } from '../support/system.ts';
import { tempDir } from '../support/temp-dir.ts';

/**
 * applyBatch and createProjectionRunner on the real embedded stores: replays change nothing, the model and its
 * checkpoint move together or not at all, and a runner resumes from whatever checkpoint it finds, its own
 * after a restart or one a promote put there.
 */

/** Every position each document has applied, in order: a replayed or skipped event shows at once. */
type CountDoc = Document & Positioned & { positions: number[]; origin?: string };
const COUNTS: Projection<CountDoc> = {
  name: 'counts',
  collection: { name: 'counts', indexes: [['position']] },
  eventTypes: ['WalletCredited'],
  documentIds: (event) => ['all', `wallet:${(event.data as { wallet: WalletRef }).wallet.id}`],
  evolve: (doc, event, id) => ({
    ...doc,
    id,
    positions: [...(doc?.positions ?? []), event.position],
    position: event.position,
  }),
};
const BALANCES = balancesProjection({ assetScale: 2 }) as unknown as Projection;

const A: WalletRef = { kind: 'merchant', id: 'a' };
const B: WalletRef = { kind: 'merchant', id: 'b' };

let dir: ReturnType<typeof tempDir>;
let eventStore: EventStore;
let readStore: ReadStore;
const runners: Follower[] = [];
const runnerErrors: unknown[] = [];

beforeEach(async () => {
  dir = tempDir('projection-runner-');
  eventStore = openSqliteEventStore({ file: join(dir.path, 'events.sqlite') });
  readStore = openSqliteReadStore({ file: join(dir.path, 'read-models.sqlite') });
  await readStore.defineCollections([COUNTS.collection, BALANCES.collection]);
});
afterEach(async () => {
  for (const runner of runners.splice(0)) await runner.stop();
  expect(runnerErrors.splice(0)).toEqual([]);
  await eventStore.close();
  await readStore.close();
  dir.cleanup();
});

async function credit(wallet: WalletRef, amount = '1.00'): Promise<void> {
  await eventStore.append(
    streams.wallet(wallet),
    [{ type: 'WalletCredited', data: { wallet, operationID: 'op_t', amount } }],
    'any',
  );
}
async function debit(wallet: WalletRef, amount: string): Promise<void> {
  await eventStore.append(
    streams.wallet(wallet),
    [{ type: 'WalletDebited', data: { wallet, operationID: 'op_t', amount, heldAmount: amount } }],
    'any',
  );
}
const projected = (events: RecordedEvent[]): ProjectedEvent[] =>
  events.map(({ type, data, position, createdAt }) => ({ type, data, position, createdAt }));
const read = async (fromPosition = 1, toPosition?: number) =>
  projected(await eventStore.readAll({ fromPosition, ...(toPosition === undefined ? {} : { toPosition }) }));
const model = (collection: string) => readStore.find(collection, { sort: [['id', 'asc']] });
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

function start(projection: Projection, store: EventStore = eventStore): Follower {
  const runner = createProjectionRunner({
    eventStore: store,
    readStore,
    projection,
    logger: { info() {}, warn: (details: { err?: unknown }) => runnerErrors.push(details.err) },
    supervision: { baseDelayMs: 10 },
  });
  runners.push(runner);
  runner.start();
  return runner;
}
const caughtUp = async (projection: Projection, position: number) =>
  waitFor(async () => (await readStore.getCheckpoint(projection.name)) === position);

/** The event store, recording where each subscription started and which positions it delivered. */
function recording(store: EventStore) {
  const subscriptions: Array<{ from: 'start' | number; delivered: number[] }> = [];
  const recorded: EventStore = {
    append: (...args) => store.append(...args),
    appendMulti: (...args) => store.appendMulti(...args),
    readStream: (...args) => store.readStream(...args),
    readAll: (...args) => store.readAll(...args),
    headPosition: () => store.headPosition(),
    close: () => store.close(),
    subscribeToAll(options): Subscription {
      const inner = store.subscribeToAll(options);
      const record = { from: options.from, delivered: [] as number[] };
      subscriptions.push(record);
      return {
        stop: () => inner.stop(),
        async *[Symbol.asyncIterator]() {
          for await (const event of inner) {
            record.delivered.push(event.position);
            yield event;
          }
        },
      };
    },
  };
  return { store: recorded, subscriptions };
}

describe('applyBatch on the embedded stores', () => {
  const target = (projection: Projection, expected?: number | null, generation?: number) => ({
    collection: projection.collection.name,
    checkpoint: projection.name,
    ...(expected === undefined ? {} : { expected }),
    ...(generation === undefined ? {} : { generation }),
  });

  it('given a batch applied, when the same batch is applied again, then neither the documents nor the checkpoint change', async () => {
    await credit(A, '10.00');
    await credit(B, '5.00');
    await debit(A, '2.50');
    await credit(A, '0.25');
    const events = await read();
    expect(await applyBatch(readStore, BALANCES, events, target(BALANCES, null))).toBe(4);
    const once = await model('balances');
    expect(once.map((d) => [d.id, d.balance, d.position])).toEqual([
      ['merchant:a', '7.75', 4],
      ['merchant:b', '5.00', 2],
    ]);

    expect(await applyBatch(readStore, BALANCES, events, target(BALANCES, 4))).toBe(4);
    expect(await applyBatch(readStore, BALANCES, events, target(BALANCES))).toBe(4);
    expect(await model('balances')).toEqual(once);
    expect(await readStore.getCheckpoint('balances')).toBe(4);
  });

  it('given a model at position 10, when a batch from an older checkpoint (4 to 12) is applied, then only 11 and 12 take effect, each once', async () => {
    for (const i of range(1, 12)) await credit(i % 3 === 0 ? B : A);
    await applyBatch(readStore, COUNTS, await read(1, 10), target(COUNTS, null));
    expect(await applyBatch(readStore, COUNTS, await read(4, 12), target(COUNTS, 10))).toBe(12);
    const docs = await model('counts');
    expect(docs.map((d) => [d.id, d.positions])).toEqual([
      ['all', range(1, 12)],
      ['wallet:a', range(1, 12).filter((i) => i % 3 !== 0)],
      ['wallet:b', [3, 6, 9, 12]],
    ]);
    expect(await readStore.getCheckpoint('counts')).toBe(12);
  });

  it('when the commit is refused because the checkpoint is not the expected one, then neither documents nor checkpoint moved', async () => {
    for (const _ of range(1, 6)) await credit(A);
    await applyBatch(readStore, COUNTS, await read(1, 3), target(COUNTS, null));
    const before = await model('counts');

    for (const expected of [null, 2, 4]) {
      const refused = applyBatch(readStore, COUNTS, await read(4, 6), target(COUNTS, expected));
      await expect(refused).rejects.toBeInstanceOf(CheckpointConflictError);
      await expect(refused).rejects.toMatchObject({ projection: 'counts', expected, actual: 3 });
      expect(await model('counts')).toEqual(before);
      expect(await readStore.getCheckpoint('counts')).toBe(3);
    }
    // The same batch with the right expectation goes through.
    await applyBatch(readStore, COUNTS, await read(4, 6), target(COUNTS, 3));
    expect((await readStore.get<CountDoc>('counts', 'all'))?.positions).toEqual(range(1, 6));
  });

  it('given a rebuilt model swapped in at the same position while a batch was being folded from the old one, when the batch commits, then it is refused and the rebuilt documents stay', async () => {
    for (const _ of range(1, 6)) await credit(A);
    await applyBatch(readStore, COUNTS, await read(1, 5), target(COUNTS, null));
    // The rebuild caught up to the same position 5; its documents are marked.
    const shadow = { ...COUNTS.collection, name: 'counts__shadow' };
    await readStore.defineCollections([shadow]);
    await readStore.commit(
      [
        {
          op: 'upsert',
          collection: shadow.name,
          doc: { id: 'all', positions: range(1, 5), origin: 'rebuilt', position: 5 },
        },
      ],
      { projection: shadow.name, position: 5 },
    );
    // The swap lands after the runner read the documents it folds event 6 into, before it commits.
    const swappingReadStore: ReadStore = {
      ...readStore,
      getMany: async (collection, ids) => {
        const docs = await readStore.getMany(collection, ids);
        await readStore.promote(shadow.name, 'counts', { from: shadow.name, to: 'counts' });
        return docs as never;
      },
    };

    // As the runner does: the generation read with the checkpoint, before the documents.
    const generation = await readStore.getGeneration('counts');
    const outcome = await applyBatch(swappingReadStore, COUNTS, await read(6, 6), target(COUNTS, 5, generation)).then(
      () => 'committed',
      (error: Error) => error.name,
    );
    expect(await readStore.get('counts', 'all')).toEqual({
      id: 'all',
      positions: range(1, 5),
      origin: 'rebuilt',
      position: 5,
    });
    expect(outcome).toBe('CheckpointConflictError');
  });

  it('given a projection that never committed, when a batch expects a checkpoint, then it is refused and nothing is written', async () => {
    await credit(A);
    await expect(applyBatch(readStore, COUNTS, await read(), target(COUNTS, 0))).rejects.toMatchObject({
      expected: 0,
      actual: null,
    });
    expect(await model('counts')).toEqual([]);
    expect(await readStore.getCheckpoint('counts')).toBeNull();
  });
});

describe('createProjectionRunner on the embedded stores', () => {
  it('given none of its events in the store yet, when a runner starts, then its checkpoint is the head (built, with nothing to show: not "never built") and it applies the first event from there', async () => {
    const { store, subscriptions } = recording(eventStore);
    await debit(A, '0'); // an event of another type: the head moves, the model has nothing to show
    await debit(B, '0');
    start(COUNTS, store);
    await caughtUp(COUNTS, 2);
    expect(await model('counts')).toEqual([]);

    await credit(A);
    await caughtUp(COUNTS, 3);
    expect(subscriptions.map((s) => s.from)).toEqual([2]);
    expect((await readStore.get<CountDoc>('counts', 'all'))?.positions).toEqual([3]);
  });

  it('given an empty store, when a runner starts, then its checkpoint is 0', async () => {
    start(COUNTS);
    await caughtUp(COUNTS, 0);
    await credit(A);
    await caughtUp(COUNTS, 1);
  });

  it('given a runner that applied events and stopped, when more are appended and it starts again, then it resumes from its checkpoint and applies each event once', async () => {
    const { store, subscriptions } = recording(eventStore);
    for (const i of range(1, 20)) await credit(i % 2 ? A : B);
    const first = start(COUNTS, store);
    await caughtUp(COUNTS, 20);
    await first.stop();

    for (const i of range(21, 35)) await credit(i % 2 ? A : B);
    expect(await readStore.getCheckpoint('counts')).toBe(20);
    start(COUNTS, store);
    await caughtUp(COUNTS, 35);

    expect(subscriptions.map((s) => s.from)).toEqual(['start', 20]);
    expect(subscriptions.flatMap((s) => s.delivered)).toEqual(range(1, 35));
    expect((await readStore.get<CountDoc>('counts', 'all'))?.positions).toEqual(range(1, 35));
    expect((await readStore.get<CountDoc>('counts', 'wallet:a'))?.positions).toEqual(range(1, 35).filter((i) => i % 2));
  });

  it('given a live runner, when a promote moves its checkpoint, then its stale commit is refused and it resumes from the new checkpoint on the promoted collection', async () => {
    const { store, subscriptions } = recording(eventStore);
    for (const _ of range(1, 5)) await credit(A);
    start(COUNTS, store);
    await caughtUp(COUNTS, 5);

    // A model built aside up to position 3, marked so that its documents can be told apart.
    const shadow = { ...COUNTS.collection, name: 'counts__shadow' };
    await readStore.defineCollections([shadow]);
    await readStore.commit(
      [
        {
          op: 'upsert',
          collection: shadow.name,
          doc: { id: 'all', positions: [1, 2, 3], origin: 'shadow', position: 3 },
        },
      ],
      { projection: shadow.name, position: 3 },
    );
    await readStore.promote(shadow.name, 'counts', { from: shadow.name, to: 'counts' });
    expect(await readStore.getCheckpoint('counts')).toBe(3);

    await credit(A);
    await caughtUp(COUNTS, 6);
    expect(await readStore.get('counts', 'all')).toEqual({
      id: 'all',
      positions: range(1, 6),
      origin: 'shadow',
      position: 6,
    });
    expect(await readStore.get<CountDoc>('counts', 'wallet:a')).toEqual({
      id: 'wallet:a',
      positions: [4, 5, 6],
      position: 6,
    });
    expect(subscriptions.map((s) => s.from)).toEqual(['start', 3]);
    expect(subscriptions[1]!.delivered).toEqual([4, 5, 6]);
  });

  it('given a live runner, when its projection is rebuilt and swapped in while events arrive, then it carries on and the model is what one pass over every event builds', async () => {
    for (const i of range(1, 200)) await credit(i % 3 ? A : B);
    start(COUNTS);
    start(BALANCES);
    await caughtUp(COUNTS, 200);

    let appending = true;
    const appender = (async () => {
      for (let i = 0; appending; i++) await credit(i % 2 ? A : B);
    })();
    const rebuilt = await rebuildProjection({ eventStore, readStore }, COUNTS);
    appending = false;
    await appender;
    expect(rebuilt.position).toBeGreaterThanOrEqual(200);
    for (const _ of range(1, 5)) await credit(B);

    const head = await eventStore.headPosition();
    await caughtUp(COUNTS, head);
    await caughtUp(BALANCES, head);
    const all = await read();
    expect((await readStore.get<CountDoc>('counts', 'all'))?.positions).toEqual(range(1, head));
    for (const wallet of [A, B]) {
      const positions = all
        .filter((e) => (e.data as { wallet: WalletRef }).wallet.id === wallet.id)
        .map((e) => e.position);
      expect((await readStore.get<CountDoc>('counts', `wallet:${wallet.id}`))?.positions).toEqual(positions);
    }
    expect((await readStore.get('balances', 'merchant:b'))?.balance).toBe(
      `${all.filter((e) => (e.data as { wallet: WalletRef }).wallet.id === 'b').length}.00`,
    );
    expect(await readStore.find('counts__rebuild').catch((error: Error) => error.name)).toBe('ReadStoreQueryError');
  });
});

import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openSqliteReadStore } from '../../src/adapters/sqlite/sqlite-read-store.ts';
import { openSqliteEventStore } from '../../src/adapters/sqlite/sqlite-event-store.ts';
import { streams } from '../../src/domain/streams.ts';
import type { EventStore } from '../../src/ports/event-store.ts';
import type { ReadStore } from '../../src/ports/read-store.ts';
import {
  allOperations,
  countPendingOfParty,
  findOperations,
  pendingOperationsOfParty,
  searchCondition,
} from '../../src/projections/console-operation-queries.ts';
import {
  amountKey,
  CONSOLE_OPERATIONS_COLLECTION,
  consoleOperationsProjection,
} from '../../src/projections/console-operations.ts';
import type { Projection } from '../../src/projections/projection.ts';
import { applyBatch } from '../../src/projections/projection-runner.ts';
import { approved, at, DISTRIBUTOR, MERCHANT, rejected, request } from '../support/projection-spec.ts';
import { tempDir } from '../support/temp-dir.ts';

/** Keyset paging over console_operations on the embedded store: where each page is, both ways, with filters. */
let store: ReadStore;
let dir: ReturnType<typeof tempDir>;
const PARTY = 'distributor:d1';
const opID = (i: number) => `op_${String(i).padStart(32, '0')}`;
// 120 operations of the party, two per second with equal times in pairs (the id breaks the tie), plus another party's.
const doc = (i: number, party = PARTY) => {
  const createdAt = new Date(Date.UTC(2025, 0, 1) + Math.floor(i / 2) * 1000).toISOString();
  return {
    id: party === PARTY ? opID(i) : `x${i}`,
    party,
    operationID: opID(i),
    status: i % 3 === 0 ? 'failed' : 'completed',
    amountKey: amountKey(i, 2),
    sortKey: `${createdAt}|${opID(i)}`,
    // As the projection writes it: the operation id first, then the counterparty and the memo.
    text: `${opID(i)}\n+234800000${i}\nmemo ${i}`,
  };
};

beforeEach(async () => {
  dir = tempDir();
  store = openSqliteReadStore({ file: `${dir.path}/read.sqlite` });
  await store.defineCollections([CONSOLE_OPERATIONS_COLLECTION]);
  const docs = [
    ...Array.from({ length: 120 }, (_, i) => doc(i)),
    ...Array.from({ length: 30 }, (_, i) => doc(i, 'merchant:m1')),
  ];
  await store.commit(docs.map((d) => ({ op: 'upsert' as const, collection: 'console_operations', doc: d })));
});
afterEach(async () => {
  await store.close();
  dir.cleanup();
});

describe('console operation queries', () => {
  it('when paging newest first with Next, then pages say 1–50, 51–100, 101–120 of 120 and every row comes once', async () => {
    const seen: string[] = [];
    let after: string | undefined;
    const positions: string[] = [];
    for (;;) {
      const page = await findOperations(
        store,
        { party: PARTY },
        { order: 'newest', limit: 50, ...(after ? { after } : {}) },
      );
      positions.push(`${page.start}–${page.start + page.rows.length - 1} of ${page.total}`);
      seen.push(...page.rows.map((r) => r.operationID));
      if (!page.next) break;
      after = page.next;
    }
    expect(positions).toEqual(['1–50 of 120', '51–100 of 120', '101–120 of 120']);
    expect(seen).toEqual(Array.from({ length: 120 }, (_, i) => opID(119 - i)));
  });

  it('when paging back with Previous from the last page, then the pages before come back the same', async () => {
    const first = await findOperations(store, { party: PARTY }, { order: 'oldest', limit: 50 });
    const second = await findOperations(store, { party: PARTY }, { order: 'oldest', limit: 50, after: first.next! });
    const back = await findOperations(
      store,
      { party: PARTY },
      { order: 'oldest', limit: 50, before: second.previous! },
    );
    expect(back.rows.map((r) => r.operationID)).toEqual(first.rows.map((r) => r.operationID));
    expect(back.start).toBe(1);
    expect(back.previous).toBeUndefined();
    expect(back.next).toBe(first.next);
  });

  it('when filtering by status, amount and search, then the total and the export agree with the filter', async () => {
    const failed = await findOperations(
      store,
      { party: PARTY, status: 'failed', minAmountKey: amountKey(30, 2), maxAmountKey: amountKey(60, 2) },
      { order: 'newest', limit: 5 },
    );
    expect(failed.total).toBe(11); // 30, 33, ..., 60
    expect(failed.rows.map((r) => r.operationID)).toEqual([60, 57, 54, 51, 48].map(opID));
    const exported: string[] = [];
    for await (const row of allOperations(store, { party: PARTY, status: 'failed' }, 'oldest', 7))
      exported.push(row.operationID);
    expect(exported).toEqual(Array.from({ length: 40 }, (_, i) => opID(i * 3)));
    expect(
      (await findOperations(store, { party: PARTY, search: 'memo 11' }, { order: 'newest', limit: 50 })).rows.map(
        (r) => r.operationID,
      ),
    ).toEqual([119, 118, 117, 116, 115, 114, 113, 112, 111, 110, 11].map(opID));
  });

  it('when searching an operation id or its prefix, then the operations whose id starts with it are found, not one whose memo names it', async () => {
    const id = opID(7);
    await store.commit([
      {
        op: 'upsert',
        collection: 'console_operations',
        doc: { ...doc(200), text: `${opID(200)}\n+2348000000200\npays back ${id}` },
      },
    ]);
    const search = async (text: string) =>
      (await findOperations(store, { party: PARTY, search: text }, { order: 'newest', limit: 50 })).rows.map(
        (r) => r.operationID,
      );
    expect(await search(id)).toEqual([id]);
    expect(await search(id.toUpperCase())).toEqual([id]);
    expect(await search(id.slice(0, -1))).toEqual([9, 8, 7, 6, 5, 4, 3, 2, 1, 0].map(opID));
    expect(await search(`pays back ${id}`)).toEqual([opID(200)]);
  });

  it('given search texts, when classified, then ids and phones are prefixes and anything else a substring', () => {
    expect(searchCondition('op_ABCdef12')).toEqual({ field: 'operationID', prefix: 'op_abcdef12' });
    expect(searchCondition('abcdef12')).toEqual({ field: 'operationID', prefix: 'op_abcdef12' });
    expect(searchCondition('+234 812-345')).toEqual({ field: 'counterparty', prefix: '+234812345' });
    expect(searchCondition('Rent March')).toEqual({ substring: 'rent march' });
    expect(searchCondition('cafe')).toEqual({ substring: 'cafe' });
    expect(searchCondition('23481234')).toEqual({ field: 'counterparty', prefix: '+23481234' });
  });
});

describe('the pending list of a party', () => {
  const DIST = `distributor:${DISTRIBUTOR.id}`;
  const MERCH = `merchant:${MERCHANT.id}`;
  const projection = consoleOperationsProjection({ assetScale: 2 }) as unknown as Projection;
  let events: EventStore;
  let reads: { readStream: number; readAll: number };
  /** The embedded event store, counting the reads the query makes. */
  let counted: EventStore;

  beforeEach(() => {
    events = openSqliteEventStore({ file: `${dir.path}/events.sqlite` });
    reads = { readStream: 0, readAll: 0 };
    counted = {
      ...events,
      append: (...args) => events.append(...args),
      appendMulti: (...args) => events.appendMulti(...args),
      readStream: (...args) => (reads.readStream++, events.readStream(...args)),
      readAll: (...args) => (reads.readAll++, events.readAll(...args)),
      headPosition: () => events.headPosition(),
      subscribeToAll: (...args) => events.subscribeToAll(...args),
      close: () => events.close(),
    };
  });
  afterEach(async () => {
    await events.close();
  });

  const append = (...list: Array<{ type: string; data: { operationID: string } }>) =>
    Promise.all(list.map((event) => events.append(streams.operation(event.data.operationID), [event], 'any')));
  /** The projection applies everything stored so far, as its runner would, checkpoint included. */
  const project = async () => {
    const checkpoint = (await store.getCheckpoint(projection.name)) ?? 0;
    const batch = (await events.readAll({ fromPosition: checkpoint + 1 })).map(
      ({ type, data, position, createdAt }) => ({ type, data, position, createdAt }),
    );
    await applyBatch(
      store,
      projection,
      batch.filter((event) => projection.eventTypes.includes(event.type)),
      { collection: projection.collection.name, checkpoint: projection.name, expected: checkpoint || null },
    );
  };
  const pendingIDs = async (party: string) =>
    (await pendingOperationsOfParty({ readStore: store, eventStore: counted }, party, 200)).map(
      (doc) => doc.operationID,
    );

  it('when operations were decided after the read model’s checkpoint, then the list leaves them out, newest first, and the count says what the model holds', async () => {
    await append(
      request.cashInToIndividual('op_1', { createdAt: at(1) }),
      request.cashInToIndividual('op_2', { createdAt: at(2) }),
      request.cashInToIndividual('op_3', { createdAt: at(3) }),
      request.cashInToIndividual('op_4', { createdAt: at(4) }),
    );
    await append(approved('op_1'));
    await project();
    expect(await pendingIDs(DIST)).toEqual(['op_4', 'op_3', 'op_2']);
    // Decided a moment ago: the read model has not applied it yet.
    await append(approved('op_2'), rejected('op_4'));
    expect(await pendingIDs(DIST)).toEqual(['op_3']);
    expect(await countPendingOfParty(store, DIST)).toBe(3);
    await project();
    expect(await pendingIDs(DIST)).toEqual(['op_3']);
    expect(await countPendingOfParty(store, DIST)).toBe(1);
  });

  it('when a distributor’s cash-in to a merchant waits, then it is in the distributor’s list and not in the merchant’s, whose checker cannot decide it', async () => {
    await append(request.cashInToMerchant('op_m'), request.payMerchant('op_p'));
    await project();
    expect(await pendingIDs(DIST)).toEqual(['op_m']);
    expect(await pendingIDs(MERCH)).toEqual(['op_p']);
    expect(await countPendingOfParty(store, MERCH)).toBe(1);
  });

  it('when the list grows from 1 to 30 rows, then it reads the event store once, and no operation’s stream', async () => {
    const ids = Array.from({ length: 30 }, (_, i) => `op_${String(i).padStart(2, '0')}`);
    await append(request.cashInToIndividual(ids[0]!));
    await project();
    expect(await pendingIDs(DIST)).toHaveLength(1);
    expect(reads).toEqual({ readStream: 0, readAll: 1 });
    await append(...ids.slice(1).map((id, i) => request.cashInToIndividual(id, { createdAt: at(i + 1) })));
    await project();
    reads = { readStream: 0, readAll: 0 };
    expect(await pendingIDs(DIST)).toHaveLength(30);
    expect(reads).toEqual({ readStream: 0, readAll: 1 });
  });
});

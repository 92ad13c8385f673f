/**
 * The PostgreSQL read store on a real server (the test run's, test/support/postgres.global.ts), each test system
 * on a database of its own: the ReadStore contract suite unchanged, then what is PostgreSQL's own (query plans,
 * atomicity across processes, a connection the server ends).
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import type { PostgresConnectionOptions } from '../../src/adapters/postgres/postgres-pool.ts';
import { compileFind, indexName, textColumns } from '../../src/adapters/postgres/postgres-read-query.ts';
import { openPostgresReadStore } from '../../src/adapters/postgres/postgres-read-store.ts';
import type { CollectionDefinition, FindQuery, ReadStore } from '../../src/ports/read-store.ts';
import { CheckpointConflictError, ReadStoreQueryError, ReadStoreUnavailableError } from '../../src/ports/read-store.ts';
import { API_TEXT } from '../../src/projections/api-text.ts';
import { CONSOLE_OPERATIONS_COLLECTION } from '../../src/projections/console-operations.ts';
import {
  DISTRIBUTOR_OPERATIONS_COLLECTION,
  DISTRIBUTOR_OPERATIONS_SORT,
  distributorOperationsWhere,
} from '../../src/projections/distributor-operations.ts';
import {
  MERCHANT_PAYMENTS_COLLECTION,
  MERCHANT_PAYMENTS_SORT,
  merchantPaymentsWhere,
  paymentSearch,
} from '../../src/projections/merchant-payments.ts';
import { describeReadStoreContract } from '../contracts/read-store.contract.ts';
import { freshPostgresDatabase } from '../support/postgres-server.ts';

const COUNTER_CHILD = fileURLToPath(new URL('../support/counter-and-take.child.ts', import.meta.url));
const APPLICATION = 'wallet-ops-read-store-test';

const options = (url: string): PostgresConnectionOptions => ({
  url,
  poolSize: 4,
  statementTimeoutMs: 10_000,
  applicationName: APPLICATION,
});

describeReadStoreContract('PostgreSQL', async () => {
  const store = await openPostgresReadStore(options(await freshPostgresDatabase()));
  return { store, cleanup: () => store.close() };
});

describe('PostgreSQL read store, server specifics', () => {
  const opened: Array<{ close(): Promise<unknown> }> = [];
  afterEach(async () => {
    for (const handle of opened.splice(0).reverse()) await handle.close();
  });

  async function open(url: string, ...collections: CollectionDefinition[]): Promise<ReadStore> {
    const store = await openPostgresReadStore(options(url));
    opened.push(store);
    if (collections.length > 0) await store.defineCollections(collections);
    return store;
  }
  async function admin(url: string): Promise<pg.Client> {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    opened.push({ close: () => client.end() });
    return client;
  }

  /** Every node of an EXPLAIN (FORMAT JSON) plan, depth first. */
  type PlanNode = { 'Node Type': string; 'Index Name'?: string; Plans?: PlanNode[] };
  const nodes = (node: PlanNode): PlanNode[] => [node, ...(node.Plans ?? []).flatMap(nodes)];
  async function planOf(
    client: pg.Client,
    def: CollectionDefinition,
    query: FindQuery,
    columns?: string,
  ): Promise<PlanNode[]> {
    const { sql, params } = compileFind(def, query, null, columns);
    const { rows } = await client.query<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }>(
      `EXPLAIN (FORMAT JSON) ${sql}`,
      params,
    );
    return nodes(rows[0]!['QUERY PLAN'][0]!.Plan);
  }
  /** The plan's nodes as `Node Type[ on index]`, e.g. `Limit`, `Index Scan Backward on rm_x_0123456789ab`. */
  const summary = (plan: PlanNode[]) =>
    plan.map((node) => `${node['Node Type']}${node['Index Name'] ? ` on ${node['Index Name']}` : ''}`);
  function expectIndexed(plan: PlanNode[], table: string, { inOrder = true } = {}): void {
    const types = plan.map((node) => node['Node Type']);
    expect(types, summary(plan).join(' > ')).not.toContain('Seq Scan');
    if (inOrder) expect(types, summary(plan).join(' > ')).not.toContain('Sort');
    expect(
      plan.some((node) => /Index/.test(node['Node Type']) && node['Index Name']?.startsWith(`rm_${table}_`)),
      summary(plan).join(' > '),
    ).toBe(true);
  }

  it('given a few thousand operations of several distributors and merchants, when the read API lists 100 of one, then PostgreSQL reads them in order from the declared index, with no sequential scan and no sort', async () => {
    const url = await freshPostgresDatabase();
    const store = await open(url, DISTRIBUTOR_OPERATIONS_COLLECTION, MERCHANT_PAYMENTS_COLLECTION);
    const operations = Array.from({ length: 4_000 }, (_, i) => ({
      op: 'upsert' as const,
      collection: DISTRIBUTOR_OPERATIONS_COLLECTION.name,
      doc: {
        id: `op_${String(i).padStart(6, '0')}`,
        distributorID: `d${i % 8}`,
        operationType: 'cash-in',
        amount: '10.00',
        createdAt: new Date(1_700_000_000_000 + i * 1000).toISOString(),
      },
    }));
    const payments = Array.from({ length: 4_000 }, (_, i) => ({
      op: 'upsert' as const,
      collection: MERCHANT_PAYMENTS_COLLECTION.name,
      doc: {
        id: `op_${String(i).padStart(6, '0')}`,
        merchantID: `m${i % 8}`,
        visible: i % 10 !== 0,
        listedPosition: i % 10 === 0 ? null : i,
        memo: `Payment ${i}`,
        searchPhone: `2547000${i}`,
      },
    }));
    await store.commit([...operations, ...payments]);
    const client = await admin(url);
    await client.query('ANALYZE');

    const distributorList: FindQuery = {
      where: distributorOperationsWhere('d3'),
      sort: DISTRIBUTOR_OPERATIONS_SORT,
      skip: 100,
      limit: 100,
    };
    expectIndexed(
      await planOf(client, DISTRIBUTOR_OPERATIONS_COLLECTION, distributorList),
      DISTRIBUTOR_OPERATIONS_COLLECTION.name,
    );
    // The lists read their stored texts (findText) by the same plan.
    expectIndexed(
      await planOf(client, DISTRIBUTOR_OPERATIONS_COLLECTION, distributorList, textColumns(API_TEXT)),
      DISTRIBUTOR_OPERATIONS_COLLECTION.name,
    );
    const paymentList: FindQuery = { where: merchantPaymentsWhere('m5'), sort: MERCHANT_PAYMENTS_SORT, limit: 100 };
    expectIndexed(await planOf(client, MERCHANT_PAYMENTS_COLLECTION, paymentList), MERCHANT_PAYMENTS_COLLECTION.name);
    // A search filters the merchant's index range; the planner may then sort the few that match rather than walk the range in order.
    expectIndexed(
      await planOf(client, MERCHANT_PAYMENTS_COLLECTION, { ...paymentList, search: paymentSearch('payment 1') }),
      MERCHANT_PAYMENTS_COLLECTION.name,
      { inOrder: false },
    );

    // And the queries whose plans were checked return the right rows.
    const listed = await store.find(DISTRIBUTOR_OPERATIONS_COLLECTION.name, distributorList);
    expect(listed).toHaveLength(100);
    expect(listed.slice(0, 2).map((doc) => doc.id)).toEqual(['op_003195', 'op_003187']);
    const paid = await store.find(MERCHANT_PAYMENTS_COLLECTION.name, paymentList);
    expect(paid.slice(0, 2).map((doc) => doc.id)).toEqual(['op_003997', 'op_003989']);
  });

  it('given a few thousand console operations, when the console lists a page by status, by date range or after a cursor, then each reads a declared index in order', async () => {
    const url = await freshPostgresDatabase();
    const store = await open(url, CONSOLE_OPERATIONS_COLLECTION);
    const statuses = ['pending', 'completed', 'failed'];
    await store.commit(
      Array.from({ length: 5_000 }, (_, i) => {
        const createdAt = new Date(1_700_000_000_000 + i * 60_000).toISOString();
        const id = `op_${String(i).padStart(6, '0')}`;
        return {
          op: 'upsert' as const,
          collection: CONSOLE_OPERATIONS_COLLECTION.name,
          doc: {
            id,
            operationID: id,
            party: `merchant:m${i % 5}`,
            status: statuses[i % 3]!,
            operationType: 'pay-merchant',
            sortKey: `${createdAt}|${id}`,
            text: `${id} memo ${i}`,
            createdAt,
          },
        };
      }),
    );
    const client = await admin(url);
    await client.query('ANALYZE');
    const queries: FindQuery[] = [
      { where: { party: 'merchant:m2' }, sort: [['sortKey', 'desc']], limit: 101 },
      { where: { party: 'merchant:m2', status: 'failed' }, sort: [['sortKey', 'desc']], limit: 101 },
      {
        where: { party: 'merchant:m2' },
        range: { sortKey: { gte: '2023-11-15', lt: '2023-11-16' } },
        sort: [['sortKey', 'asc']],
        limit: 101,
      },
      {
        where: { party: 'merchant:m2' },
        range: { sortKey: { lt: '2023-11-17T00:00:00.000Z|op_004000' } },
        sort: [['sortKey', 'desc']],
        limit: 101,
      },
    ];
    for (const query of queries)
      expectIndexed(await planOf(client, CONSOLE_OPERATIONS_COLLECTION, query), CONSOLE_OPERATIONS_COLLECTION.name);
  });

  it('given a model rebuilt aside without indexes, when promoted, then the target has exactly its declared indexes and lists read them in order', async () => {
    const url = await freshPostgresDatabase();
    const shadow = {
      ...DISTRIBUTOR_OPERATIONS_COLLECTION,
      name: `${DISTRIBUTOR_OPERATIONS_COLLECTION.name}__rebuild`,
      indexes: [['operationType']],
    };
    const store = await open(url, DISTRIBUTOR_OPERATIONS_COLLECTION, shadow);
    await store.commit(
      Array.from({ length: 3_000 }, (_, i) => ({
        op: 'upsert' as const,
        collection: shadow.name,
        doc: {
          id: `op_${String(i).padStart(6, '0')}`,
          distributorID: `d${i % 8}`,
          createdAt: new Date(1_700_000_000_000 + i * 1000).toISOString(),
        },
      })),
      { projection: shadow.name, position: 3_000 },
    );
    await store.promote(shadow.name, DISTRIBUTOR_OPERATIONS_COLLECTION.name, {
      from: shadow.name,
      to: 'distributor-operations',
    });

    const client = await admin(url);
    const { rows } = await client.query<{ indexname: string }>(
      `SELECT indexname FROM pg_indexes WHERE tablename LIKE 'rm_distributor_operations%' ORDER BY indexname`,
    );
    const declared = DISTRIBUTOR_OPERATIONS_COLLECTION.indexes!.map((fields) =>
      indexName('rm_distributor_operations', fields),
    );
    expect(rows.map((row) => row.indexname)).toEqual([...declared, 'rm_distributor_operations_pkey'].sort());
    expectIndexed(
      await planOf(client, DISTRIBUTOR_OPERATIONS_COLLECTION, {
        where: distributorOperationsWhere('d1'),
        sort: DISTRIBUTOR_OPERATIONS_SORT,
        limit: 100,
      }),
      DISTRIBUTOR_OPERATIONS_COLLECTION.name,
    );
    expect(await store.getCheckpoint('distributor-operations')).toBe(3_000);
    expect(await store.getGeneration('distributor-operations')).toBe(1);
  });

  it('given a database whose model declared an index it no longer declares, when a process starts with the new definitions, then that index is dropped, and the declared ones and one an operator made stay', async () => {
    const url = await freshPostgresDatabase();
    const older = await openPostgresReadStore(options(url));
    const extra = ['party', 'operationID'];
    await older.defineCollections([
      { ...CONSOLE_OPERATIONS_COLLECTION, indexes: [...CONSOLE_OPERATIONS_COLLECTION.indexes!, extra] },
    ]);
    await older.close();
    const client = await admin(url);
    await client.query(`CREATE INDEX operators_own ON rm_console_operations (id)`);
    await open(url, CONSOLE_OPERATIONS_COLLECTION);
    const { rows } = await client.query<{ indexname: string }>(
      `SELECT indexname FROM pg_indexes WHERE tablename = 'rm_console_operations' ORDER BY indexname`,
    );
    const declared = CONSOLE_OPERATIONS_COLLECTION.indexes!.map((fields) => indexName('rm_console_operations', fields));
    expect(rows.map((row) => row.indexname)).toEqual(
      [...declared, 'operators_own', 'rm_console_operations_pkey'].sort(),
    );
    expect(rows.map((row) => row.indexname)).not.toContain(indexName('rm_console_operations', extra));
  });

  it('given two processes on one database, each with its own pool, when both increment one counter and take the same documents at once, then every count is seen once and every document taken once', async () => {
    const url = await freshPostgresDatabase();
    const store = await open(url, { name: 'counters', indexes: [['expiresAt']] }, { name: 'held' });
    await store.commit(
      Array.from({ length: 20 }, (_, i) => ({ op: 'upsert' as const, collection: 'held', doc: { id: `doc-${i}` } })),
    );
    const run = () =>
      new Promise<{ counts: number[]; taken: string[] }>((resolve, reject) => {
        const child = spawn(process.execPath, [COUNTER_CHILD, url, '200'], { stdio: ['ignore', 'pipe', 'inherit'] });
        let out = '';
        child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
        child.once('exit', (code) =>
          code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`child exited ${code}`)),
        );
      });
    const [a, b] = await Promise.all([run(), run()]);
    expect([...a.counts, ...b.counts].sort((x, y) => x - y)).toEqual(Array.from({ length: 400 }, (_, i) => i + 1));
    expect([...a.taken, ...b.taken].sort()).toEqual(Array.from({ length: 20 }, (_, i) => `doc-${i}`).sort());
    expect(await store.count('held')).toBe(0);
  });

  it('given two pools on one database, when both commit on one checkpoint (none yet, or the same position) at once, then one commits and the other is refused with nothing written', async () => {
    const url = await freshPostgresDatabase();
    const wallets: CollectionDefinition = { name: 'wallets' };
    const [first, second] = [await open(url, wallets), await open(url, wallets)];
    for (let round = 0; round < 10; round++) {
      const projection = `p${round}`;
      // Odd rounds race on a checkpoint that exists, even rounds on the first one.
      const expected = round % 2 === 1 ? 0 : null;
      if (expected === 0) await first.commit([], { projection, position: 0 });
      const results = await Promise.allSettled([
        first.commit([{ op: 'upsert', collection: 'wallets', doc: { id: `${projection}-a` } }], {
          projection,
          position: 1,
          expected,
        }),
        second.commit([{ op: 'upsert', collection: 'wallets', doc: { id: `${projection}-b` } }], {
          projection,
          position: 2,
          expected,
        }),
      ]);
      expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
      const refused = results.find((r) => r.status === 'rejected');
      expect(refused?.reason).toBeInstanceOf(CheckpointConflictError);
      const winner = results[0]!.status === 'fulfilled' ? 'a' : 'b';
      expect(
        (await first.find('wallets', { range: { id: { gte: `${projection}-`, lt: `${projection}.` } } })).map(
          (doc) => doc.id,
        ),
      ).toEqual([`${projection}-${winner}`]);
      expect(await first.getCheckpoint(projection)).toBe(winner === 'a' ? 1 : 2);
    }
  });

  it("given a projection's page of writes and its fenced checkpoint, when committed, then it goes in one statement (one round trip, one commit); a page writing one row twice takes the transaction", async () => {
    const url = await freshPostgresDatabase();
    const statements: number[] = [];
    const observer = { opened: () => ({ closed() {} }), statement: () => void statements.push(1) };
    const store = await openPostgresReadStore({ ...options(url), observer });
    opened.push(store);
    await store.defineCollections([{ name: 'wallets' }, { name: 'owners' }]);
    await store.commit([], { projection: 'p', position: 1, expected: null, generation: 0 });
    statements.length = 0;
    await store.commit(
      [
        { op: 'upsert', collection: 'wallets', doc: { id: 'w1', balance: 1 } },
        { op: 'upsert', collection: 'owners', doc: { id: 'o1' } },
        { op: 'delete', collection: 'wallets', id: 'w0' },
      ],
      { projection: 'p', position: 2, expected: 1, generation: 0 },
    );
    expect(statements).toHaveLength(1);
    expect(await store.getCheckpoint('p')).toBe(2);
    statements.length = 0;
    await store.commit(
      [
        { op: 'upsert', collection: 'wallets', doc: { id: 'w1', balance: 2 } },
        { op: 'patch', collection: 'wallets', id: 'w1', patch: { balance: 3 } },
      ],
      { projection: 'p', position: 3, expected: 2, generation: 0 },
    );
    expect(statements.length).toBeGreaterThan(1); // the patch must see the upsert: BEGIN, fence, writes, checkpoint, COMMIT
    expect(await store.get('wallets', 'w1')).toEqual({ id: 'w1', balance: 3 });
  });

  it('given several projections committing their pages at once on one store, when one of them is stale, then the pages go in one statement and only the stale one is refused', async () => {
    const url = await freshPostgresDatabase();
    const statements: number[] = [];
    const observer = { opened: () => ({ closed() {} }), statement: () => void statements.push(1) };
    const store = await openPostgresReadStore({ ...options(url), observer });
    opened.push(store);
    const names = ['a', 'b', 'c', 'd'];
    await store.defineCollections(names.map((name) => ({ name })));
    for (const name of names) await store.commit([], { projection: name, position: 1 });
    statements.length = 0;
    const results = await Promise.allSettled(
      names.map((name) =>
        store.commit([{ op: 'upsert', collection: name, doc: { id: 'doc', position: 2 } }], {
          projection: name,
          position: 2,
          expected: name === 'c' ? 0 : 1,
          generation: 0,
        }),
      ),
    );
    expect(statements).toHaveLength(1);
    expect(results.map((result) => result.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
    expect((results[2] as PromiseRejectedResult).reason).toBeInstanceOf(CheckpointConflictError);
    for (const name of names) {
      expect(await store.getCheckpoint(name)).toBe(name === 'c' ? 1 : 2);
      expect(await store.get(name, 'doc')).toEqual(name === 'c' ? null : { id: 'doc', position: 2 });
    }
  });

  it('given a runner that folded a page and stalled before its commit (a crash, then a restart) while its successor committed the page, when the stale runner commits, then the fence refuses it and each event counts once', async () => {
    const url = await freshPostgresDatabase();
    const wallets: CollectionDefinition = { name: 'wallets' };
    const [stale, successor] = [await open(url, wallets), await open(url, wallets)];
    await successor.commit([{ op: 'upsert', collection: 'wallets', doc: { id: 'w', balance: 10, position: 5 } }], {
      projection: 'balances',
      position: 5,
    });
    // Both read the model at 5 and fold the events 6 and 7 (+1 each); the successor commits first.
    await successor.commit([{ op: 'upsert', collection: 'wallets', doc: { id: 'w', balance: 12, position: 7 } }], {
      projection: 'balances',
      position: 7,
      expected: 5,
      generation: 0,
    });
    // The stale one folded again on what it now reads (12) and would count 6 and 7 a second time.
    const refused = stale.commit(
      [{ op: 'upsert', collection: 'wallets', doc: { id: 'w', balance: 14, position: 7 } }],
      { projection: 'balances', position: 7, expected: 5, generation: 0 },
    );
    await expect(refused).rejects.toBeInstanceOf(CheckpointConflictError);
    await expect(refused).rejects.toMatchObject({ expected: 5, actual: 7 });
    expect(await successor.get('wallets', 'w')).toEqual({ id: 'w', balance: 12, position: 7 });
    expect(await successor.getCheckpoint('balances')).toBe(7);
    // A commit fenced by a generation the row does not have moves nothing either, its first one included.
    await expect(
      stale.commit([{ op: 'upsert', collection: 'wallets', doc: { id: 'x' } }], {
        projection: 'fresh',
        position: 1,
        expected: null,
        generation: 2,
      }),
    ).rejects.toBeInstanceOf(CheckpointConflictError);
    expect(await successor.getCheckpoint('fresh')).toBeNull();
    expect(await successor.get('wallets', 'x')).toBeNull();
  });

  it('given a query under way, when the server terminates its connection, then it fails with ReadStoreUnavailableError and the next call succeeds on a new connection', async () => {
    const url = await freshPostgresDatabase();
    const store = await open(url, { name: 'wallets' });
    await store.commit([{ op: 'upsert', collection: 'wallets', doc: { id: 'w1' } }]);
    const client = await admin(url);
    // The table held locked, so the read waits on the server until its connection is ended.
    await client.query('BEGIN');
    await client.query('LOCK TABLE rm_wallets IN ACCESS EXCLUSIVE MODE');
    const read = store.get('wallets', 'w1').then(
      () => null,
      (error: unknown) => error,
    );
    const waiting = async () =>
      (
        await client.query(
          `SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'`,
          [APPLICATION],
        )
      ).rows[0]!.n;
    while ((await waiting()) === 0) await new Promise((resolve) => setTimeout(resolve, 20));
    await client.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1`, [
      APPLICATION,
    ]);
    expect(await read).toBeInstanceOf(ReadStoreUnavailableError);
    await client.query('ROLLBACK');
    expect(await store.get('wallets', 'w1')).toEqual({ id: 'w1' });
    await store.commit([{ op: 'upsert', collection: 'wallets', doc: { id: 'w2' } }], {
      projection: 'wallets',
      position: 1,
      expected: null,
    });
    expect(await store.getCheckpoint('wallets')).toBe(1);
  });

  it('given a statement that waits longer than the statement timeout, when it is cancelled by the server, then ReadStoreUnavailableError is raised', async () => {
    const url = await freshPostgresDatabase();
    const store = await openPostgresReadStore({ ...options(url), statementTimeoutMs: 300 });
    opened.push(store);
    await store.defineCollections([{ name: 'wallets' }]);
    const client = await admin(url);
    await client.query('BEGIN');
    await client.query('LOCK TABLE rm_wallets IN ACCESS EXCLUSIVE MODE');
    try {
      await expect(store.get('wallets', 'w1')).rejects.toBeInstanceOf(ReadStoreUnavailableError);
    } finally {
      await client.query('ROLLBACK');
    }
    expect(await store.get('wallets', 'w1')).toBeNull();
  });

  it('given ASCII and other search texts, then matches agree with JavaScript lowering, also on values with other characters (the Kelvin sign, dotted I) and never on a number', async () => {
    const store = await open(await freshPostgresDatabase(), { name: 'payments', searchFields: ['memo'] });
    const memos: Record<string, unknown> = {
      a: 'Rent for ALICE',
      b: 'Temperature 300 \u212A',
      c: 'École',
      d: 'ecole',
      e: 12345,
      f: 'İstanbul',
      g: null,
      h: 'Ünïcode rent',
      i: 'ΣΊΣΥΦΟΣ',
    };
    await store.commit(
      Object.entries(memos).map(([id, memo]) => ({ op: 'upsert' as const, collection: 'payments', doc: { id, memo } })),
    );
    const ids = async (text: string) =>
      (await store.find('payments', { search: { text, fields: ['memo'] } })).map((doc) => doc.id).sort();
    const expected = (text: string) =>
      Object.entries(memos)
        .filter(([, memo]) => typeof memo === 'string' && memo.toLowerCase().includes(text.toLowerCase()))
        .map(([id]) => id)
        .sort();
    for (const text of [
      'rent',
      'ALICE',
      'k',
      '300 k',
      'ecole',
      'cole',
      'i',
      '123',
      'istanbul',
      'code rent',
      '',
      'σίσυφος',
      'ς',
    ]) {
      expect(await ids(text), text).toEqual(expected(text));
    }
    expect(await ids('k')).toContain('b');
    expect(await ids('123')).toEqual([]);
  });

  it('given a NUL in a search, an equality or an id (which validation refuses first), then nothing matches and no NUL reaches the server (issue 40)', async () => {
    const store = await open(await freshPostgresDatabase(), {
      name: 'payments',
      searchFields: ['memo'],
      indexes: [['memo']],
    });
    await store.commit([{ op: 'upsert', collection: 'payments', doc: { id: 'p1', memo: 'rent' } }]);
    expect(await store.find('payments', { search: { text: 're\u0000', fields: ['memo'] } })).toEqual([]);
    expect(
      await store.find('payments', {
        search: [
          { text: '\u0000', fields: ['memo'] },
          { text: 'rent', fields: ['memo'] },
        ],
      }),
    ).toEqual([{ id: 'p1', memo: 'rent' }]);
    expect(await store.find('payments', { where: { memo: 'rent\u0000' } })).toEqual([]);
    expect(await store.count('payments', { where: { memo: '\u0000' } })).toBe(0);
    expect(await store.findText('payments', { search: { text: '\u0000', fields: ['memo'] } }, 'memo')).toEqual([]);
    expect(await store.get('payments', 'p1\u0000')).toBeNull();
    expect(await store.getMany('payments', ['p1', '\u0000'])).toEqual([{ id: 'p1', memo: 'rent' }]);
    // A range is never a person's text: a NUL there is a programming error, refused before it is sent.
    expect(() => compileFind({ name: 'payments' }, { range: { memo: { gte: 'a\u0000' } } })).toThrow(
      ReadStoreQueryError,
    );
  });

  it('given a server that cannot be reached, when the store is opened, then ReadStoreUnavailableError is raised', async () => {
    const unreachable = new URL(await freshPostgresDatabase());
    unreachable.port = '1';
    unreachable.searchParams.delete('host'); // TCP, refused
    await expect(
      openPostgresReadStore({ ...options(unreachable.toString()), statementTimeoutMs: 2_000 }),
    ).rejects.toBeInstanceOf(ReadStoreUnavailableError);
  });

  it('given the store spread into a wrapper that replaces one method, as decorators and tests do, when the others are called, then they work', async () => {
    const store = await open(await freshPostgresDatabase(), { name: 'wallets' });
    const reads: string[][] = [];
    const wrapped: ReadStore = {
      ...store,
      getMany: (collection, ids) => (reads.push(ids), store.getMany(collection, ids)),
    };
    await wrapped.commit([{ op: 'upsert', collection: 'wallets', doc: { id: 'w1' } }], {
      projection: 'wallets',
      position: 1,
    });
    expect(await wrapped.getMany('wallets', ['w1'])).toEqual([{ id: 'w1' }]);
    expect(await wrapped.getCheckpoint('wallets')).toBe(1);
    expect(reads).toEqual([['w1']]);
  });

  it('given a collection or field name carrying SQL, or a name too long for PostgreSQL, when defined or queried, then it is refused', async () => {
    const store = await open(await freshPostgresDatabase(), { name: 'payments' });
    await expect(store.defineCollections([{ name: 'x"; DROP TABLE rm_payments; --' }])).rejects.toThrow(
      /collection name/,
    );
    await expect(store.defineCollections([{ name: 'checkpoints' }])).rejects.toThrow(/reserved/);
    await expect(store.defineCollections([{ name: 'a'.repeat(47) }])).rejects.toBeInstanceOf(ReadStoreQueryError);
    await expect(store.find('payments', { where: { "status') OR 1=1 --": 'x' } })).rejects.toThrow(/field path/);
    await expect(store.find('payments', { sort: [["id'); DROP TABLE rm_payments; --", 'asc']] })).rejects.toThrow(
      /field path/,
    );
    expect(await store.count('payments')).toBe(0);
  });
});

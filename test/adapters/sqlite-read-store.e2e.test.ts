import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { compileFind, openSqliteReadStore } from '../../src/adapters/sqlite/sqlite-read-store.ts';
import { StatementCache } from '../../src/adapters/sqlite/sqlite-statements.ts';
import type { CollectionDefinition, FindQuery, ReadStore } from '../../src/ports/read-store.ts';
import { describeReadStoreContract } from '../contracts/read-store.contract.ts';
import { tempDir } from '../support/temp-dir.ts';
import { rmSync } from 'node:fs';
import { StoreCorruptedError } from '../../src/ports/store-corrupted.ts';

const COUNTER_CHILD = fileURLToPath(new URL('../support/counter-and-take.child.ts', import.meta.url));

describeReadStoreContract('embedded SQLite', async () => {
  const dir = tempDir('read-store-');
  const store = openSqliteReadStore({ file: join(dir.path, 'read.sqlite') });
  return {
    store,
    cleanup: async () => {
      await store.close();
      dir.cleanup();
    },
  };
});

describe('SQLite read store, embedded specifics', () => {
  const PAYMENTS: CollectionDefinition = {
    name: 'payments',
    indexes: [['status', 'createdAt', 'id'], ['payer.msisdn']],
    searchFields: ['memo'],
  };
  let dir: ReturnType<typeof tempDir>;
  let file: string;
  const opened: ReadStore[] = [];

  async function open(): Promise<ReadStore> {
    const store = openSqliteReadStore({ file });
    opened.push(store);
    await store.defineCollections([PAYMENTS]);
    return store;
  }

  beforeEach(() => {
    dir = tempDir('read-store-');
    file = join(dir.path, 'read.sqlite');
  });
  afterEach(async () => {
    for (const store of opened.splice(0)) await store.close();
    dir.cleanup();
  });

  it('given ASCII and other search texts, then matches agree with JavaScript lowering, also on values with other characters (the Kelvin sign, dotted I) and never on a number', async () => {
    const store = await open();
    const memos: Record<string, unknown> = {
      a: 'Rent for ALICE',
      b: 'Temperature 300 \u212A',
      c: 'École',
      d: 'ecole',
      e: 12345,
      f: 'İstanbul',
      g: null,
      h: 'Ünïcode rent',
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
    for (const text of ['rent', 'ALICE', 'k', '300 k', 'ecole', 'cole', 'i', '123', 'istanbul', 'code rent', '']) {
      expect(await ids(text), text).toEqual(expected(text));
    }
    expect(await ids('k')).toContain('b'); // the Kelvin sign lowers to k: found through JavaScript
    expect(await ids('123')).toEqual([]); // a number is not text
  });

  it('given committed data, when the file is reopened, then documents and checkpoints are still there', async () => {
    const first = await open();
    await first.commit([{ op: 'upsert', collection: 'payments', doc: { id: 'p1', status: 'settled' } }], {
      projection: 'payments',
      position: 9,
    });
    await first.close();

    const second = await open();
    expect(await second.get('payments', 'p1')).toEqual({ id: 'p1', status: 'settled' });
    expect(await second.getCheckpoint('payments')).toBe(9);
  });

  it('given a writer and a second handle on the same file, when the writer commits, then the reader sees it', async () => {
    const writer = await open();
    const reader = await open();
    expect(await reader.count('payments')).toBe(0);
    await writer.commit(
      [{ op: 'upsert', collection: 'payments', doc: { id: 'p1', status: 'pending', memo: 'Lunch' } }],
      {
        projection: 'payments',
        position: 1,
      },
    );
    expect(
      await reader.find('payments', { where: { status: 'pending' }, search: { text: 'lunch', fields: ['memo'] } }),
    ).toEqual([{ id: 'p1', status: 'pending', memo: 'Lunch' }]);
    expect(await reader.getCheckpoint('payments')).toBe(1);
  });

  it('given two processes on one file, when both increment one counter and take the same documents at once, then every count is seen once and every document taken once', async () => {
    const store = openSqliteReadStore({ file });
    opened.push(store);
    await store.defineCollections([{ name: 'counters', indexes: [['expiresAt']] }, { name: 'held' }]);
    await store.commit(
      Array.from({ length: 20 }, (_, i) => ({ op: 'upsert' as const, collection: 'held', doc: { id: `doc-${i}` } })),
    );
    const run = () =>
      new Promise<{ counts: number[]; taken: string[] }>((resolve, reject) => {
        const child = spawn(process.execPath, [COUNTER_CHILD, file, '200'], { stdio: ['ignore', 'pipe', 'inherit'] });
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

  it('given a declared compound index, when a where + sort query runs, then SQLite searches the index without a scan or a temp b-tree', async () => {
    const store = await open();
    const writes = Array.from({ length: 2_000 }, (_, i) => ({
      op: 'upsert' as const,
      collection: 'payments',
      doc: {
        id: `p${i}`,
        status: ['pending', 'settled', 'failed'][i % 3]!,
        createdAt: 1_700_000_000 + i,
        payer: { msisdn: `+2547${i}` },
      },
    }));
    await store.commit(writes);

    const queries: FindQuery[] = [
      {
        where: { status: 'settled' },
        sort: [
          ['createdAt', 'desc'],
          ['id', 'desc'],
        ],
        limit: 50,
      },
      {
        where: { status: 'pending' },
        sort: [
          ['createdAt', 'asc'],
          ['id', 'asc'],
        ],
        skip: 100,
        limit: 50,
      },
      { where: { 'payer.msisdn': '+25477' } },
    ];
    const inspector = new Database(file, { readonly: true });
    try {
      for (const query of queries) {
        const { sql, params } = compileFind(PAYMENTS, query);
        const plan = (inspector.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as Array<{ detail: string }>).map(
          (r) => r.detail,
        );
        expect(plan.join('\n')).toMatch(/^SEARCH payments USING INDEX "?payments:/);
        expect(plan.join('\n')).not.toMatch(/SCAN|TEMP B-TREE/);
      }
    } finally {
      inspector.close();
    }
    // And the query the plan was checked for returns the right rows.
    const latest = await store.find('payments', queries[0]);
    expect(latest.map((d) => d.id).slice(0, 3)).toEqual(['p1999', 'p1996', 'p1993']);
  });

  it('given a file whose model declared an index it no longer declares, when a process starts with the new definitions, then that index is dropped, the others stay, and queries answer as before', async () => {
    const older = openSqliteReadStore({ file });
    await older.defineCollections([{ ...PAYMENTS, indexes: [...PAYMENTS.indexes!, ['memo']] }]);
    await older.commit([{ op: 'upsert', collection: 'payments', doc: { id: 'p1', status: 'settled', memo: 'rent' } }]);
    await older.close();
    const inspector = new Database(file);
    try {
      inspector.exec(`CREATE INDEX operators_own ON payments (id)`);
      const store = await open();
      expect(
        inspector
          .prepare(`SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'payments' AND sql IS NOT NULL`)
          .pluck()
          .all()
          .sort(),
      ).toEqual(['operators_own', 'payments:payer.msisdn', 'payments:status,createdAt,id']);
      expect(await store.find('payments', { search: { text: 'RENT', fields: ['memo'] } })).toEqual([
        { id: 'p1', status: 'settled', memo: 'rent' },
      ]);
    } finally {
      inspector.close();
    }
  });

  it('given a list model whose table was made before its text column existed, when its lists are read, then they answer from the documents, and from the column once the model is rebuilt', async () => {
    const LISTED: CollectionDefinition = { name: 'listed', indexes: [['n']], textField: 'apiText' };
    const before = new Database(file);
    before.exec(`CREATE TABLE listed (id TEXT PRIMARY KEY, doc TEXT NOT NULL)`);
    before.prepare('INSERT INTO listed VALUES (?, ?)').run('a', JSON.stringify({ id: 'a', n: 1, apiText: '{"a":1}' }));
    const columns = () =>
      before.prepare(`SELECT name FROM pragma_table_xinfo('listed') ORDER BY cid`).pluck().all() as string[];
    try {
      const store = await open();
      await store.defineCollections([LISTED]);
      expect(columns()).toEqual(['id', 'doc']);
      expect(await store.findText('listed', { sort: [['n', 'asc']] }, 'apiText')).toEqual(['{"a":1}']);

      const shadow = { ...LISTED, name: 'listed__rebuild', indexes: [] };
      await store.defineCollections([shadow]);
      await store.commit([{ op: 'upsert', collection: shadow.name, doc: { id: 'a', n: 1, apiText: '{"a":2}' } }]);
      await store.promote(shadow.name, 'listed', { from: shadow.name, to: 'listed' });
      expect(columns()).toEqual(['id', 'doc', 'text_apiText']);
      expect(await store.findText('listed', { sort: [['n', 'asc']] }, 'apiText')).toEqual(['{"a":2}']);
      expect(before.prepare('SELECT text_apiText FROM listed').pluck().all()).toEqual(['{"a":2}']);

      // Made anew without the column (a rebuild by an older version in another process): read from the documents.
      before.exec(`DROP TABLE listed; CREATE TABLE listed (id TEXT PRIMARY KEY, doc TEXT NOT NULL)`);
      before
        .prepare('INSERT INTO listed VALUES (?, ?)')
        .run('a', JSON.stringify({ id: 'a', n: 1, apiText: '{"a":3}' }));
      expect(await store.findText('listed', { sort: [['n', 'asc']] }, 'apiText')).toEqual(['{"a":3}']);
    } finally {
      before.close();
    }
  });

  describe('promote', () => {
    const SHADOW: CollectionDefinition = { ...PAYMENTS, name: 'payments__rebuild', indexes: [] };
    const indexNames = (inspector: Database.Database, table: string) =>
      inspector
        .prepare(
          `SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = ? AND sql IS NOT NULL ORDER BY name`,
        )
        .pluck()
        .all(table) as string[];

    async function promoted(source: CollectionDefinition): Promise<ReadStore> {
      const store = await open();
      await store.defineCollections([source]);
      await store.commit(
        [{ op: 'upsert', collection: 'payments', doc: { id: 'old', status: 'settled', createdAt: 1 } }],
        { projection: 'payments', position: 1 },
      );
      const writes = Array.from({ length: 2_000 }, (_, i) => ({
        op: 'upsert' as const,
        collection: source.name,
        doc: {
          id: `p${i}`,
          status: ['pending', 'settled', 'failed'][i % 3]!,
          createdAt: 1_700_000_000 + i,
          payer: { msisdn: `+2547${i}` },
        },
      }));
      await store.commit(writes, { projection: source.name, position: 2_000 });
      await store.promote(source.name, 'payments', { from: source.name, to: 'payments' });
      return store;
    }

    it('given a source built without indexes, when promoted, then where + sort queries on the target search its declared index without a scan or a temp b-tree', async () => {
      const store = await promoted(SHADOW);
      const queries: FindQuery[] = [
        {
          where: { status: 'settled' },
          sort: [
            ['createdAt', 'desc'],
            ['id', 'desc'],
          ],
          skip: 10,
          limit: 50,
        },
        { where: { 'payer.msisdn': '+25477' } },
      ];
      const inspector = new Database(file, { readonly: true });
      try {
        expect(indexNames(inspector, 'payments')).toEqual(['payments:payer.msisdn', 'payments:status,createdAt,id']);
        expect(indexNames(inspector, SHADOW.name)).toEqual([]);
        for (const query of queries) {
          const { sql, params } = compileFind(PAYMENTS, query);
          const plan = (inspector.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as Array<{ detail: string }>)
            .map((r) => r.detail)
            .join('\n');
          expect(plan).toMatch(/^SEARCH payments USING INDEX "?payments:/);
          expect(plan).not.toMatch(/SCAN|TEMP B-TREE/);
        }
      } finally {
        inspector.close();
      }
      expect((await store.find('payments', queries[0])).map((d) => d.id).slice(0, 2)).toEqual(['p1969', 'p1966']);
    });

    it('given a source with indexes of its own, when promoted, then the target keeps only its declared indexes', async () => {
      await promoted({
        ...PAYMENTS,
        name: 'payments__rebuild',
        indexes: [['createdAt'], ['status', 'createdAt', 'id']],
      });
      const inspector = new Database(file, { readonly: true });
      try {
        expect(indexNames(inspector, 'payments')).toEqual(['payments:payer.msisdn', 'payments:status,createdAt,id']);
        expect(
          inspector
            .prepare(`SELECT count(*) FROM sqlite_master WHERE name LIKE 'payments__rebuild%'`)
            .pluck()
            .get() as number,
        ).toBe(0);
      } finally {
        inspector.close();
      }
    });

    it('given a second handle that has read the target, when another handle promotes a source over it, then the second handle reads the promoted documents', async () => {
      const reader = await open();
      const writer = await open();
      await writer.commit([
        { op: 'upsert', collection: 'payments', doc: { id: 'old', status: 'settled', createdAt: 1 } },
      ]);
      expect(
        (
          await reader.find('payments', {
            where: { status: 'settled' },
            sort: [
              ['createdAt', 'desc'],
              ['id', 'desc'],
            ],
          })
        ).map((d) => d.id),
      ).toEqual(['old']);
      await writer.defineCollections([SHADOW]);
      await writer.commit(
        [{ op: 'upsert', collection: SHADOW.name, doc: { id: 'new', status: 'settled', createdAt: 2 } }],
        { projection: SHADOW.name, position: 7 },
      );
      await writer.promote(SHADOW.name, 'payments', { from: SHADOW.name, to: 'payments' });
      expect(
        (
          await reader.find('payments', {
            where: { status: 'settled' },
            sort: [
              ['createdAt', 'desc'],
              ['id', 'desc'],
            ],
          })
        ).map((d) => d.id),
      ).toEqual(['new']);
      expect(await reader.get('payments', 'old')).toBeNull();
      expect(await reader.getCheckpoint('payments')).toBe(7);
    });
  });

  it('given batches of every size up to 1,100 ids, when read with getMany, then each finds its documents and a handful of statements serve them all', async () => {
    const store = await open();
    await store.commit(
      Array.from({ length: 1100 }, (_, i) => ({ op: 'upsert' as const, collection: 'payments', doc: { id: `p${i}` } })),
    );
    const prepare = vi.spyOn(Database.prototype, 'prepare');
    try {
      for (let size = 1; size <= 1100; size += 1) {
        const ids = Array.from({ length: size }, (_, i) => `p${(i * 7 + size) % 1100}`);
        const found = await store.getMany('payments', [...ids, 'missing']);
        expect(found.map((doc) => doc.id).sort()).toEqual([...new Set(ids)].sort());
      }
      // One compiled statement per IN-list length would be 512 here, each held in native memory for good.
      const inLists = prepare.mock.calls.filter(([sql]) => String(sql).includes('WHERE id IN'));
      expect(inLists.length).toBeLessThanOrEqual(10);
    } finally {
      prepare.mockRestore();
    }
  });

  it("given the projections' commits (synchronous NORMAL: no fsync of their own), when a commit without checkpoint, a counter or a take follows one, then it writes with synchronous FULL", async () => {
    const store = await open();
    await store.defineCollections([{ name: 'counters' }]);
    const probe = new Database(':memory:');
    const statement = Object.getPrototypeOf(probe.prepare('SELECT 1')) as Record<'run' | 'get', () => unknown>;
    const seen: string[] = [];
    const spies = (['run', 'get'] as const).map((method) => {
      const original = statement[method];
      return vi.spyOn(statement, method).mockImplementation(function (this: { source: string }, ...args: []) {
        seen.push(this.source);
        return original.apply(this, args);
      });
    });
    let position = 0;
    /** The synchronous mode set last before the first statement starting with `sql` that `write` runs. */
    const modeAt = async (sql: string, write: () => Promise<unknown>) => {
      const from = seen.length;
      await write();
      const at = seen.findIndex((source, i) => i >= from && source.startsWith(sql));
      expect(at).toBeGreaterThanOrEqual(0);
      return seen
        .slice(0, at)
        .filter((source) => source.startsWith('PRAGMA synchronous'))
        .at(-1);
    };
    const checkpointed = () =>
      store.commit([{ op: 'upsert', collection: 'payments', doc: { id: `p${position}` } }], {
        projection: 'p',
        position: ++position,
      });
    try {
      expect(await modeAt('INSERT INTO "payments"', checkpointed)).toBe('PRAGMA synchronous = NORMAL');
      expect(
        await modeAt('INSERT INTO "payments"', () =>
          store.commit([{ op: 'upsert', collection: 'payments', doc: { id: 'plain' } }]),
        ),
      ).toBe('PRAGMA synchronous = FULL');
      await checkpointed();
      expect(
        await modeAt('INSERT INTO "counters"', () =>
          store.incrementCounter('counters', 'c', { by: 1, now: 0, expiresAt: 1000 }),
        ),
      ).toBe('PRAGMA synchronous = FULL');
      await checkpointed();
      expect(await modeAt('DELETE FROM "payments"', () => store.take('payments', 'p1'))).toBe(
        'PRAGMA synchronous = FULL',
      );
    } finally {
      spies.forEach((spy) => spy.mockRestore());
      probe.close();
    }
  });

  it('given more SQL shapes than the statement cache holds, then it keeps a bounded number, dropping the least recently used', () => {
    const db = new Database(':memory:');
    try {
      const cache = new StatementCache(db, 3);
      const first = cache.get('SELECT 1');
      cache.get('SELECT 2');
      cache.get('SELECT 3');
      expect(cache.get('SELECT 1')).toBe(first); // used again: now the most recent
      cache.get('SELECT 4');
      expect(cache.size).toBe(3);
      expect(cache.get('SELECT 1')).toBe(first);
      for (let i = 5; i < 500; i++) cache.get(`SELECT ${i}`);
      expect(cache.size).toBe(3);
    } finally {
      db.close();
    }
  });

  it('given a collection or field name carrying SQL, when defined or queried, then it is refused', async () => {
    const store = await open();
    await expect(store.defineCollections([{ name: 'x"; DROP TABLE payments; --' }])).rejects.toThrow(/collection name/);
    await expect(store.defineCollections([{ name: 'checkpoints' }])).rejects.toThrow(/reserved/);
    await expect(store.find('payments', { where: { "status') OR 1=1 --": 'x' } })).rejects.toThrow(/field path/);
    await expect(store.find('payments', { sort: [["id'); DROP TABLE payments; --", 'asc']] })).rejects.toThrow(
      /field path/,
    );
    expect(await store.count('payments')).toBe(0);
  });
});

describe('SQLite read store: the file at its path', () => {
  it('when its file is deleted and a new one made at the path (projections rebuild on a deleted file), then the process refuses to go on with the old one', async () => {
    const dir = tempDir('read-store-replaced-');
    const file = join(dir.path, 'read-models.sqlite');
    const store = openSqliteReadStore({ file, fileCheckIntervalMs: 0 });
    try {
      await store.commit([], { projection: 'p', position: 1 });
      expect(await store.getCheckpoint('p')).toBe(1);
      rmSync(file);
      for (const suffix of ['-wal', '-shm']) rmSync(`${file}${suffix}`, { force: true });
      await expect(store.getCheckpoint('p')).rejects.toThrow(
        /read-models\.sqlite is corrupted: the file was removed while this process had it open/,
      );
      const rebuilt = openSqliteReadStore({ file });
      await rebuilt.commit([], { projection: 'p', position: 7 });
      await rebuilt.close();
      const refused = await store.commit([], { projection: 'p', position: 2 }).catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(StoreCorruptedError);
      expect((refused as Error).message).toMatch(/replaced while this process had it open/);
    } finally {
      await store.close();
      dir.cleanup();
    }
  });
});

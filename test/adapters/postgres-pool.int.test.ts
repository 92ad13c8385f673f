import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type pg from 'pg';
import {
  isTransientPostgresError,
  migrate,
  openPostgresPool,
  prepared,
} from '../../src/adapters/postgres/postgres-pool.ts';
import { freshPostgresDatabase } from '../support/postgres-server.ts';
import { waitFor } from '../support/system.ts';

describe('PostgreSQL migrations', () => {
  let pools: pg.Pool[];

  beforeAll(async () => {
    const url = await freshPostgresDatabase();
    // One pool per would-be process: each migrates on its own connection.
    pools = Array.from({ length: 5 }, () =>
      openPostgresPool({ url, poolSize: 1, statementTimeoutMs: 10_000, applicationName: 'migrate test' }),
    );
  });
  afterAll(() => Promise.all(pools.map((pool) => pool.end())));

  it('given a fresh database, when five processes migrate at once, again and again, then every one succeeds and each version is applied once', async () => {
    const migrations = [
      { version: 1, sql: 'CREATE TABLE migrated (n INTEGER)' },
      { version: 2, sql: 'INSERT INTO migrated VALUES (2)' },
    ];
    for (let round = 0; round < 20; round++) {
      const outcomes = await Promise.allSettled(pools.map((pool) => migrate(pool, 'test', migrations)));
      expect(outcomes.filter((outcome) => outcome.status === 'rejected')).toEqual([]);
      expect((await pools[0]!.query('SELECT n FROM migrated')).rows).toEqual([{ n: 2 }]);
      // The next round starts again from nothing, the history table included.
      await pools[0]!.query('DROP TABLE migrated; DROP TABLE wallet_ops_migrations');
    }
  });
});

describe('PostgreSQL pool: a connection lost while a caller holds it', () => {
  let url: string;
  const escaped: unknown[] = [];
  const onEscape = (error: unknown) => escaped.push(error);

  beforeAll(async () => {
    url = await freshPostgresDatabase();
    process.on('uncaughtException', onEscape);
  });
  afterAll(() => {
    process.off('uncaughtException', onEscape);
  });

  it('given a connection checked out of the pool (a transaction between statements), when its backend is terminated, then the process does not crash, the holder gets the error and the pool opens a new connection', async () => {
    const pool = openPostgresPool({
      url,
      poolSize: 2,
      statementTimeoutMs: 5_000,
      applicationName: 'held connection test',
    });
    try {
      const held = await pool.connect();
      const pid = (await held.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
      const ended = new Promise((resolve) => held.once('end', resolve));
      await pool.query('SELECT pg_terminate_backend($1)', [pid]);
      // Without a listener of the pool's, the client's 'error' event is an uncaught exception (and no 'end' follows).
      await Promise.race([ended, waitFor(() => escaped.length > 0)]);
      expect(escaped).toEqual([]);
      await expect(held.query('SELECT 1')).rejects.toThrow();
      held.release(true);
      expect((await pool.query<{ one: number }>('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
    } finally {
      await pool.end();
    }
  });
});

describe('which PostgreSQL errors are worth retrying', () => {
  const nodeError = (code: string, syscall: string) =>
    Object.assign(new Error(`${syscall} ${code}`), { code, syscall });

  it('given a Unix-domain socket whose file is not there (a server stopped, or not started yet), when connecting, then it is transient', () => {
    expect(isTransientPostgresError(nodeError('ENOENT', 'connect'))).toBe(true);
  });

  it('given a server that refuses writes (read-only, a standby: class 25) or shuts down (57P01, 57P03), then it is transient', () => {
    const server = (code: string) => Object.assign(new Error(code), { code });
    for (const code of ['25006', '25P03', '57P01', '57P03'])
      expect(isTransientPostgresError(server(code)), code).toBe(true);
    expect(isTransientPostgresError(server('23505')), 'a unique violation').toBe(false);
  });

  it("given a database whose default is read-only, when a pool writes, then the server's error is the transient one", async () => {
    const url = await freshPostgresDatabase();
    const pool = openPostgresPool({ url, poolSize: 1, statementTimeoutMs: 5_000, applicationName: 'read-only test' });
    try {
      await pool.query('CREATE TABLE written (n INTEGER)');
      await pool.query('SET default_transaction_read_only = on');
      const error = await pool.query('INSERT INTO written VALUES (1)').then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toMatchObject({ code: '25006' });
      expect(isTransientPostgresError(error)).toBe(true);
    } finally {
      await pool.end();
    }
  });

  it('given a file that is not there for another call (a certificate named in the URL), then it is not: retrying would loop for ever', () => {
    expect(isTransientPostgresError(nodeError('ENOENT', 'open'))).toBe(false);
  });

  it("given a socket directory with no server's socket in it, when a pool queries, then the error is the transient one", async () => {
    const url = new URL(await freshPostgresDatabase());
    url.searchParams.set('host', '/nonexistent-directory-of-wallet-ops-tests');
    const pool = openPostgresPool({
      url: url.toString(),
      poolSize: 1,
      statementTimeoutMs: 2_000,
      applicationName: 'missing socket test',
    });
    try {
      const error = await pool.query('SELECT 1').then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toMatchObject({ code: 'ENOENT', syscall: 'connect' });
      expect(isTransientPostgresError(error)).toBe(true);
    } finally {
      await pool.end();
    }
  });
});

describe('prepared statements', () => {
  it('given one text, then one name for it; given another text, then another name', () => {
    const first = prepared('SELECT $1::int AS n', [1]);
    expect(prepared('SELECT $1::int AS n', [2])).toEqual({
      name: first.name,
      text: 'SELECT $1::int AS n',
      values: [2],
    });
    expect(prepared('SELECT $1::int AS m', [1]).name).not.toBe(first.name);
  });

  it('given a statement run three times on one connection, then the server prepared it once, and each run answered with its own values', async () => {
    const pool = openPostgresPool({
      url: await freshPostgresDatabase(),
      poolSize: 1,
      statementTimeoutMs: 5_000,
      applicationName: 'prepared test',
    });
    try {
      const text = 'SELECT $1::int + 1 AS next';
      const answers = [];
      for (const n of [1, 2, 3]) answers.push((await pool.query<{ next: number }>(prepared(text, [n]))).rows[0]!.next);
      expect(answers).toEqual([2, 3, 4]);
      const { rows } = await pool.query<{ name: string; statement: string }>(
        'SELECT name, statement FROM pg_prepared_statements',
      );
      expect(rows).toEqual([{ name: prepared(text, []).name, statement: text }]);
    } finally {
      await pool.end();
    }
  });
});

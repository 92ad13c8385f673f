import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type pg from 'pg';
import { migrate, openPostgresPool } from '../../src/adapters/postgres/postgres-pool.ts';
import { freshPostgresDatabase } from '../support/postgres-server.ts';

describe('PostgreSQL migrations', () => {
  let pools: pg.Pool[];

  beforeAll(async () => {
    const url = await freshPostgresDatabase();
    // One pool per would-be process: each migrates on its own connection.
    pools = Array.from({ length: 5 }, () => openPostgresPool({ url, poolSize: 1, statementTimeoutMs: 10_000, applicationName: 'migrate test' }));
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

describe('PostgreSQL pool: a connection terminated while it is checked out', () => {
  let url: string;
  let pool: pg.Pool;

  beforeAll(async () => {
    url = await freshPostgresDatabase();
    pool = openPostgresPool({ url, poolSize: 2, statementTimeoutMs: 10_000, applicationName: 'terminated test' });
  });
  afterAll(() => pool.end());

  // pg_terminate_backend reaches every session, also one held between two statements of a transaction; the
  // unhandled 'error' of its client crashed the process (found by the PostgreSQL soak).
  it('given a client held between two statements, when the server terminates its session, then the process survives and the pool serves the next call', async () => {
    const client = await pool.connect();
    await client.query('BEGIN');
    const pid = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
    const ended = new Promise((resolve) => client.once('end', resolve));

    await pool.query('SELECT pg_terminate_backend($1)', [pid]);
    await ended;

    await expect(client.query('COMMIT')).rejects.toThrow();
    client.release(true);
    expect((await pool.query<{ one: number }>('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
  });
});

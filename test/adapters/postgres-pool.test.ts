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

import { realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import pg from 'pg';
import { expect, it } from 'vitest';
import { databaseUrl, testPostgresUrl } from './postgres-server.ts';

/**
 * The run's PostgreSQL server is started by the global setup, in vitest's main process, which lacks the workers'
 * TMPDIR (vitest.config.ts: tmpfs when there is one with room). On the disk, every CREATE DATABASE (one per test
 * system) wrote its 7 MB copy there: ten times slower than on tmpfs, and most of the PostgreSQL suites' wall time.
 */
it("given the run's own PostgreSQL server, then its data directory is in the workers' temporary directory", async () => {
  const admin = new pg.Client({ connectionString: databaseUrl(testPostgresUrl(), 'postgres') });
  await admin.connect();
  try {
    const { rows } = await admin.query<{ data_directory: string }>('SHOW data_directory');
    // A server named by POSTGRES_URL is not the run's own: where it keeps its data is its owner's choice.
    if (process.env.POSTGRES_URL) expect(testPostgresUrl()).toBe(process.env.POSTGRES_URL);
    else
      expect(
        rows[0]!.data_directory.startsWith(`${realpathSync(tmpdir())}/`),
        `${rows[0]!.data_directory} not in ${tmpdir()}`,
      ).toBe(true);
  } finally {
    await admin.end();
  }
});

it("given the run's own PostgreSQL server, then its clients reach it over its Unix-domain socket, not TCP", async () => {
  // A server named by POSTGRES_URL is reached as that URL says.
  if (process.env.POSTGRES_URL) return expect(testPostgresUrl()).toBe(process.env.POSTGRES_URL);
  const client = new pg.Client({ connectionString: databaseUrl(testPostgresUrl(), 'postgres') });
  await client.connect();
  try {
    // No client address: the connection came through the socket (over TCP it would be 127.0.0.1).
    const { rows } = await client.query<{ address: string | null }>('SELECT inet_client_addr()::text AS address');
    expect(rows).toEqual([{ address: null }]);
  } finally {
    await client.end();
  }
});

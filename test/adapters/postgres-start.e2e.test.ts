import { execFile } from 'node:child_process';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import { Writable } from 'node:stream';
import { afterEach, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { createLogger } from '../../src/logger.ts';
import { buildWalletOps, type WalletOps } from '../../src/wallet-ops.ts';
import { freshPostgresDatabase } from '../support/postgres-server.ts';
import { tempDir } from '../support/temp-dir.ts';
import { waitFor } from '../support/system.ts';

/**
 * A PostgreSQL server that is not there yet when wallet-ops starts (the database container still starting):
 * the start waits for it, as it waits for a store that blinks, instead of failing and crash-looping.
 * The server is reached through a TCP relay that the test opens late.
 */
const MAIN = fileURLToPath(new URL('../../src/main.ts', import.meta.url));
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function relay(target: URL): { port: Promise<number>; open(): Promise<void> } {
  const sockets = new Set<Socket>();
  let server: Server | undefined;
  // A port that refuses connections until the relay listens on it.
  const port = new Promise<number>((resolve) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const { port: free } = probe.address() as { port: number };
      probe.close(() => resolve(free));
    });
  });
  cleanups.push(async () => {
    sockets.forEach((socket) => socket.destroy());
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  });
  return {
    port,
    async open() {
      const listening = await port;
      server = createServer((client) => {
        const upstream = connect(Number(target.port), target.hostname);
        for (const socket of [client, upstream]) {
          sockets.add(socket);
          socket.on('error', () => {});
          socket.on('close', () => (client.destroy(), upstream.destroy()));
        }
        client.pipe(upstream).pipe(client);
      });
      await new Promise<void>((resolve) => server!.listen(listening, '127.0.0.1', () => resolve()));
    },
  };
}

it('given the PostgreSQL server not reachable yet, when wallet-ops starts, then it waits for it and serves once it is there', async () => {
  const database = new URL(await freshPostgresDatabase());
  const late = relay(database);
  const url = new URL(database);
  url.port = String(await late.port);
  url.searchParams.delete('host'); // through the relay on TCP, not the run's server's Unix socket
  const dir = tempDir('wallet-ops-pg-start-');
  cleanups.push(() => dir.cleanup());
  const config = loadConfig({
    DATA_DIR: dir.path,
    LOG_LEVEL: 'warn',
    POSTGRES_URL: url.toString(),
    SECRETS_KEY: Buffer.alloc(32, 7).toString('base64'),
    POSTGRES_STATEMENT_TIMEOUT_MS: '2000',
  });
  let logs = '';
  const logger = createLogger(
    config.LOG_LEVEL,
    new Writable({ write: (chunk, _encoding, done) => ((logs += String(chunk)), done()) }),
  );

  const starting = buildWalletOps(config, logger, undefined, ['write-api', 'read-api', 'projections']);
  const outcome = starting.then(
    () => 'started',
    (error: unknown) => `failed: ${String(error)}`,
  );
  // Not there until wallet-ops has found it missing and said it retries.
  await waitFor(() => /store unavailable at start/.test(logs), 15_000);
  await late.open();
  expect(await outcome).toBe('started');
  const ops: WalletOps = await starting;
  cleanups.push(() => ops.close());
  expect(await ops.stores.eventStore.headPosition()).toBe(0);
  // One line per warning, the store's message without a stack, saying how long it keeps trying.
  const warnings = logs
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as { msg: string; attempt: number; error: string; err?: unknown });
  expect(warnings[0]).toMatchObject({
    msg: 'opening the stores: store unavailable at start (attempt 1, retrying for up to 60 s)',
    attempt: 1,
    error: expect.stringMatching(/ECONNREFUSED|connect/),
  });
  for (const warning of warnings) expect(warning.err).toBeUndefined();
  expect(logs).not.toMatch(/\\n\s+at /);
}, 60_000);

it('when wallet-ops starts with a wrong PostgreSQL password, then it exits 1 with one line that says so, and no stack', async () => {
  const url = new URL(await freshPostgresDatabase());
  url.password = 'not-the-password';
  const dir = tempDir('wallet-ops-pg-password-');
  cleanups.push(() => dir.cleanup());
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DATA_DIR: dir.path,
    PORT: '0',
    LOG_LEVEL: 'warn',
    POSTGRES_URL: url.toString(),
    SECRETS_KEY: Buffer.alloc(32, 7).toString('base64'),
  };
  delete env.EVENT_STORE;
  delete env.READ_STORE;

  const result = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
    execFile(process.execPath, [MAIN], { env, timeout: 30_000 }, (error, _stdout, stderr) =>
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : null) : 0, stderr }),
    );
  });

  expect(result.code).toBe(1);
  expect(result.stderr).toMatch(
    /^cannot start: PostgreSQL refused the login: password authentication failed for user "[^"]+" \(28P01\); check the user and password in POSTGRES_URL\n$/,
  );
  expect(result.stderr).not.toContain('not-the-password');
}, 60_000);

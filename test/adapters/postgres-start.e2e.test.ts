import { createServer, connect, type Server, type Socket } from 'node:net';
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
  const config = loadConfig({ DATA_DIR: dir.path, LOG_LEVEL: 'warn', POSTGRES_URL: url.toString(), SECRETS_KEY: Buffer.alloc(32, 7).toString('base64'), POSTGRES_STATEMENT_TIMEOUT_MS: '2000' });
  let logs = '';
  const logger = createLogger(config.LOG_LEVEL, new Writable({ write: (chunk, _encoding, done) => ((logs += String(chunk)), done()) }));

  const starting = buildWalletOps(config, logger, undefined, ['write-api', 'read-api', 'projections']);
  const outcome = starting.then(() => 'started', (error: unknown) => `failed: ${String(error)}`);
  // Not there until wallet-ops has found it missing and said it retries.
  await waitFor(() => /store unavailable at start; retrying/.test(logs), 15_000);
  await late.open();
  expect(await outcome).toBe('started');
  const ops: WalletOps = await starting;
  cleanups.push(() => ops.close());
  expect(logs).toMatch(/store unavailable at start; retrying/);
  expect(await ops.stores.eventStore.headPosition()).toBe(0);
}, 60_000);

/**
 * `serve` (src/server.ts) driven in this process, where coverage sees it: the starts that fail before anything is
 * served. Each closes what it opened (the SQLite files' write-ahead logs are folded back and removed only when the
 * last connection closes) and says why; and a start that serves until SIGTERM, its exit recorded instead of made. The
 * process as an operator runs it (its log, a request in flight at the signal) is tested in child processes:
 * test/http/listen.e2e.test.ts, shutdown.e2e.test.ts, metrics.e2e.test.ts.
 */
import { readdirSync } from 'node:fs';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { loadConfig } from '../src/config.ts';
import { DemoStoreRefusedError } from '../src/demo-store.ts';
import { createLogger } from '../src/logger.ts';
import { ListenError, serve, SHUTDOWN_TIMEOUT_MS, storesInUse } from '../src/server.ts';
import { buildWalletOps } from '../src/wallet-ops.ts';
import { tempDir } from './support/temp-dir.ts';

const dir = tempDir('serve-');
let occupier: Server;
let taken: number;

beforeAll(async () => {
  occupier = createServer();
  await new Promise<void>((resolve) => occupier.listen(0, '127.0.0.1', () => resolve()));
  taken = (occupier.address() as AddressInfo).port;
});
afterAll(async () => {
  await new Promise((resolve) => occupier.close(resolve));
  dir.cleanup();
});
afterEach(() => {
  vi.unstubAllEnvs();
  vi.restoreAllMocks();
});

/** serve() reads process.env, as `npm start` does: only the embedded stores, in a data directory of the test's. */
function environment(dataDir: string, env: Record<string, string>): void {
  for (const name of ['EVENT_STORE', 'READ_STORE', 'POSTGRES_URL', 'KURRENTDB_URL', 'MONGODB_URL', 'SECRETS_KEY'])
    vi.stubEnv(name, undefined);
  vi.stubEnv('DATA_DIR', dataDir);
  vi.stubEnv('HOST', '127.0.0.1');
  vi.stubEnv('LOG_LEVEL', 'silent');
  for (const [name, value] of Object.entries(env)) vi.stubEnv(name, value);
}

/** A store's files left open keep their write-ahead log; closed, SQLite folds it back and removes it. */
const openLogs = (dataDir: string) => readdirSync(dataDir).filter((name) => /-(wal|shm)$/.test(name));

describe('serve, when the start fails', () => {
  it('given its port is taken, when it starts, then it rejects naming the address and the reason, and has closed its stores', async () => {
    const dataDir = join(dir.path, 'port-taken');
    environment(dataDir, { PORT: String(taken) });

    const failure = await serve(['write-api', 'read-api']).catch((error: unknown) => error);

    expect(failure).toBeInstanceOf(ListenError);
    expect(failure).toMatchObject({
      code: 'EADDRINUSE',
      message: `cannot listen on 127.0.0.1:${taken}: address already in use (EADDRINUSE)`,
    });
    expect(readdirSync(dataDir)).toContain('events.sqlite');
    expect(openLogs(dataDir)).toEqual([]);
  });

  it('given METRICS_PORT is taken, when it starts, then it rejects naming the metrics address, and has closed its stores and its API port', async () => {
    const dataDir = join(dir.path, 'metrics-taken');
    const api = await freePort();
    environment(dataDir, { PORT: String(api), METRICS_PORT: String(taken) });

    const failure = await serve(['read-api']).catch((error: unknown) => error);

    expect(failure).toBeInstanceOf(ListenError);
    expect((failure as Error).message).toBe(`cannot listen on 127.0.0.1:${taken}: address already in use (EADDRINUSE)`);
    expect(openLogs(dataDir)).toEqual([]);
    // The API's port, which it had, is free again: a restart can have it.
    expect(await freePort(api)).toBe(api);
  });

  it("given a data directory with somebody's events, when it starts with --demo, then it refuses before serving and has closed its stores", async () => {
    const dataDir = join(dir.path, 'not-the-demos');
    const config = loadConfig({ DATA_DIR: dataDir, LOG_LEVEL: 'silent' });
    const existing = await buildWalletOps(config, createLogger('silent'), () => new Date(), ['write-api']);
    await existing.stores.eventStore.append(
      'party-7',
      [{ type: 'PartyOnboarded', data: { name: 'a real one' }, metadata: { actor: 'operator:test' } }],
      'no_stream',
    );
    await existing.close();
    environment(dataDir, { PORT: String(taken) });

    const failure = await serve(['write-api'], { demo: true }).catch((error: unknown) => error);

    expect(failure).toBeInstanceOf(DemoStoreRefusedError);
    expect((failure as Error).message).toMatch(
      /^this event store already holds events the demo did not write \(the first: PartyOnboarded on party-7\)/,
    );
    expect(openLogs(dataDir)).toEqual([]);
  });
});

describe('serve, once it listens', () => {
  it('given free ports, when it starts as npm start does and then gets SIGTERM, then it serves the API and /metrics with the followers on their thread until the signal, and then closes its ports and stores and exits 0', async () => {
    const dataDir = join(dir.path, 'serving');
    const [api, metrics] = [await freePort(), await freePort()];
    environment(dataDir, { PORT: String(api), METRICS_PORT: String(metrics) });
    const before = new Set(process.listeners('SIGTERM'));
    const beforeInterrupt = new Set(process.listeners('SIGINT'));
    // The shutdown ends the process: here the test's, so its exit is only recorded.
    const exited = new Promise<unknown>((resolve) =>
      vi.spyOn(process, 'exit').mockImplementation((code) => (resolve(code), undefined as never)),
    );

    await serve();
    const health = await fetch(`http://127.0.0.1:${api}/health`);
    const scrape = await fetch(`http://127.0.0.1:${metrics}/metrics`);
    const sigterm = process.listeners('SIGTERM').filter((listener) => !before.has(listener));
    const sigint = process.listeners('SIGINT').filter((listener) => !beforeInterrupt.has(listener));
    for (const listener of sigint) process.off('SIGINT', listener);

    expect(health.status).toBe(200);
    expect(await health.json()).toMatchObject({ status: 'ok', followersThread: { state: 'running', restarts: 0 } });
    expect(scrape.status).toBe(200);
    expect(await scrape.text()).toContain('# TYPE');
    expect(sigterm).toHaveLength(1);
    expect(sigint).toHaveLength(1);

    const timers = vi.spyOn(globalThis, 'setTimeout');
    // Called, not emitted: the signal would reach this test's process. Its handler is then taken off, as a signal's
    // `once` would: the worker must still stop when the test runner signals it.
    (sigterm[0] as (signal: string) => void)('SIGTERM');
    process.off('SIGTERM', sigterm[0]!);

    expect(await exited).toBe(0);
    // A shutdown that hangs is ended after SHUTDOWN_TIMEOUT_MS: that watchdog would end this test's process, later.
    const watchdogs = timers.mock.calls.flatMap(([, ms], i) =>
      ms === SHUTDOWN_TIMEOUT_MS ? [timers.mock.results[i]!.value as NodeJS.Timeout] : [],
    );
    watchdogs.forEach((watchdog) => clearTimeout(watchdog));
    expect(watchdogs).toHaveLength(1);
    expect(openLogs(dataDir)).toEqual([]);
    expect(await freePort(api)).toBe(api);
    expect(await freePort(metrics)).toBe(metrics);
  });
});

describe('the reason a listen failed', () => {
  const cause = (code: string | undefined, message: string) =>
    Object.assign(new Error(message), code ? { code } : {}) as NodeJS.ErrnoException;

  it('when the host is an IPv6 address, then the address is written in brackets', () => {
    expect(new ListenError('::1', 8080, cause('EADDRNOTAVAIL', 'bind EADDRNOTAVAIL ::1:8080')).message).toBe(
      'cannot listen on [::1]:8080: address not available on this host (EADDRNOTAVAIL)',
    );
  });

  it("when the system's code is not one it explains, then the system's message stands, with its code", () => {
    const error = new ListenError('10.0.0.1', 80, cause('EPERM', 'listen EPERM: operation not permitted 10.0.0.1:80'));
    expect(error.message).toBe(
      'cannot listen on 10.0.0.1:80: listen EPERM: operation not permitted 10.0.0.1:80 (EPERM)',
    );
    expect(error.code).toBe('EPERM');
  });

  it('when the failure has no code, then the message says what happened, without a code', () => {
    const error = new ListenError('127.0.0.1', 3000, cause(undefined, 'the server is already listening'));
    expect(error.message).toBe('cannot listen on 127.0.0.1:3000: the server is already listening');
    expect(error.code).toBeUndefined();
  });
});

describe('the stores the start line names', () => {
  const embedded = loadConfig({ DATA_DIR: '/var/lib/wallet-ops' });

  it('when the stores are embedded, then it names the data directory', () => {
    expect(storesInUse(embedded)).toEqual({
      events: 'embedded (/var/lib/wallet-ops)',
      readModels: 'embedded (/var/lib/wallet-ops)',
      ledger: 'embedded (/var/lib/wallet-ops)',
    });
  });

  it("when they are servers, then it names each server's address without its password", () => {
    const stores = storesInUse({
      ...embedded,
      EVENT_STORE: 'kurrentdb',
      KURRENTDB_URL: 'kurrentdb://admin:changeit@events.internal:2113?tls=false',
      READ_STORE: 'mongodb',
      MONGODB_URL: 'mongodb://reader:s3cret@reads.internal:27017/wallet',
      LEDGER: 'evm',
    });

    expect(stores).toEqual({
      events: 'kurrentdb (kurrentdb://admin:***@events.internal:2113?tls=false)',
      readModels: 'mongodb (mongodb://reader:***@reads.internal:27017/wallet)',
      ledger: 'evm',
    });
  });

  it('when a URL cannot be parsed, then it is not shown at all (it may hold a password)', () => {
    const stores = storesInUse({ ...embedded, EVENT_STORE: 'postgres', POSTGRES_URL: 'postgres://u:p@[bad/w' });

    expect(stores.events).toBe('postgres ((a URL not shown))');
    expect(JSON.stringify(stores)).not.toContain(':p@');
  });
});

/** A port nothing listens on (the one asked for, when given). */
function freePort(port = 0): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(port, '127.0.0.1', () => {
      const { port: free } = probe.address() as AddressInfo;
      probe.close(() => resolve(free));
    });
  });
}

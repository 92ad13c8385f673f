/**
 * `wallet-ops serve` with every part (what `npm start` runs) runs the followers (projections, sealer, executor, key
 * revocations, webhooks) on a worker thread of the process (src/followers-thread.ts). Seen from outside, nothing
 * changes: a create is listed by the next read, /ready and /metrics show the thread's consumers, SIGTERM stops it
 * cleanly. A thread that dies is reported by /health with its reason and replaced, and what was created meanwhile
 * ends up projected exactly once.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { openStores } from '../src/adapters/open-stores.ts';
import { loadConfig } from '../src/config.ts';
import { followersThreadSplit } from '../src/followers-thread.ts';
import { BALANCES_COLLECTION, type BalanceDoc } from '../src/projections/balances.ts';
import { killAllChildren, spawnWalletOps, stopProcess, within, type WalletOpsProcess } from './support/processes.ts';
import { call, seedPayingDistributor, waitFor } from './support/system.ts';
import { knownStoreEnv } from './support/test-stores.ts';
import { tempDir } from './support/temp-dir.ts';

const PHONE = '+2348123456781';
const CASH_IN = { operationType: 'cash-in', amount: '1.00', phoneTo: PHONE };

/** The port of a process once it has started (its start line). */
async function started(process: WalletOpsProcess): Promise<number> {
  await within(
    waitFor(() => process.output().includes('"wallet-ops started"'), 60_000),
    61_000,
    `start: ${process.output()}`,
  );
  const line = process
    .output()
    .split('\n')
    .find((l) => l.includes('"wallet-ops started"'))!;
  return (JSON.parse(line) as { port: number }).port;
}

/**
 * Every operation of the distributor's list, newest first, page by page; undefined while the model is too far behind
 * to be served (503).
 */
async function listAll(base: string, path: string, apiKey: string): Promise<string[] | undefined> {
  const ids: string[] = [];
  for (let offset = 0; ; offset += 1000) {
    const page = await call(base, 'GET', `${path}?limit=1000&offset=${offset}`, { apiKey });
    if (page.status === 503) return undefined;
    expect(page.status, JSON.stringify(page.body)).toBe(200);
    ids.push(...(page.body as Array<{ operationID: string }>).map((operation) => operation.operationID));
    if (page.body.length < 1000) return ids;
  }
}

export function followersThreadEndToEnd(): void {
  afterAll(killAllChildren);

  describe('the followers on a thread of the serving process', () => {
    it('when a process serves an API and follows the history, then the followers go to the thread, unless FOLLOWERS_THREAD is false; a process of one kind keeps every part', () => {
      const on = { FOLLOWERS_THREAD: true };
      expect(followersThreadSplit(on, ['write-api', 'read-api', 'projections', 'executor', 'webhooks'])).toEqual({
        main: ['write-api', 'read-api'],
        thread: ['projections', 'executor', 'webhooks'],
      });
      expect(followersThreadSplit(on, ['read-api', 'projections'])).toEqual({
        main: ['read-api'],
        thread: ['projections'],
      });
      expect(followersThreadSplit({ FOLLOWERS_THREAD: false }, ['write-api', 'projections'])).toBeUndefined();
      expect(followersThreadSplit(on, ['write-api', 'read-api'])).toBeUndefined();
      expect(followersThreadSplit(on, ['projections', 'executor', 'webhooks'])).toBeUndefined();
      expect(loadConfig({}).FOLLOWERS_THREAD).toBe(true);
    });

    it("when a distributor creates operations and lists them at once, then each is listed, and /ready and /metrics show the thread's consumers", async () => {
      const dir = tempDir('followers-thread-');
      try {
        const { distributor, apiKey } = await seedPayingDistributor(dir.path, PHONE);
        const server = spawnWalletOps(dir.path, [], { LOG_LEVEL: 'info' });
        const base = `http://127.0.0.1:${await started(server)}`;
        const path = `/api/v1/distributors/${distributor.ref.id}/operations`;

        const missing: number[] = [];
        for (let i = 0; i < 10; i++) {
          const created = await call(base, 'POST', path, { apiKey, body: CASH_IN });
          expect(created.status, JSON.stringify(created.body)).toBe(200);
          const listed = await call(base, 'GET', `${path}?limit=1`, { apiKey });
          if (listed.body[0]?.operationID !== created.body.operationID) missing.push(i);
        }
        expect(missing).toEqual([]);

        const health = await call(base, 'GET', '/health');
        expect(health.body).toMatchObject({ status: 'ok', followersThread: { state: 'running', restarts: 0 } });
        const ready = await call(base, 'GET', '/ready');
        const names = (ready.body.consumers as Array<{ name: string }>).map((consumer) => consumer.name);
        // The API's thread: the directories and the balances in memory; the followers' thread: the rest, once each.
        for (const name of ['api-key-directory', 'balances-view', 'projection:distributor-operations', 'sealer'])
          expect(names).toContain(name);
        for (const name of ['executor', 'key-revocations', 'webhook-outbox', 'webhook-deliveries'])
          expect(names).toContain(name);
        expect(new Set(names).size).toBe(names.length);
        // The thread's consumers as it last reported them (every 250 ms): on a loaded machine a scrape can come before
        // its first report after start, so the scrape is asked again until the thread's executor shows up and running.
        let metrics = '';
        await waitFor(async () => {
          metrics = await (await fetch(`${base}/metrics`)).text();
          return metrics.includes('wallet_ops_consumer_up{consumer="executor"} 1');
        }, 30_000);
        expect(metrics).toContain('wallet_ops_rebuild_in_progress{projection="balances"} 0');
        expect(metrics.match(/^# TYPE wallet_ops_consumer_up gauge$/gm)).toHaveLength(1);

        expect((await stopProcess(server)).code).toBe(0);
      } finally {
        dir.cleanup();
      }
    }, 120_000);

    it('when the followers thread blocks its event loop, then /health fails saying it is silent, and is ok again once it reports', async () => {
      const dir = tempDir('followers-thread-');
      try {
        await seedPayingDistributor(dir.path, PHONE);
        const server = spawnWalletOps(dir.path, [], {
          LOG_LEVEL: 'info',
          // The thread blocks for 12 s, 1 s after it is up: silent past 5 s, unhealthy 1 s later.
          FAULT_FOLLOWERS_THREAD_BLOCK_AFTER_MS: '1000',
          FAULT_HANG_MS: '12000',
          CONSUMER_UNHEALTHY_AFTER_MS: '1000',
        });
        const base = `http://127.0.0.1:${await started(server)}`;
        let failing: { failing: Array<{ consumer: string; lastError: string }> } | undefined;
        await waitFor(async () => {
          const health = await call(base, 'GET', '/health');
          if (health.status === 503) failing = health.body;
          return failing !== undefined;
        }, 30_000);
        expect(failing?.failing).toContainEqual(
          expect.objectContaining({ consumer: 'executor', lastError: expect.stringContaining('has not reported') }),
        );
        // Unblocked, it reports again: healthy, and the same thread (nothing restarted).
        await waitFor(async () => (await call(base, 'GET', '/health')).status === 200, 30_000);
        expect((await call(base, 'GET', '/health')).body.followersThread).toMatchObject({
          state: 'running',
          restarts: 0,
        });
        expect((await stopProcess(server)).code).toBe(0);
      } finally {
        dir.cleanup();
      }
    }, 120_000);

    it('when the followers thread dies, then /health fails with its reason, a new thread takes over, the operations created meanwhile are projected exactly once, and SIGTERM still exits 0', async () => {
      const dir = tempDir('followers-thread-');
      try {
        const { distributor, apiKey } = await seedPayingDistributor(dir.path, PHONE);
        const server = spawnWalletOps(dir.path, [], {
          LOG_LEVEL: 'info',
          // The first thread throws an uncaught error 1.5 s after it is up; the next one comes 2-4 s later.
          FAULT_FOLLOWERS_THREAD_CRASH_AFTER_MS: '1500',
          CONSUMER_RETRY_BASE_MS: '4000',
          CONSUMER_RETRY_MAX_MS: '8000',
          CONSUMER_UNHEALTHY_AFTER_MS: '1000',
          READ_YOUR_WRITES_TIMEOUT_MS: '100',
        });
        const base = `http://127.0.0.1:${await started(server)}`;
        const path = `/api/v1/distributors/${distributor.ref.id}/operations`;

        // Operations are created before, while and after the thread is down, /health asked between them.
        const created: string[] = [];
        let failing: { failing: Array<{ consumer: string; lastError: string }> } | undefined;
        let recovered: { followersThread: unknown } | undefined;
        const deadline = Date.now() + 60_000;
        while (!recovered && Date.now() < deadline) {
          const create = await call(base, 'POST', path, { apiKey, body: CASH_IN });
          expect(create.status, JSON.stringify(create.body)).toBe(200);
          created.push(create.body.operationID as string);
          const health = await call(base, 'GET', '/health');
          if (health.status === 503) failing ??= health.body;
          else if (failing && health.body.followersThread.state === 'running') recovered = health.body;
        }
        for (let i = 0; i < 5; i++)
          created.push((await call(base, 'POST', path, { apiKey, body: CASH_IN })).body.operationID as string);

        expect(failing?.failing).toContainEqual(
          expect.objectContaining({
            consumer: 'projection:distributor-operations',
            lastError: expect.stringContaining('fault injected'),
          }),
        );
        expect(recovered?.followersThread).toMatchObject({
          state: 'running',
          restarts: 1,
          lastExit: { reason: expect.stringContaining('fault injected') },
        });
        // Every operation listed once; the read store's balance (the thread's projection) equals the one the API's
        // thread folds in memory: a hold applied twice would show.
        await waitFor(async () => ((await listAll(base, path, apiKey))?.length ?? 0) >= created.length, 30_000);
        expect((await listAll(base, path, apiKey))?.sort()).toEqual([...created].sort());
        const config = loadConfig({ DATA_DIR: dir.path, ...knownStoreEnv(dir.path) });
        const stores = await openStores(config);
        try {
          await stores.readStore.defineCollections([BALANCES_COLLECTION]);
          await waitFor(async () => {
            const api = await call(base, 'GET', `/api/v1/distributors/${distributor.ref.id}/balance`, { apiKey });
            const doc = await stores.readStore.get<BalanceDoc>('balances', `distributor:${distributor.ref.id}`);
            return doc?.held === api.body.held && doc?.balance === api.body.balance;
          }, 20_000);
        } finally {
          await stores.close();
        }

        expect((await stopProcess(server)).code).toBe(0);
        const lines = server
          .output()
          .split('\n')
          .filter((line) => line.startsWith('{'))
          .map((line) => JSON.parse(line) as { msg: string; thread?: string; service: string });
        // The thread's lines go to the same stdout, in the same format, told apart by `thread`.
        expect(lines).toContainEqual(expect.objectContaining({ service: 'wallet-ops', thread: 'followers' }));
        expect(lines).toContainEqual(expect.objectContaining({ msg: 'followers thread died; starting a new one' }));
      } finally {
        dir.cleanup();
      }
    }, 150_000);
  });
}

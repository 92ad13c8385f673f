/**
 * PostgreSQL restarted under load (what an upgrade or a failover looks like to the service): a whole system in
 * this process (write and read APIs, projections, executor on the embedded ledger, webhooks) on a PostgreSQL
 * server of this test's own, with 8 clients creating and approving cash-ins. Every backend connection is
 * terminated once (pg_terminate_backend), then the server is stopped for a few seconds and started again on the
 * same data directory; the load goes on. Nothing is restarted on our side: the pools, the LISTEN connection,
 * the group committer and the supervised consumers must recover by themselves. Then the invariants: every
 * acknowledged create exists, every approved operation settled exactly once, nothing is stuck, the ledger and
 * the API agree, `audit verify` passes, and /health said 503 while the store was down and 200 afterwards.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { streams } from '../../src/domain/streams.ts';
import { assertLedgerMatchesProjections } from '../support/invariants.ts';
import { approve, issue, operationOf, waitUntilSettled } from '../support/executor-system.ts';
import {
  databaseUrl,
  freshPostgresDatabase,
  startOwnPostgresServer,
  type OwnPostgresServer,
} from '../support/postgres-server.ts';
import { call, startTestSystem, waitFor, type TestSystem } from '../support/system.ts';
import { runCli } from '../support/cli.ts';
import { parsePrometheusText, sampleValue } from '../support/prometheus-text.ts';
import { tempDir } from '../support/temp-dir.ts';
import { keyed, newPhone, type Keyed } from '../executor/support.ts';

const CLIENTS = 8;
/** Acknowledged creates between two steps of the scenario: the load is really running across each fault. */
const STEP = 10;
/** The least time the server stays down: long enough for every consumer to notice and /health to fail. */
const DOWN_AT_LEAST_MS = 3_000;

describe('PostgreSQL restarted under load', () => {
  let server: OwnPostgresServer;
  let sys: TestSystem;
  let env: Record<string, string>;
  const dir = tempDir('pg-restart-');

  beforeAll(async () => {
    server = await startOwnPostgresServer();
    env = {
      DATA_DIR: dir.path,
      POSTGRES_URL: await freshPostgresDatabase(server.url),
      SECRETS_KEY: Buffer.alloc(32, 7).toString('base64'),
      POSTGRES_POOL_SIZE: '6',
      // Short bounds, so that calls made while the server is down fail fast rather than queue for 10 s.
      POSTGRES_STATEMENT_TIMEOUT_MS: '2000',
      CONSUMER_UNHEALTHY_AFTER_MS: '1000',
      LEDGER: 'embedded',
    };
    sys = await startTestSystem(env);
  });

  afterAll(async () => {
    await sys?.close();
    await server?.stop();
    dir.cleanup();
  });

  it(
    'when every connection is terminated and the server stopped and started again, then the load goes on and every invariant holds without a restart of ours',
    { timeout: 180_000 },
    async () => {
      // Two clients per distributor: their creates contend for its wallet, as a busy distributor's do.
      const distributors = await Promise.all(Array.from({ length: CLIENTS / 2 }, () => keyed(sys, 'distributor')));
      await Promise.all(
        distributors.map(async (distributor) =>
          expect((await waitUntilSettled(sys, await issue(sys, distributor.ref, '1000000'))).status).toBe('completed'),
        ),
      );
      const phone = await sys.individual(newPhone());

      const acknowledged: string[] = [];
      const approved = new Set<string>();
      const toApprove: Array<{ operationID: string; distributor: Keyed }> = [];
      const statuses = new Map<number, number>();
      const unexpected: string[] = [];
      let stopping = false;

      // A client: create a cash-in; once acknowledged, approve it (or leave it for later while the store is down).
      const client = async (distributor: Keyed) => {
        while (!stopping) {
          const r = await call(sys.baseUrl, 'POST', `/api/v1/distributors/${distributor.ref.id}/operations`, {
            apiKey: distributor.apiKey,
            body: { operationType: 'cash-in', amount: '1.00', phoneTo: phone },
            headers: { 'idempotency-key': randomUUID() },
          }).catch((error: unknown) => ({ status: 0, body: String(error) }));
          statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
          if (r.status === 200) {
            acknowledged.push(r.body.operationID);
            toApprove.push({ operationID: r.body.operationID, distributor });
          } else if (r.status !== 503) {
            unexpected.push(`${r.status} ${JSON.stringify(r.body)}`);
          }
          await approvePending();
          // While the store is down every call fails at once: no busy loop meanwhile.
          if (r.status !== 200) await sleep(50);
        }
      };
      const approvePending = async () => {
        const next = toApprove.shift();
        if (!next) return;
        try {
          await approve(sys, next.distributor, next.operationID);
          approved.add(next.operationID);
        } catch {
          // An approval whose commit was cut may have committed: its state says. Otherwise, later.
          const state = await operationOf(sys, next.operationID).catch(() => null);
          if (state && state.status !== 'pending' && state.status !== 'none') approved.add(next.operationID);
          else toApprove.push(next);
        }
      };
      const database = () => new URL(env.POSTGRES_URL!).pathname.slice(1);
      const asAdmin = async <T>(fn: (admin: pg.Client) => Promise<T>): Promise<T> => {
        const admin = new pg.Client({ connectionString: databaseUrl(server.url, 'postgres') });
        await admin.connect();
        try {
          return await fn(admin);
        } finally {
          await admin.end();
        }
      };
      /** The application names of the database's backends (ours say which part of the service holds them). */
      const backends = () =>
        asAdmin(async (admin) =>
          (
            await admin.query<{ name: string }>(
              'SELECT application_name AS name FROM pg_stat_activity WHERE datname = $1',
              [database()],
            )
          ).rows.map((row) => row.name),
        );
      const health = async () => (await call(sys.baseUrl, 'GET', '/health')).status;
      const loadUntil = (count: number) => waitFor(() => acknowledged.length >= count, 60_000);

      const clients = distributors.flatMap((distributor) => [client(distributor), client(distributor)]);
      await loadUntil(STEP);

      // Every backend of the database (ours: pools, LISTEN) is terminated at once.
      expect(
        await asAdmin(
          async (admin) =>
            (
              await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1', [
                database(),
              ])
            ).rowCount,
        ),
      ).toBeGreaterThan(1);
      await loadUntil(acknowledged.length + STEP);
      expect(await health()).toBe(200);

      // The server stops (a fast shutdown closes every connection) and stays down until /health says so.
      const downSince = Date.now();
      await server.down();
      const ackedWhileUp = acknowledged.length;
      await waitFor(async () => (await health()) === 503, 20_000);
      await sleep(Math.max(0, DOWN_AT_LEAST_MS - (Date.now() - downSince)));
      await server.up();
      // Healthy again by itself, listening again (not only polling), and serving creates again.
      await waitFor(async () => (await health()) === 200, 30_000);
      await waitFor(async () => (await backends()).some((name) => name.endsWith('(listen)')), 10_000);
      await loadUntil(ackedWhileUp + STEP);
      stopping = true;
      await Promise.all(clients);
      await waitFor(async () => (await approvePending(), toApprove.length === 0), 30_000);

      expect(unexpected).toEqual([]);
      expect(statuses.get(503) ?? 0, 'creates refused while the server was down').toBeGreaterThan(0);
      // Every acknowledged create exists; every approved one settled, and completed (the wallets are funded).
      for (const operationID of acknowledged) {
        const events = await sys.system.stores.eventStore.readStream(streams.operation(operationID));
        expect(
          events.some((event) => event.type === 'OperationRequested'),
          operationID,
        ).toBe(true);
      }
      for (const operationID of approved)
        expect((await waitUntilSettled(sys, operationID, 60_000)).status).toBe('completed');
      // Settled exactly once, ledger = projections = write side.
      await assertLedgerMatchesProjections(sys, { timeoutMs: 60_000 });
      const verify = await runCli(['audit', 'verify', '--json', '--ledger', 'embedded', '--data-dir', dir.path], env);
      expect(verify.code, verify.stdout + verify.stderr).toBe(0);
      expect(await health()).toBe(200);
      // What the dashboard's PostgreSQL row shows of it: the statements the outage failed, and the pools back in use.
      const families = parsePrometheusText(await (await fetch(`${sys.baseUrl}/metrics`)).text());
      // Statements the outage failed, on whichever pools ran some during it (which ones is a matter of timing: a
      // create's first attempt may need no read, a projection commits only when events flow).
      const failed = (pool: string) =>
        sampleValue(families, 'wallet_ops_postgres_statement_duration_seconds_count', { pool, outcome: 'error' }) ?? 0;
      const pools = ['wallet-ops events', 'wallet-ops events (subscriptions)', 'wallet-ops read models'];
      expect(pools.reduce((sum, pool) => sum + failed(pool), 0)).toBeGreaterThan(0);
      for (const pool of ['wallet-ops events', 'wallet-ops read models']) {
        expect(sampleValue(families, 'wallet_ops_postgres_pool_max_connections', { pool })).toBe(6);
      }
    },
  );
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

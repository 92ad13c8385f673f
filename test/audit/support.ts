import { cpSync, existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import type { AuditReport } from '../../src/audit/verify.ts';
import { runCli } from '../support/cli.ts';

/**
 * A consistent copy of a data directory's SQLite files, even while the system that owns them is running:
 * VACUUM INTO takes a snapshot through its own connection (positions, being rowids, are kept).
 */
export function snapshotDataDir(
  from: string,
  to: string,
  files = ['events.sqlite', 'ledger.sqlite', 'read-models.sqlite'],
): void {
  mkdirSync(to, { recursive: true });
  for (const file of files) {
    const source = join(from, file);
    if (!existsSync(source)) continue;
    const db = new Database(source, { readonly: true });
    try {
      db.exec(`VACUUM INTO '${join(to, file).replaceAll("'", "''")}'`);
    } finally {
      db.close();
    }
  }
}

/** A copy of a copy (closed files): plain file copies. */
export function copyDataDir(from: string, to: string): void {
  cpSync(from, to, { recursive: true });
}

/** Opens a data directory's event file below the port, runs the change, closes it. */
export function tamper(
  dataDir: string,
  file: 'events.sqlite' | 'ledger.sqlite',
  change: (db: Database.Database) => void,
): void {
  const db = new Database(join(dataDir, file));
  try {
    change(db);
  } finally {
    db.close();
  }
}

/** `wallet-ops audit verify --json` in its own process: the exit code and the report. */
export async function verifyViaCli(dataDir: string): Promise<{ code: number; report: AuditReport; stderr: string }> {
  const result = await runCli(['audit', 'verify', '--json', '--data-dir', dataDir]);
  let report: AuditReport;
  try {
    report = JSON.parse(result.stdout) as AuditReport;
  } catch {
    throw new Error(`audit verify printed no report (exit ${result.code}): ${result.stderr}`);
  }
  return { code: result.code, report, stderr: result.stderr };
}

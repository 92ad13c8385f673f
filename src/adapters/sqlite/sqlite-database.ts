import { chmodSync, closeSync, existsSync, openSync } from 'node:fs';
import Database from 'better-sqlite3';
import { basename } from 'node:path';
import { StoreCorruptedError } from '../../ports/store-corrupted.ts';
import { BUSY_BUDGET_MS, sqliteCorruption } from './sqlite-retry.ts';

/**
 * How long one statement waits, inside SQLite, for another connection's lock before failing with SQLITE_BUSY.
 * better-sqlite3 waits synchronously, freezing the whole process, so this is kept short: 20 ms covers another
 * process's ordinary commit (a few ms, fsync included) without a round trip through JavaScript, while one
 * attempt never stalls the event loop for long. Longer waits happen between attempts, on timers (retryWhileBusy).
 */
export const BUSY_TIMEOUT_MS = 20;

/**
 * Opens (creating if needed) a SQLite file with the settings every wallet-ops adapter relies on. Shared by the
 * event store, the read store and the embedded ledger so all behave the same when several processes (the
 * server, the operator CLI) open the same file.
 *
 * - WAL: readers never block the writer and the writer never blocks readers, so a subscriber polling in one
 *   process does not slow appends in another; only writers are serialized.
 * - synchronous = FULL: in WAL mode this fsyncs the WAL at every commit. With NORMAL a commit survives a crash of
 *   the process but not a power loss or OS crash, which would silently drop payments a client was told were
 *   recorded. FULL makes "the commit returned" mean "it is on disk".
 * - busy_timeout: `setup` (schema creation) runs while the adapter is being opened, before it serves anything, so
 *   it may wait synchronously for up to `openBusyTimeoutMs` (the busy budget); afterwards the short BUSY_TIMEOUT_MS
 *   applies and callers retry on timers.
 */
export function openSqliteDatabase(
  file: string,
  setup: (db: Database.Database) => void = () => {},
  openBusyTimeoutMs = BUSY_BUDGET_MS,
): Database.Database {
  ownerOnly(file);
  // The timeout is set at construction: switching to WAL needs a lock another process may briefly hold.
  const db = new Database(file, { timeout: openBusyTimeoutMs });
  try {
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = FULL');
    setup(db);
    db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
    return db;
  } catch (error) {
    db.close();
    const corruption = sqliteCorruption(error);
    if (corruption) throw new StoreCorruptedError(basename(file), corruption, { cause: error });
    throw error;
  }
}

/**
 * SQLite's own check of a whole file, for a start that must not serve a damaged history: `quick` (PRAGMA
 * quick_check: every page and b-tree, records well formed; about 1 s for 334 MB and 500,000 events), `full`
 * (integrity_check: also that every index agrees with its table, about 7 times as long) or `off`. Neither sees a
 * flip inside an event's content that leaves the record well formed: that is the hash chain's (`audit verify`).
 * A file that does not exist yet passes. Throws StoreCorruptedError naming the file and SQLite's first findings.
 */
export function checkSqliteIntegrity(file: string, mode: 'quick' | 'full' | 'off'): void {
  if (mode === 'off' || !existsSync(file)) return;
  const pragma = mode === 'quick' ? 'quick_check' : 'integrity_check';
  let findings: string[];
  let db: Database.Database | undefined;
  try {
    db = new Database(file, { timeout: BUSY_BUDGET_MS, fileMustExist: true });
    findings = (db.pragma(`${pragma}(5)`) as Array<Record<string, string>>).map((row) => Object.values(row)[0]!);
  } catch (error) {
    const corruption = sqliteCorruption(error);
    if (corruption) throw new StoreCorruptedError(basename(file), `PRAGMA ${pragma}: ${corruption}`, { cause: error });
    throw error;
  } finally {
    db?.close();
  }
  if (findings.length !== 1 || findings[0] !== 'ok')
    throw new StoreCorruptedError(basename(file), `PRAGMA ${pragma}: ${findings.join('; ')}`);
}

/**
 * The files hold the whole history (password hashes, key hashes, every payment): the owner's alone, 0600,
 * whatever the umask. The database file is created 0600 before SQLite opens it, and SQLite gives the WAL and
 * shared-memory files it creates the database file's mode; files an older version left readable by others
 * are narrowed. A file of another user (the CLI run by someone else) is left as it is, and SQLite says
 * whether it can be opened.
 */
const COMPANIONS = ['', '-wal', '-shm', '-journal'];

function ownerOnly(file: string): void {
  if (file === '' || file === ':memory:' || file.startsWith('file:')) return;
  try {
    closeSync(openSync(file, 'wx', 0o600));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  for (const suffix of COMPANIONS) {
    const path = `${file}${suffix}`;
    if (!existsSync(path)) continue;
    try {
      chmodSync(path, 0o600);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EPERM' && (error as NodeJS.ErrnoException).code !== 'ENOENT')
        throw error;
    }
  }
}

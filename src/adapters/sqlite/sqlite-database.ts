import Database from 'better-sqlite3';
import { BUSY_BUDGET_MS } from './sqlite-retry.ts';

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
    throw error;
  }
}

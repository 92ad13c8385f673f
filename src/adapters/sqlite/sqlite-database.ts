import Database from 'better-sqlite3';

/** How long a statement waits for another connection's lock before failing with SQLITE_BUSY. */
const BUSY_TIMEOUT_MS = 5000;

/**
 * Opens (creating if needed) a SQLite file with the settings every wallet-ops adapter relies on. Shared by the
 * event store and the read store so both behave the same when several processes (the server, the operator CLI)
 * open the same file.
 *
 * - WAL: readers never block the writer and the writer never blocks readers, so a subscriber polling in one
 *   process does not slow appends in another; only writers are serialized.
 * - synchronous = FULL: in WAL mode this fsyncs the WAL at every commit. With NORMAL a commit survives a crash of
 *   the process but not a power loss or OS crash, which would silently drop payments a client was told were
 *   recorded. FULL makes "the commit returned" mean "it is on disk".
 * - busy_timeout: another process may hold the write lock for a moment; wait for it instead of failing at once.
 */
export function openSqliteDatabase(file: string): Database.Database {
  const db = new Database(file, { timeout: BUSY_TIMEOUT_MS });
  // busy_timeout first: switching to WAL needs a lock another process may briefly hold.
  db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  return db;
}

/** True for SQLITE_BUSY and its extended codes: another connection holds a lock we need. Worth retrying. */
export function isSqliteBusy(error: unknown): boolean {
  return error instanceof Database.SqliteError && error.code.startsWith('SQLITE_BUSY');
}

import { setTimeout as sleep } from 'node:timers/promises';
import Database from 'better-sqlite3';
import { backoffMs } from '../../shared/backoff.ts';

/**
 * How long one call (an append, a commit, a read, a ledger submit) may wait for a lock held by another
 * connection before it fails with its port's "unavailable" error. Long enough to ride out a checkpoint, a
 * backup or an operator's transaction; short enough that a caller (an HTTP request, a projection runner) gets
 * a retryable error well before its own timeout instead of hanging.
 */
export const BUSY_BUDGET_MS = 10_000;

/** Backoff between attempts: doubles from the first delay up to the cap, so a released lock is noticed within ~cap. */
const FIRST_DELAY_MS = 10;
const MAX_DELAY_MS = 200;

/** Why SQLite failed, for the cases that are the store's problem rather than the caller's. */
export type SqliteFault = 'busy' | 'full' | 'io' | 'readonly' | 'cantopen';

export function sqliteFault(error: unknown): SqliteFault | undefined {
  if (!(error instanceof Database.SqliteError)) return undefined;
  const { code } = error;
  if (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED')) return 'busy';
  if (code === 'SQLITE_FULL') return 'full';
  if (code.startsWith('SQLITE_IOERR')) return 'io';
  if (code.startsWith('SQLITE_READONLY')) return 'readonly';
  if (code.startsWith('SQLITE_CANTOPEN')) return 'cantopen';
  return undefined;
}

/**
 * A damaged database file: SQLITE_CORRUPT (and its extended codes), or SQLITE_NOTADB (the header is not
 * SQLite's). Never retried: the file stays damaged. Returns what SQLite said, with its code, or undefined.
 */
export function sqliteCorruption(error: unknown): string | undefined {
  if (!(error instanceof Database.SqliteError)) return undefined;
  if (!error.code.startsWith('SQLITE_CORRUPT') && error.code !== 'SQLITE_NOTADB') return undefined;
  return `${error.message} (${error.code})`;
}

/** SQLITE_BUSY/SQLITE_LOCKED and their extended codes: another connection holds a lock we need. Worth retrying. */
export function isSqliteBusy(error: unknown): boolean {
  return sqliteFault(error) === 'busy';
}

/** The wait before retry number `attempt` (0-based here): the shared backoff on the busy schedule. */
export function busyBackoffMs(attempt: number): number {
  return backoffMs(attempt + 1, { firstMs: FIRST_DELAY_MS, maxMs: MAX_DELAY_MS });
}

export interface RetryOptions {
  budgetMs: number;
  /** Aborting ends the wait at once and rejects with the signal's reason (e.g. the store was closed). */
  signal?: AbortSignal;
}

/**
 * Runs `fn` (synchronous SQLite work that must be safe to repeat: a whole transaction or a read) and, while it
 * fails with SQLITE_BUSY/LOCKED, runs it again after a backoff on a timer, so the event loop keeps serving other
 * work while we wait. Each attempt blocks at most the connection's short busy_timeout. Once `budgetMs` has passed
 * the last busy error is thrown; any other error is thrown at once.
 */
export async function retryWhileBusy<T>(fn: () => T, { budgetMs, signal }: RetryOptions): Promise<T> {
  const deadline = performance.now() + budgetMs;
  for (let attempt = 0; ; attempt++) {
    signal?.throwIfAborted();
    try {
      return fn();
    } catch (error) {
      const remaining = deadline - performance.now();
      if (!isSqliteBusy(error) || remaining <= 0) throw error;
      // The last wait is cut to the deadline, so the final attempt happens right at the end of the budget.
      await sleep(Math.min(busyBackoffMs(attempt), remaining), undefined, { signal }).catch(() =>
        signal?.throwIfAborted(),
      );
    }
  }
}

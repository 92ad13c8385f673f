import type Database from 'better-sqlite3';
import { EventStoreUnavailableError } from '../../ports/event-store.ts';
import { isSqliteBusy } from './sqlite-database.ts';

/** Requests per transaction: bounds how long one batch holds the write lock other processes wait for. */
const MAX_BATCH_REQUESTS = 1000;
/**
 * BEGIN IMMEDIATE already waits busy_timeout (5 s) inside SQLite. These retries cover a lock held longer than
 * that (a long operator transaction) without blocking the event loop between attempts.
 */
const MAX_BUSY_RETRIES = 4;
const BUSY_BACKOFF_MS = 25;

export interface GroupCommitOptions<Request, Result> {
  db: Database.Database;
  /** Does one request's writes; runs inside the batch's transaction, in the request's own savepoint. */
  apply: (request: Request) => Result;
  /** True when an error thrown by `apply` concerns its request only; any other error fails the whole batch. */
  isRequestError: (error: unknown) => boolean;
  /** Called after every COMMIT that wrote something, e.g. to wake local subscribers. */
  onCommit: () => void;
}

type Outcome<Result> = { ok: true; result: Result } | { ok: false; error: unknown };

interface Pending<Request, Result> {
  request: Request;
  resolve: (result: Result) => void;
  reject: (error: unknown) => void;
}

/**
 * Group commit. With synchronous = FULL every COMMIT costs an fsync, so the cost of a commit, not of a row,
 * bounds append throughput. Requests submitted during one turn of the event loop are queued and written by a
 * single transaction on the next setImmediate: one fsync for all of them. Each request runs in its own SAVEPOINT
 * so a request that fails (wrong expected revision, duplicate id) is rolled back alone while the others commit.
 * Promises are settled only after COMMIT returns, so a resolved append is durable.
 */
export class GroupCommitter<Request, Result> {
  private readonly db: Database.Database;
  private readonly statements;
  private queue: Array<Pending<Request, Result>> = [];
  private scheduled = false;
  private busyRetries = 0;
  private closed = false;
  private idleWaiters: Array<() => void> = [];

  constructor(private readonly options: GroupCommitOptions<Request, Result>) {
    this.db = options.db;
    this.statements = {
      // IMMEDIATE takes the write lock at BEGIN: a busy database shows up here, before any work is done, and a
      // deferred transaction cannot later fail to upgrade its read snapshot to a write (SQLITE_BUSY_SNAPSHOT).
      begin: this.db.prepare('BEGIN IMMEDIATE'),
      commit: this.db.prepare('COMMIT'),
      rollback: this.db.prepare('ROLLBACK'),
      savepoint: this.db.prepare('SAVEPOINT request'),
      release: this.db.prepare('RELEASE request'),
      rollbackTo: this.db.prepare('ROLLBACK TO request'),
    };
  }

  submit(request: Request): Promise<Result> {
    if (this.closed) return Promise.reject(new EventStoreUnavailableError('the event store is closed'));
    return new Promise<Result>((resolve, reject) => {
      this.queue.push({ request, resolve, reject });
      this.schedule(0);
    });
  }

  /** Refuses new requests and resolves once every queued one is committed or failed. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.queue.length === 0 && !this.scheduled) return;
    await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
  }

  private schedule(delayMs: number): void {
    if (this.scheduled) return;
    this.scheduled = true;
    const run = () => {
      this.scheduled = false;
      this.flush();
    };
    if (delayMs === 0) setImmediate(run);
    else setTimeout(run, delayMs);
  }

  private flush(): void {
    const batch = this.queue.splice(0, MAX_BATCH_REQUESTS);
    let outcomes: Array<Outcome<Result>>;
    try {
      outcomes = this.commitBatch(batch);
    } catch (error) {
      if (isSqliteBusy(error) && this.busyRetries < MAX_BUSY_RETRIES) {
        // Nothing was written (the transaction was rolled back); try the same batch again a little later.
        this.queue.unshift(...batch);
        this.schedule(BUSY_BACKOFF_MS * 2 ** this.busyRetries++);
        return;
      }
      const failure = new EventStoreUnavailableError('could not commit to the event store', { cause: error });
      outcomes = batch.map(() => ({ ok: false, error: failure }));
    }
    this.busyRetries = 0;
    batch.forEach((pending, i) => settle(pending, outcomes[i]!));
    if (outcomes.some((outcome) => outcome.ok)) this.options.onCommit();
    if (this.queue.length > 0) this.schedule(0);
    else this.notifyIdle();
  }

  /** Runs the batch in one transaction; throws (after rolling back) only if the batch as a whole failed. */
  private commitBatch(batch: Array<Pending<Request, Result>>): Array<Outcome<Result>> {
    this.statements.begin.run();
    try {
      const outcomes = batch.map((pending) => this.applyInSavepoint(pending.request));
      this.statements.commit.run();
      return outcomes;
    } catch (error) {
      if (this.db.inTransaction) this.statements.rollback.run();
      throw error;
    }
  }

  private applyInSavepoint(request: Request): Outcome<Result> {
    this.statements.savepoint.run();
    try {
      const result = this.options.apply(request);
      this.statements.release.run();
      return { ok: true, result };
    } catch (error) {
      // An I/O error or the like may have ended the transaction already; then nothing in the batch is safe.
      if (!this.options.isRequestError(error) || !this.db.inTransaction) throw error;
      this.statements.rollbackTo.run();
      this.statements.release.run();
      return { ok: false, error };
    }
  }

  private notifyIdle(): void {
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const resolve of waiters) resolve();
  }
}

function settle<Result>(pending: Pending<unknown, Result>, outcome: Outcome<Result>): void {
  if (outcome.ok) pending.resolve(outcome.result);
  else pending.reject(outcome.error);
}

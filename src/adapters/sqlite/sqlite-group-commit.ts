import type Database from 'better-sqlite3';
import { EventStoreUnavailableError } from '../../ports/event-store.ts';
import { BUSY_BUDGET_MS, busyBackoffMs, isSqliteBusy } from './sqlite-retry.ts';

/** Requests per transaction: bounds how long one batch holds the write lock other processes wait for. */
const MAX_BATCH_REQUESTS = 1000;

export interface GroupCommitOptions<Request, Result> {
  /**
   * Runs one batch in one transaction (a SavepointBatch, here or on the commit thread): an outcome per request, or
   * a throw or rejection, with nothing written, when the batch as a whole failed.
   */
  transaction: BatchTransaction<Request, Result>;
  /** Called after every COMMIT that wrote something, e.g. to wake local subscribers; told the batch and outcomes. */
  onCommit: (requests: Request[], outcomes: Array<Outcome<Result>>) => void;
  /** How long a request may wait for another connection's write lock before it fails. Default BUSY_BUDGET_MS. */
  busyBudgetMs?: number;
  /** Told the number of requests of every transaction that committed (the group-commit batch size metric). */
  onBatch?: (requests: number) => void;
  /**
   * The port's unavailable error for a closed committer, a failed batch, a lock held past the budget. Default: the
   * event store's.
   */
  unavailable?: (why: UnavailableReason, cause?: unknown) => Error;
}

export type UnavailableReason = 'closed' | 'failed' | 'busy';

const EVENT_STORE_UNAVAILABLE: Record<UnavailableReason, string> = {
  closed: 'the event store is closed',
  failed: 'could not commit to the event store',
  busy: 'the event store stayed locked by another connection',
};

const eventStoreUnavailable = (why: UnavailableReason, cause?: unknown): Error =>
  new EventStoreUnavailableError(EVENT_STORE_UNAVAILABLE[why], cause === undefined ? undefined : { cause });

export type BatchTransaction<Request, Result> = (
  requests: Request[],
) => Array<Outcome<Result>> | Promise<Array<Outcome<Result>>>;

export type Outcome<Result> = { ok: true; result: Result } | { ok: false; error: unknown };

interface Pending<Request, Result> {
  request: Request;
  /** performance.now() after which a busy database fails this request instead of retrying it. */
  deadline: number;
  resolve: (result: Result) => void;
  reject: (error: unknown) => void;
}

/**
 * Group commit. With synchronous = FULL every COMMIT costs an fsync, so the cost of a commit, not of a row,
 * bounds append throughput. Requests submitted during one turn of the event loop are queued and written by a
 * single transaction on the next setImmediate: one fsync for all of them. Each request runs in its own SAVEPOINT
 * so a request that fails (wrong expected revision, duplicate id) is rolled back alone while the others commit.
 * Promises are settled only after COMMIT returns, so a resolved append is durable.
 *
 * A busy database (another process holds the write lock) is retried on a timer with backoff, the requests that
 * arrived meanwhile joining the batch, until each request's own budget runs out. Any other failure of the batch
 * (disk full, I/O error) rolls it back and fails its requests; the next batch starts afresh.
 *
 * The transaction itself (SavepointBatch) runs where its connection is: on the event loop, or on the commit
 * thread (sqlite-commit-thread.ts), which keeps the statements and the fsync off the event loop. One batch is
 * committed at a time; requests arriving meanwhile gather into the next.
 */
export class GroupCommitter<Request, Result> {
  private queue: Array<Pending<Request, Result>> = [];
  private scheduled = false;
  /** A batch is being committed (on the commit thread, its reply not yet back): the next waits for it. */
  private committing = false;
  private busyRetries = 0;
  private readonly busyBudgetMs: number;
  private closed = false;
  private idleWaiters: Array<() => void> = [];
  private readonly options: GroupCommitOptions<Request, Result>;
  private readonly unavailable: (why: UnavailableReason, cause?: unknown) => Error;

  // No parameter properties in this module: the commit thread loads it with Node's type stripping (erasable syntax
  // only).
  constructor(options: GroupCommitOptions<Request, Result>) {
    this.options = options;
    this.unavailable = options.unavailable ?? eventStoreUnavailable;
    this.busyBudgetMs = options.busyBudgetMs ?? BUSY_BUDGET_MS;
  }

  submit(request: Request): Promise<Result> {
    if (this.closed) return Promise.reject(this.unavailable('closed'));
    return new Promise<Result>((resolve, reject) => {
      this.queue.push({ request, deadline: performance.now() + this.busyBudgetMs, resolve, reject });
      this.schedule(0);
    });
  }

  /** Refuses new requests and resolves once every queued one is committed or failed. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.queue.length === 0 && !this.scheduled && !this.committing) return;
    await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
  }

  private schedule(delayMs: number): void {
    if (this.scheduled || this.committing) return;
    this.scheduled = true;
    const run = () => {
      this.scheduled = false;
      void this.flush(); // never rejects with a request's failure: it settles each request with it
    };
    if (delayMs === 0) setImmediate(run);
    else setTimeout(run, delayMs);
  }

  private async flush(): Promise<void> {
    const batch = this.queue.splice(0, MAX_BATCH_REQUESTS);
    let outcomes: Array<Outcome<Result>>;
    let committed = false;
    this.committing = true;
    try {
      outcomes = await this.options.transaction(batch.map((pending) => pending.request));
      committed = true;
    } catch (error) {
      if (isSqliteBusy(error)) {
        this.committing = false;
        return this.retryLater(batch, error);
      }
      const failure = this.unavailable('failed', error);
      outcomes = batch.map(() => ({ ok: false, error: failure }));
    }
    this.committing = false;
    batch.forEach((pending, i) => settle(pending, outcomes[i]!));
    if (outcomes.some((outcome) => outcome.ok))
      this.options.onCommit(
        batch.map((pending) => pending.request),
        outcomes,
      );
    if (committed) observeBatch(this.options.onBatch, batch.length);
    this.next();
  }

  /** Nothing was written (the transaction was rolled back): fail the requests out of budget, retry the rest. */
  private retryLater(batch: Array<Pending<Request, Result>>, error: unknown): void {
    const now = performance.now();
    const failure = this.unavailable('busy', error);
    for (const pending of batch) if (pending.deadline <= now) pending.reject(failure);
    this.queue.unshift(...batch.filter((pending) => pending.deadline > now));
    if (this.queue.length === 0) return this.next();
    // The queue is in submission order, so its head has the nearest deadline: retry no later than that.
    this.schedule(Math.max(1, Math.min(busyBackoffMs(this.busyRetries++), this.queue[0]!.deadline - now)));
  }

  /** The busy streak, if any, is over: go on with the queue or tell close() we are idle. */
  private next(): void {
    this.busyRetries = 0;
    if (this.queue.length > 0) this.schedule(0);
    else this.notifyIdle();
  }

  private notifyIdle(): void {
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const resolve of waiters) resolve();
  }
}

/**
 * One batch in one transaction on a connection: each request in its own SAVEPOINT, so that a request that fails
 * (wrong expected revision, duplicate id) is rolled back alone while the others commit; a batch of one without.
 * Synchronous: it runs where the connection lives, on the event loop or on the commit thread (sqlite-commit-thread.ts).
 */
export class SavepointBatch<Request, Result> {
  private readonly db: Database.Database;
  private readonly statements;
  /** Does one request's writes; runs inside the batch's transaction, in the request's own savepoint. */
  private readonly apply: (request: Request) => Result;
  /** True when an error thrown by `apply` concerns its request only; any other error fails the whole batch. */
  private readonly isRequestError: (error: unknown) => boolean;

  constructor(db: Database.Database, apply: (request: Request) => Result, isRequestError: (error: unknown) => boolean) {
    this.db = db;
    this.apply = apply;
    this.isRequestError = isRequestError;
    this.statements = {
      // IMMEDIATE takes the write lock at BEGIN: a busy database shows up here, before any work is done, and a
      // deferred transaction cannot later fail to upgrade its read snapshot to a write (SQLITE_BUSY_SNAPSHOT).
      begin: db.prepare('BEGIN IMMEDIATE'),
      commit: db.prepare('COMMIT'),
      rollback: db.prepare('ROLLBACK'),
      savepoint: db.prepare('SAVEPOINT request'),
      release: db.prepare('RELEASE request'),
      rollbackTo: db.prepare('ROLLBACK TO request'),
    };
  }

  /** Runs the batch in one transaction; throws (after rolling back) only if the batch as a whole failed. */
  run(requests: Request[]): Array<Outcome<Result>> {
    if (this.db.inTransaction) this.rollback(); // left open by an earlier ROLLBACK that failed
    this.statements.begin.run();
    try {
      if (requests.length === 1) return [this.applyAlone(requests[0]!)];
      const outcomes = requests.map((request) => this.applyInSavepoint(request));
      this.statements.commit.run();
      return outcomes;
    } catch (error) {
      this.rollback();
      throw error;
    }
  }

  /**
   * After a failed statement or COMMIT (disk full, I/O error) SQLite may have ended the transaction itself or
   * left it open; roll back whatever is open so the next batch can BEGIN. A failing ROLLBACK is not reported:
   * the error that caused it is the one the requests get.
   */
  private rollback(): void {
    try {
      if (this.db.inTransaction) this.statements.rollback.run();
    } catch {
      // Left as it is: the next batch tries the ROLLBACK again before its BEGIN.
    }
  }

  /**
   * A batch of one (every batch at 1 connection) needs no savepoint: the transaction is the request's, rolled back
   * whole when it fails. A savepoint makes SQLite copy every page the request touches into its statement journal.
   */
  private applyAlone(request: Request): Outcome<Result> {
    let result: Result;
    try {
      result = this.apply(request);
    } catch (error) {
      if (!this.isRequestError(error) || !this.db.inTransaction) throw error;
      this.statements.rollback.run();
      return { ok: false, error };
    }
    this.statements.commit.run();
    return { ok: true, result };
  }

  private applyInSavepoint(request: Request): Outcome<Result> {
    this.statements.savepoint.run();
    try {
      const result = this.apply(request);
      this.statements.release.run();
      return { ok: true, result };
    } catch (error) {
      // An I/O error or the like may have ended the transaction already; then nothing in the batch is safe.
      if (!this.isRequestError(error) || !this.db.inTransaction) throw error;
      this.statements.rollbackTo.run();
      this.statements.release.run();
      return { ok: false, error };
    }
  }
}

/** Told after the requests are settled, and never allowed to throw: an observer (metrics) cannot fail a commit. */
function observeBatch(onBatch: ((requests: number) => void) | undefined, requests: number): void {
  try {
    onBatch?.(requests);
  } catch {
    // Nothing to do: the batch is committed and its requests answered.
  }
}

function settle<Result>(pending: Pending<unknown, Result>, outcome: Outcome<Result>): void {
  if (outcome.ok) pending.resolve(outcome.result);
  else pending.reject(outcome.error);
}

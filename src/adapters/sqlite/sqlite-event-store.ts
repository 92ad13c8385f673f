import type Database from 'better-sqlite3';
import {
  type AppendResult,
  type EventFilter,
  type EventStore,
  EventStoreUnavailableError,
  type ExpectedRevision,
  type NewEvent,
  type ReadAllOptions,
  type ReadStreamOptions,
  type RecordedEvent,
  type StreamAppend,
  type SubscribeOptions,
  type Subscription,
  matchesFilter,
} from '../../ports/event-store.ts';
import { AppendWriter, type PreparedAppend, isAppendRequestError, prepareAppends } from './sqlite-append.ts';
import { openSqliteDatabase } from './sqlite-database.ts';
import { BUSY_BUDGET_MS, retryWhileBusy, sqliteCorruption } from './sqlite-retry.ts';
import { StoreCorruptedError } from '../../ports/store-corrupted.ts';
import { type FSWatcher, watch } from 'node:fs';
import { basename, dirname } from 'node:path';
import { EVENT_COLUMNS, type EventRow, ensureEventSchema, filterSql, toRecordedEvent } from './sqlite-event-schema.ts';
import { CommitThread } from './sqlite-commit-thread.ts';
import { GroupCommitter, type Outcome, SavepointBatch } from './sqlite-group-commit.ts';
import { StatementCache } from './sqlite-statements.ts';
import { type Page, PollingSubscription } from './polling-subscription.ts';

export interface SqliteEventStoreOptions {
  file: string;
  /**
   * How often a caught-up subscription looks for events appended by other processes. Default: 250 ms while the
   * file's directory is watched (a change to the file wakes subscriptions at once; the poll only covers a missed
   * notification), 15 ms where it cannot be watched.
   */
  pollIntervalMs?: number;
  /** How long an append or read may wait for another process's lock before failing. Default BUSY_BUDGET_MS. */
  busyBudgetMs?: number;
  /** Told the size (appends) of every group-commit transaction that committed: for metrics. */
  onGroupCommit?: (requests: number) => void;
  /**
   * Where the appends' transactions run: on the event loop, on the store's one connection (the default), or on a
   * thread of their own once the process appends more than once (sqlite-commit-thread.ts), which frees the event
   * loop where a core is free for it; on a 2-core machine shared with its load it was slower (docs/benchmarks.md).
   */
  commitOn?: 'thread' | 'event-loop';
}

/** Polling is how other processes' appends are seen where the directory cannot be watched: often, at a cost. */
const UNWATCHED_POLL_INTERVAL_MS = 15;
/**
 * Where it is watched, the poll is a safety net only. Polling every 15 ms cost an idle server about 55 ms of CPU a
 * second (seven subscriptions); this costs about 4.
 */
const WATCHED_POLL_INTERVAL_MS = 250;
/** Positions a filtered subscription examines per read, so a rare filter does not scan the whole store at once. */
const SUBSCRIPTION_SCAN_WINDOW = 10_000;

/** SQLite's LIMIT for "no limit". */
const NO_LIMIT = -1;

/**
 * The embedded event store: one SQLite file, safe to share between processes (the server and the operator CLI).
 * See sqlite-database.ts for the pragmas, sqlite-group-commit.ts for how appends are batched, and
 * polling-subscription.ts for subscriptions.
 */
export function openSqliteEventStore(options: SqliteEventStoreOptions): EventStore {
  const busyBudgetMs = options.busyBudgetMs ?? BUSY_BUDGET_MS;
  const db = openSqliteDatabase(options.file, ensureEventSchema, busyBudgetMs);
  return new SqliteEventStore(db, options, busyBudgetMs);
}

class SqliteEventStore implements EventStore {
  private readonly db: Database.Database;
  private readonly busyBudgetMs: number;
  private readonly statements: StatementCache;
  private readonly headStatement: Database.Statement<[], number>;
  private readonly committer: GroupCommitter<PreparedAppend[], AppendResult[]>;
  private readonly thread: CommitThread | undefined;
  /** The caller's poll interval; without one, it depends on whether the directory is watched. */
  private readonly chosenPollIntervalMs: number | undefined;
  private readonly watcher: DirectoryWatcher;
  /** Each subscription with its filter (undefined: every event). */
  private readonly subscriptions = new Map<PollingSubscription, EventFilter | undefined>();
  private closing: Promise<void> | undefined;
  /** Aborted by close(): reads waiting out a lock stop waiting. (Subscriptions' reads use their own, see stop().) */
  private readonly closed = new AbortController();
  /** The file, as a corruption report names it. */
  private readonly fileName: string;

  constructor(db: Database.Database, options: SqliteEventStoreOptions, busyBudgetMs: number) {
    this.db = db;
    this.busyBudgetMs = busyBudgetMs;
    this.chosenPollIntervalMs = options.pollIntervalMs;
    this.fileName = basename(options.file);
    // Other processes' commits write to the file's WAL: a change there wakes local subscribers at once.
    const dataVersion = db.prepare<[], number>('PRAGMA data_version').pluck();
    let seenVersion: number | undefined;
    const committedElsewhere = () => {
      try {
        const version = dataVersion.get()!;
        const changed = version !== seenVersion;
        seenVersion = version;
        return changed;
      } catch {
        return true; // the subscribers' own read will meet whatever this is, and report it
      }
    };
    committedElsewhere();
    this.watcher = new DirectoryWatcher(options.file, committedElsewhere, () =>
      this.subscriptions.forEach((_filter, subscription) => subscription.wake()),
    );
    this.statements = new StatementCache(db);
    this.headStatement = db.prepare<[], number>('SELECT coalesce(max(position), 0) FROM events').pluck();
    const writer = new AppendWriter(db);
    const batch = new SavepointBatch(db, (requests: PreparedAppend[]) => writer.write(requests), isAppendRequestError);
    const onEventLoop = (requests: PreparedAppend[][]) => batch.run(requests);
    this.thread = options.commitOn === 'thread' ? new CommitThread(options.file, onEventLoop) : undefined;
    const { onGroupCommit } = options;
    this.committer = new GroupCommitter({
      transaction: this.thread?.run ?? onEventLoop,
      // In-process notifier: local subscribers read right after our own commits instead of at their next poll.
      onCommit: (requests, outcomes) => this.committed(requests, outcomes),
      busyBudgetMs,
      ...(onGroupCommit ? { onBatch: onGroupCommit } : {}),
    });
  }

  async append(stream: string, events: NewEvent[], expectedRevision: ExpectedRevision): Promise<AppendResult> {
    const [result] = await this.appendMulti([{ stream, events, expectedRevision }]);
    return result!;
  }

  async appendMulti(requests: StreamAppend[]): Promise<AppendResult[]> {
    // Validation and JSON serialization happen here, outside the write transaction.
    return this.committer.submit(prepareAppends(requests));
  }

  /** A stream that does not exist reads as []. (KurrentDB answers StreamNotFound; its adapter translates.) */
  async readStream(stream: string, options: ReadStreamOptions = {}): Promise<RecordedEvent[]> {
    this.assertOpen();
    const backwards = options.direction === 'backwards';
    const from = options.fromRevision ?? (backwards ? Number.MAX_SAFE_INTEGER : 0);
    checkNonNegativeInteger('fromRevision', from);
    const sql = backwards
      ? `SELECT ${EVENT_COLUMNS} FROM events WHERE stream = ? AND revision <= ? ORDER BY revision DESC`
      : `SELECT ${EVENT_COLUMNS} FROM events WHERE stream = ? AND revision >= ? ORDER BY revision ASC`;
    return this.query(`${sql} ${limitOf(options.maxCount)}`, [stream, from]);
  }

  async readAll(options: ReadAllOptions = {}): Promise<RecordedEvent[]> {
    this.assertOpen();
    const from = options.fromPosition ?? 0;
    const to = options.toPosition ?? Number.MAX_SAFE_INTEGER;
    checkNonNegativeInteger('fromPosition', from);
    checkNonNegativeInteger('toPosition', to);
    const filter = filterSql(options.filter);
    const sql =
      `SELECT ${EVENT_COLUMNS} FROM events WHERE position >= ? AND position <= ?${filter.sql} ` + 'ORDER BY position';
    return this.query(`${sql} ${limitOf(options.maxCount)}`, [from, to, ...filter.params]);
  }

  async headPosition(): Promise<number> {
    this.assertOpen();
    return this.read(() => this.headStatement.get()!);
  }

  subscribeToAll(options: SubscribeOptions): Subscription {
    this.assertOpen();
    const after = options.from === 'start' ? 0 : options.from;
    checkNonNegativeInteger('from', after);
    const filter = filterSql(options.filter);
    const pageSql =
      `SELECT ${EVENT_COLUMNS} FROM events WHERE position > ? AND position <= ?${filter.sql} ` + 'ORDER BY position';
    const subscription = new PollingSubscription({
      after,
      readPage: (cursor, signal, limit) =>
        this.read(() => this.readPage(pageSql, filter.params, cursor, limit), signal),
      pollIntervalMs: () => this.pollIntervalMs(),
      onStop: () => {
        this.subscriptions.delete(subscription);
        if (this.subscriptions.size === 0) this.watcher.stop();
      },
    });
    this.subscriptions.set(subscription, options.filter);
    this.watcher.start();
    return subscription;
  }

  /** The caller's, or by whether the directory is watched. */
  private pollIntervalMs(): number {
    return (
      this.chosenPollIntervalMs ?? (this.watcher.watching() ? WATCHED_POLL_INTERVAL_MS : UNWATCHED_POLL_INTERVAL_MS)
    );
  }

  /** Stops subscriptions, lets queued appends commit, then closes the file. Idempotent. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      this.closed.abort(new EventStoreUnavailableError('the event store is closed'));
      await Promise.all([...this.subscriptions.keys()].map((subscription) => subscription.stop()));
      this.watcher.stop();
      await this.committer.close();
      await this.thread?.close();
      this.db.close();
    })();
    return this.closing;
  }

  /**
   * After this process's commit, each subscription reads it, but one whose filter matches none of its events, and which
   * had read up to them, moves past them without a read: the write API alone follows the API keys' streams, which no
   * create writes (a page read per create at 1 connection). A batch's committed positions are contiguous: one writer
   * at a time, and a request rolled back gives its positions back (AUTOINCREMENT's counter rolls back with it).
   */
  private committed(requests: PreparedAppend[][], outcomes: Array<Outcome<AppendResult[]>>): void {
    const written: PreparedAppend[] = [];
    let to = 0;
    let count = 0;
    outcomes.forEach((outcome, i) => {
      if (!outcome.ok) return;
      for (const result of outcome.result) to = Math.max(to, result.position);
      for (const append of requests[i]!) {
        written.push(append);
        count += append.events.length;
      }
    });
    for (const [subscription, filter] of this.subscriptions) {
      const wanted =
        filter === undefined ||
        written.some((append) =>
          append.events.some((event) => matchesFilter({ stream: append.stream, type: event.type }, filter)),
        );
      if (wanted || !subscription.passOver(to - count, to)) subscription.wake();
    }
  }

  /**
   * One subscription read. Gap-free without any locking of ours: positions are assigned inside the write
   * transaction and SQLite admits one writer at a time (across processes too), so transactions commit in
   * position order and every committed state holds all positions up to its head. Having seen head H, every
   * event at or below H is committed and visible, and none can appear there later: reading (cursor, H] misses
   * nothing. (A database whose sequence numbers are taken outside the write lock, like PostgreSQL's, does not
   * have this property: a lower number can commit after a higher one is read.)
   * Both reads run in one synchronous attempt; a busy retry repeats both.
   */
  private readPage(sql: string, filterParams: string[], cursor: number, limit: number): Page {
    const head = this.headStatement.get()!;
    if (head <= cursor) return { events: [], scannedTo: cursor, caughtUp: true };
    const upTo = Math.min(head, cursor + SUBSCRIPTION_SCAN_WINDOW);
    const rows = this.statements.get(`${sql} ${limitOf(limit)}`).all(cursor, upTo, ...filterParams) as EventRow[];
    const full = rows.length === limit;
    // A full page may stop short of upTo; otherwise everything up to upTo was examined, matched or not.
    const scannedTo = full ? rows[rows.length - 1]!.position : upTo;
    return { events: rows.map(toRecordedEvent), scannedTo, caughtUp: scannedTo >= head };
  }

  private query(sql: string, params: unknown[]): Promise<RecordedEvent[]> {
    return this.read(() => (this.statements.get(sql).all(...params) as EventRow[]).map(toRecordedEvent));
  }

  /**
   * A read, retried on timers while another connection holds a lock it needs (rare in WAL mode, but a short
   * busy_timeout makes it possible). A failed read is the store's problem, not the caller's: whatever the cause,
   * it is reported as the port's unavailable error.
   */
  private async read<T>(fn: () => T, signal = this.closed.signal): Promise<T> {
    try {
      return await retryWhileBusy(fn, { budgetMs: this.busyBudgetMs, signal });
    } catch (error) {
      if (error instanceof EventStoreUnavailableError) throw error;
      // A damaged file is not an outage: waiting will not mend it, and serving around it would serve wrong data.
      const corruption = sqliteCorruption(error);
      if (corruption) throw new StoreCorruptedError(this.fileName, corruption, { cause: error });
      throw new EventStoreUnavailableError('could not read the event store', { cause: error });
    }
  }

  private assertOpen(): void {
    if (this.closing) throw new EventStoreUnavailableError('the event store is closed');
  }
}

/**
 * The LIMIT clause, its count written into the SQL: SQLite plans with a bound LIMIT's value, so a statement with
 * `LIMIT ?` is compiled again at every run (it cost more than the read itself). The counts a process uses are few
 * (page sizes, a snapshot's one), each a statement of the cache.
 */
function limitOf(maxCount: number | undefined): string {
  if (maxCount === undefined) return `LIMIT ${NO_LIMIT}`;
  checkNonNegativeInteger('maxCount', maxCount);
  return `LIMIT ${maxCount}`;
}

function checkNonNegativeInteger(name: string, value: number): void {
  if (!Number.isSafeInteger(value) || value < 0)
    throw new Error(`${name} must be an integer >= 0, got ${String(value)}`);
}

/**
 * After a change to the file, when to look again whether another connection committed (PRAGMA data_version): the
 * notification comes with the write of a commit's last WAL frame, before the writer's fsync and its update of the
 * WAL index make the commit visible. Past these, the poll.
 */
const RECHECK_AFTER_MS = [5, 15, 40, 100];

/**
 * Watches the store's WAL (inotify on Linux) while there are subscribers: a write by any process to it makes it ask
 * `committedElsewhere` (cheap: PRAGMA data_version on the store's connection, which this connection's own commits
 * leave unchanged), at once and a few times more while the answer is no, and call `onChange` when it is yes. So this
 * process's own commits, which wake its subscribers themselves, cost no extra reads (commits on the commit thread
 * come from its own connection, so they wake once more: a read that finds nothing new). Every commit goes through
 * the WAL, which SQLite keeps while this store's connection is open; were it deleted or replaced, the watch moves to
 * the directory, which outlives it. The WAL alone first: a directory watch is told of every write to every file of
 * the data directory (the read store's WAL frames, ~50 writes a create), each an event for the kernel to queue and
 * for each watching thread to read and drop. Where watching fails (no inotify instances left, a file system without
 * notifications), subscribers poll often.
 */
class DirectoryWatcher {
  private readonly directory: string;
  private readonly wal: string;
  private readonly names: Set<string>;
  private readonly committedElsewhere: () => boolean;
  private readonly onChange: () => void;
  private watcher: FSWatcher | undefined;
  private scheduled = false;
  private recheck: NodeJS.Timeout | undefined;

  constructor(file: string, committedElsewhere: () => boolean, onChange: () => void) {
    this.directory = dirname(file);
    this.wal = `${file}-wal`;
    this.names = new Set([basename(file), `${basename(file)}-wal`]);
    this.committedElsewhere = committedElsewhere;
    this.onChange = onChange;
  }

  watching(): boolean {
    return this.watcher !== undefined;
  }

  start(): void {
    if (this.watcher) return;
    try {
      // Not persistent: a watch alone never keeps the process alive.
      this.watcher = watch(this.wal, { persistent: false }, (event) => {
        if (event === 'rename') this.watchDirectory();
        this.schedule();
      });
      this.watcher.on('error', () => this.watchDirectory());
    } catch {
      this.watchDirectory();
    }
  }

  private watchDirectory(): void {
    this.watcher?.close();
    try {
      this.watcher = watch(this.directory, { persistent: false }, (_event, name) => {
        if (name === null || this.names.has(name)) this.schedule();
      });
      this.watcher.on('error', () => this.stop());
    } catch {
      this.watcher = undefined;
    }
  }

  stop(): void {
    this.watcher?.close();
    this.watcher = undefined;
    clearTimeout(this.recheck);
  }

  /** A burst of writes (one commit's frames, many commits) is one look, at the next turn of the event loop. */
  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.look(0);
    });
  }

  private look(attempt: number): void {
    clearTimeout(this.recheck);
    this.recheck = undefined;
    if (!this.watcher) return;
    if (this.committedElsewhere()) return this.onChange();
    const delay = RECHECK_AFTER_MS[attempt];
    if (delay !== undefined) this.recheck = setTimeout(() => this.look(attempt + 1), delay).unref();
  }
}

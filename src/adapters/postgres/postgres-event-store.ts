import type pg from 'pg';
import {
  type AppendResult,
  type EventStore,
  EventStoreUnavailableError,
  type EventFilter,
  type EventMetadata,
  type ExpectedRevision,
  matchesFilter,
  type NewEvent,
  type ReadAllOptions,
  type ReadStreamOptions,
  type RecordedEvent,
  type StreamAppend,
  type SubscribeOptions,
  type Subscription,
  WrongExpectedVersionError,
} from '../../ports/event-store.ts';
import {
  DuplicateEventIdError,
  type PreparedAppend,
  type PreparedEvent,
  prepareAppends,
} from '../sqlite/sqlite-append.ts';
import { GroupCommitter, type Outcome } from '../sqlite/sqlite-group-commit.ts';
import { type Page, PollingSubscription } from '../sqlite/polling-subscription.ts';
import {
  APPEND_FUNCTION,
  EVENT_COLUMNS,
  EVENT_STORE_MIGRATIONS,
  EVENT_STORE_ROUTINES,
  EVENT_STORE_SCHEMA,
  type EventRow,
  filterSql,
  toRecordedEvent,
} from './postgres-event-schema.ts';
import { EventNotifications, NOTIFY_CHANNEL } from './postgres-notifications.ts';
import {
  type PostgresConnectionOptions,
  isTransientPostgresError,
  migrate,
  openPostgresPool,
  prepared,
} from './postgres-pool.ts';

export interface PostgresEventStoreOptions extends PostgresConnectionOptions {
  /**
   * How often a caught-up subscription reads again when no notification came: the fallback for a LISTEN
   * connection that is down (its notifications are lost meanwhile). Default 1000 ms.
   */
  pollIntervalMs?: number;
  /** Told the size (appends) of every group-commit transaction that committed: for metrics. */
  onGroupCommit?: (requests: number) => void;
  /**
   * Connections of the subscriptions' own pool (default 2), apart from the `poolSize` that appends and the other
   * reads share: a request's append never waits for a connection behind followers reading pages.
   */
  subscriptionPoolSize?: number;
}

const DEFAULT_SUBSCRIPTION_POOL_SIZE = 2;

const DEFAULT_POLL_INTERVAL_MS = 1000;
/**
 * The longest a notification that came during an append statement waits for its answer (it is usually that append's
 * own, which then wakes nobody): an append that hangs does not hold other processes' notifications back.
 */
const HOLD_NOTICE_MS = 20;
/** Positions a filtered subscription examines per read, so a rare filter does not scan the whole store at once. */
const SUBSCRIPTION_SCAN_WINDOW = 10_000;

/**
 * The PostgreSQL event store. Its schema is created or migrated at open (postgres-event-schema.ts); several
 * processes may open it at once.
 *
 * Positions in commit order. Every append transaction takes one transaction-scoped advisory lock before it
 * reads anything, then checks the expected revisions, takes positions after the highest one stored and commits,
 * which releases the lock. Transactions that write events therefore run one after the other, across processes,
 * and commit in position order: every committed state holds every position up to its highest, so a subscriber
 * that read up to N never sees a position at or below N appear later (a sequence, whose numbers are taken
 * outside any lock, breaks exactly that). The lock is the price; group commit pays it once for many appends.
 *
 * Group commit: the appends a process submits while a transaction is running are queued and written by the next
 * one (GroupCommitter, shared with the embedded store), so one lock, one round trip and one commit serve all of
 * them. The round trip is one call of the append function (es_append_v3, postgres-event-schema.ts): under the
 * lock it decides each append in queue order against the state its predecessors left, so a failing append (wrong
 * expected revision, duplicate event id) writes nothing and the others commit without savepoints. Should the
 * server refuse the batch's writes for a permanent reason (a stream name with a NUL character), the batch is run
 * again one append per transaction, so only the guilty append fails.
 *
 * Subscriptions read pages in position order (PollingSubscription) and are woken by NOTIFY, sent in the append
 * transaction (so delivered at its commit) to every process LISTENing, with polling as the fallback.
 *
 * Errors: a lost connection, a failover, a statement timeout, a serialization failure is the port's
 * EventStoreUnavailableError (worth retrying); any other error of the server is thrown as it is.
 */
export async function openPostgresEventStore(options: PostgresEventStoreOptions): Promise<EventStore> {
  const pool = openPostgresPool(options);
  try {
    await migrate(pool, EVENT_STORE_SCHEMA, EVENT_STORE_MIGRATIONS, EVENT_STORE_ROUTINES);
  } catch (error) {
    await pool.end().catch(() => {});
    throw mapError(error, 'could not prepare the event store');
  }
  // Opens its connections at the first page read: a process without subscribers (the CLI) opens none.
  const pages = openPostgresPool({
    ...options,
    poolSize: options.subscriptionPoolSize ?? DEFAULT_SUBSCRIPTION_POOL_SIZE,
    applicationName: `${options.applicationName} (subscriptions)`,
  });
  return new PostgresEventStore(pool, pages, options);
}

class PostgresEventStore implements EventStore {
  private readonly pool: pg.Pool;
  /** The subscriptions' page reads, apart from the appends and the requests' reads (see subscriptionPoolSize). */
  private readonly pages: pg.Pool;
  private readonly committer: GroupCommitter<PreparedAppend[], AppendResult[]>;
  private readonly notifications: EventNotifications;
  private readonly pollIntervalMs: number;
  /** Each subscription of this process, with its filter. */
  private readonly subscriptions = new Map<PollingSubscription, EventFilter | undefined>();
  private closing: Promise<void> | undefined;
  /**
   * The highest position this process committed: its subscriptions are woken with it, and its NOTIFY then wakes none.
   */
  private committedHead = 0;
  /** An append statement is running: a notification meanwhile may be its own, so it waits for the answer. */
  private appending = false;
  /** The notification that came while appending (head undefined: look, whatever the head). */
  private heldNotice: { head: number | undefined } | undefined;
  /** Lets a held notification go after HOLD_NOTICE_MS however long the append takes (a slow or partitioned server). */
  private holdTimer: NodeJS.Timeout | undefined;
  /** This process's last own commit, (after, to] and what it wrote: the head's page until a later commit is known. */
  private ownPage:
    { after: number; to: number; parts: Array<{ request: PreparedAppend }>; rows: AppendRow[] } | undefined;

  constructor(pool: pg.Pool, pages: pg.Pool, options: PostgresEventStoreOptions) {
    this.pool = pool;
    this.pages = pages;
    this.pollIntervalMs = options.pollIntervalMs ?? DEFAULT_POLL_INTERVAL_MS;
    this.notifications = new EventNotifications(options, (head) => {
      if (!this.appending) {
        this.noticed(head);
        return this.wakeAll(head);
      }
      const held = this.heldNotice;
      this.heldNotice = { head: held && (held.head === undefined || head === undefined) ? undefined : head };
      this.holdTimer ??= setTimeout(() => this.releaseNotice(), HOLD_NOTICE_MS);
    });
    const { onGroupCommit } = options;
    this.committer = new GroupCommitter({
      transaction: (batch) => this.commitBatch(batch),
      // Local subscribers read right after our own commits, without waiting for the notification's round trip.
      onCommit: () => this.wakeAll(this.committedHead),
      ...(onGroupCommit ? { onBatch: onGroupCommit } : {}),
    });
  }

  async append(stream: string, events: NewEvent[], expectedRevision: ExpectedRevision): Promise<AppendResult> {
    const [result] = await this.appendMulti([{ stream, events, expectedRevision }]);
    return result!;
  }

  async appendMulti(requests: StreamAppend[]): Promise<AppendResult[]> {
    // Validation and JSON serialization (or the hash chain's, see SERIALIZED_JSON) happen here, outside the
    // transaction.
    return this.committer.submit(prepareAppends(requests));
  }

  /** A stream that does not exist reads as []. */
  async readStream(stream: string, options: ReadStreamOptions = {}): Promise<RecordedEvent[]> {
    this.assertOpen();
    const backwards = options.direction === 'backwards';
    const from = options.fromRevision ?? (backwards ? Number.MAX_SAFE_INTEGER : 0);
    checkNonNegativeInteger('fromRevision', from);
    const sql = backwards
      ? `SELECT ${EVENT_COLUMNS} FROM es_events WHERE stream = $1 AND revision <= $2 ORDER BY revision DESC LIMIT $3`
      : `SELECT ${EVENT_COLUMNS} FROM es_events WHERE stream = $1 AND revision >= $2 ORDER BY revision ASC LIMIT $3`;
    return this.readEvents(sql, [stream, from, limitOf(options.maxCount)]);
  }

  async readAll(options: ReadAllOptions = {}): Promise<RecordedEvent[]> {
    this.assertOpen();
    const from = options.fromPosition ?? 0;
    const to = options.toPosition ?? Number.MAX_SAFE_INTEGER;
    checkNonNegativeInteger('fromPosition', from);
    checkNonNegativeInteger('toPosition', to);
    const limit = limitOf(options.maxCount);
    const filter = filterSql(options.filter, 4);
    const sql =
      `SELECT ${EVENT_COLUMNS} FROM es_events WHERE position >= $1 AND position <= $2${filter.sql} ORDER BY ` +
      'position LIMIT $3';
    return this.readEvents(sql, [from, to, limit, ...filter.params]);
  }

  async headPosition(): Promise<number> {
    this.assertOpen();
    const { rows } = await this.query<{ head: string }>('SELECT coalesce(max(position), 0) AS head FROM es_events', []);
    return Number(rows[0]!.head);
  }

  subscribeToAll(options: SubscribeOptions): Subscription {
    this.assertOpen();
    const after = options.from === 'start' ? 0 : options.from;
    checkNonNegativeInteger('from', after);
    const filter = filterSql(options.filter, 4);
    // Head and page in one statement, so one snapshot: everything at or below the head it saw is committed (see
    // the class comment), so reading (cursor, head] misses nothing.
    const pageSql = `
      SELECT h.head, e.*
      FROM (SELECT coalesce(max(position), 0) AS head FROM es_events) AS h
      LEFT JOIN LATERAL (
        SELECT ${EVENT_COLUMNS} FROM es_events
        WHERE position > $1 AND position <= least(h.head, $1 + $2)${filter.sql}
        ORDER BY position LIMIT $3
      ) AS e ON true`;
    const subscription = new PollingSubscription({
      after,
      readPage: async (cursor, _signal, limit) =>
        this.pageFromMemory(cursor, limit, options.filter) ?? this.readPage(pageSql, filter.params, cursor, limit),
      pollIntervalMs: this.pollIntervalMs,
      onStop: () => {
        this.subscriptions.delete(subscription);
        if (this.subscriptions.size === 0) this.notifications.idle();
      },
    });
    this.subscriptions.set(subscription, options.filter);
    this.notifications.needed();
    return subscription;
  }

  /** Stops subscriptions, lets queued appends commit, then closes the connections. Idempotent. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      await Promise.all([...this.subscriptions.keys()].map((subscription) => subscription.stop()));
      await this.committer.close();
      await this.notifications.close();
      await Promise.all([this.pool.end().catch(() => {}), this.pages.end().catch(() => {})]);
    })();
    return this.closing;
  }

  private releaseNotice(): void {
    clearTimeout(this.holdTimer);
    this.holdTimer = undefined;
    const held = this.heldNotice;
    this.heldNotice = undefined;
    if (!held) return;
    this.noticed(held.head);
    this.wakeAll(held.head);
  }

  private wakeAll(head: number | undefined): void {
    for (const subscription of this.subscriptions.keys()) subscription.wake(head);
  }

  /**
   * A subscription whose filter matches none of the events this process has just written at (after, to], and which had
   * read up to them, moves past them without a read: the write API alone follows the API keys' streams, which no create
   * writes (one page read per create at 1 connection). Their positions are contiguous: taken under the lock. The batch
   * is kept as the page (after, to]: a subscription that wants some of it reads it from memory (readPage).
   */
  private passOver(parts: Array<{ request: PreparedAppend }>, rows: AppendRow[]): void {
    let to = 0;
    let count = 0;
    for (const row of rows)
      if (row.o_outcome === 'ok') {
        to = Math.max(to, Number(row.o_position));
        count += parts[row.o_part]!.request.events.length;
      }
    this.committedHead = Math.max(this.committedHead, to);
    if (count === 0) return;
    this.ownPage = { after: to - count, to, parts, rows };
    for (const [subscription, filter] of this.subscriptions) {
      const wanted =
        filter === undefined ||
        rows.some(
          (row) =>
            row.o_outcome === 'ok' &&
            parts[row.o_part]!.request.events.some((event) =>
              matchesFilter({ stream: parts[row.o_part]!.request.stream, type: event.type }, filter),
            ),
        );
      if (!wanted) subscription.passOver(to - count, to);
    }
  }

  /**
   * A notification of a commit past this process's last own one (or of one not known): its page is no longer the
   * head's, so the next read goes to the server.
   */
  private noticed(head: number | undefined): void {
    if (this.ownPage && (head === undefined || head > this.ownPage.to)) this.ownPage = undefined;
  }

  /**
   * The page after `cursor` from this process's last own commit, when that commit reaches past the cursor from at or
   * after where the page begins and no other commit past it is known: what the server would answer (those events,
   * committed, and the head at their last), without the round trip. A commit of another process not yet notified is
   * seen at its notification, which wakes the subscription, as after a read that ran just before it.
   */
  private pageFromMemory(cursor: number, limit: number, filter: EventFilter | undefined): Page | undefined {
    const own = this.ownPage;
    if (!own || this.closing || cursor < own.after || cursor >= own.to) return undefined;
    const events = ownEvents(own.parts, own.rows, cursor, filter);
    if (events.length < limit) return { events, scannedTo: own.to, caughtUp: true };
    const page = events.slice(0, limit);
    return { events: page, scannedTo: page[page.length - 1]!.position, caughtUp: false };
  }

  private async readPage(sql: string, filterParams: unknown[], cursor: number, limit: number): Promise<Page> {
    const { rows } = await this.query<EventRow & { head: string }>(
      sql,
      [cursor, SUBSCRIPTION_SCAN_WINDOW, limit, ...filterParams],
      this.pages,
    );
    const head = Number(rows[0]!.head);
    if (head <= cursor) return { events: [], scannedTo: cursor, caughtUp: true };
    const upTo = Math.min(head, cursor + SUBSCRIPTION_SCAN_WINDOW);
    // The LEFT JOIN gives one row of nulls when nothing matched.
    const events = rows.filter((row) => row.position !== null).map(toRecordedEvent);
    const full = events.length === limit;
    // A full page may stop short of upTo; otherwise everything up to upTo was examined, matched or not.
    const scannedTo = full ? events[events.length - 1]!.position : upTo;
    return { events, scannedTo, caughtUp: scannedTo >= head };
  }

  /**
   * One group-commit batch: outcomes in request order. Never throws: a failure of the whole batch becomes every
   * request's outcome (unavailable when transient, the server's error as it is when permanent).
   */
  private async commitBatch(batch: PreparedAppend[][]): Promise<Array<Outcome<AppendResult[]>>> {
    try {
      return await this.transaction(batch);
    } catch (error) {
      // A COMMIT sent and not answered may have committed: unknown, never "failed", and never run again here.
      if (COMMIT_UNANSWERED.has(error as object)) {
        const unknown = new EventStoreUnavailableError(
          `the event store did not answer a commit: ${(error as Error).message}`,
          { cause: error, outcomeUnknown: true },
        );
        return batch.map(() => ({ ok: false, error: unknown }));
      }
      if (!isTransientPostgresError(error) && batch.length > 1) {
        // Which append the server refused is not known: each alone, so only that one fails.
        const outcomes: Array<Outcome<AppendResult[]>> = [];
        for (const requests of batch) outcomes.push(...(await this.commitBatch([requests])));
        return outcomes;
      }
      const failure = mapError(error, 'could not commit to the event store');
      return batch.map(() => ({ ok: false, error: failure }));
    }
  }

  /**
   * The batch in one statement, so one round trip and one commit: the append function (postgres-event-schema.ts)
   * takes the lock, decides each call in order, writes and notifies; its rows are turned into each call's outcome.
   */
  private async transaction(batch: PreparedAppend[][]): Promise<Array<Outcome<AppendResult[]>>> {
    const parts = batch.flatMap((requests, call) => requests.map((request) => ({ call, request })));
    const events = parts.flatMap(({ request }) => request.events);
    const client = await this.pool.connect();
    let broken: unknown;
    this.appending = true;
    try {
      const { rows } = await client.query<AppendRow>(
        prepared(
          `SELECT * FROM ${APPEND_FUNCTION}($1::int[], $2::text[], $3::text[], $4::int[], $5::text[], ` +
            '$6::text[], $7::bytea, $8::int[], $9::int[], $10::int[], $11)',
          [
            `{${parts.map((part) => part.call).join(',')}}`,
            textArray(parts.map((part) => part.request.stream)),
            textArray(parts.map((part) => String(part.request.expectedRevision))),
            `{${parts.map((part) => part.request.events.length).join(',')}}`,
            textArray(events.map((event) => event.id)),
            textArray(events.map((event) => event.type)),
            ...jsonBytes(events),
            NOTIFY_CHANNEL,
          ],
        ),
      );
      // The highest position written: this process's subscriptions are woken with it, and its own NOTIFY wakes none.
      this.passOver(parts, rows);
      return outcomes(batch.length, parts, rows);
    } catch (error) {
      // A connection that failed mid-statement is not given back to the pool: it is closed.
      if (isTransientPostgresError(error)) broken = error;
      // The statement is its own transaction: when the connection went while it ran, it may have committed.
      throw isTransientPostgresError(error) && connectionLost(error) ? unanswered(error) : error;
    } finally {
      client.release(broken instanceof Error ? broken : undefined);
      this.appending = false;
      this.releaseNotice();
    }
  }

  private async readEvents(sql: string, params: unknown[]): Promise<RecordedEvent[]> {
    const { rows } = await this.query<EventRow>(sql, params);
    return rows.map(toRecordedEvent);
  }

  private async query<Row extends pg.QueryResultRow>(
    sql: string,
    params: unknown[],
    pool = this.pool,
  ): Promise<pg.QueryResult<Row>> {
    try {
      // Every text here is one of a few (the filters' values are parameters): each is prepared once per connection.
      return await pool.query<Row>(prepared(sql, params));
    } catch (error) {
      if (this.closing) throw new EventStoreUnavailableError('the event store is closed', { cause: error });
      throw mapError(error, 'could not read the event store');
    }
  }

  private assertOpen(): void {
    if (this.closing) throw new EventStoreUnavailableError('the event store is closed');
  }
}

/**
 * An array of text as PostgreSQL's literal, for a `::text[]` parameter: what node-postgres sends for a JS array, made
 * in one pass (its two replaces over every element, the events' JSON included, were a few percent of a create).
 */
function textArray(values: string[]): string {
  let literal = '{';
  for (let i = 0; i < values.length; i++) {
    const value = values[i]!;
    literal += `${i === 0 ? '' : ','}"${NEEDS_ESCAPE.test(value) ? value.replace(ESCAPED, '\\$&') : value}"`;
  }
  return `${literal}}`;
}
const NEEDS_ESCAPE = /["\\]/;
const ESCAPED = /["\\]/g;

/**
 * The events' data and metadata for the append function: their UTF-8 in one buffer (node-postgres sends a Buffer as a
 * binary parameter, which the server takes as it is), each event's data then its metadata, and each one's byte offset
 * and lengths as `::int[]` literals. Nothing to escape, on either side.
 */
function jsonBytes(events: PreparedEvent[]): [Buffer, string, string, string] {
  let chars = 0;
  for (const event of events) chars += event.data.length + event.metadata.length;
  // At most 3 bytes of UTF-8 per UTF-16 code unit (a surrogate pair: 4 bytes for 2).
  const buffer = Buffer.allocUnsafe(chars * 3);
  let offsets = '{';
  let dataBytes = '{';
  let metadataBytes = '{';
  let at = 0;
  for (let i = 0; i < events.length; i++) {
    const event = events[i]!;
    const data = buffer.write(event.data, at);
    const metadata = buffer.write(event.metadata, at + data);
    const comma = i === 0 ? '' : ',';
    offsets += `${comma}${at}`;
    dataBytes += `${comma}${data}`;
    metadataBytes += `${comma}${metadata}`;
    at += data + metadata;
  }
  return [buffer.subarray(0, at), `${offsets}}`, `${dataBytes}}`, `${metadataBytes}}`];
}

/** A row of the append function: a stream written (ok) or the failure of the call it belongs to. */
interface AppendRow {
  o_part: number;
  o_outcome: 'ok' | 'wrong_revision' | 'duplicate_id';
  o_actual: string | null;
  o_event_id: string | null;
  o_revision: string | null;
  o_position: string | null;
  o_created_at: Date;
}

/**
 * The events a batch wrote after `after` that `filter` matches, in position order, as a read of them would return
 * them: each ok row gives its stream's last revision and position, and its events come right before them.
 */
function ownEvents(
  parts: Array<{ request: PreparedAppend }>,
  rows: AppendRow[],
  after: number,
  filter: EventFilter | undefined,
): RecordedEvent[] {
  const events: RecordedEvent[] = [];
  for (const row of rows) {
    if (row.o_outcome !== 'ok') continue;
    const { stream, events: written } = parts[row.o_part]!.request;
    const position = Number(row.o_position) - written.length + 1;
    const revision = Number(row.o_revision) - written.length + 1;
    const createdAt = row.o_created_at.toISOString();
    for (let k = 0; k < written.length; k++) {
      const event = written[k]!;
      if (position + k <= after || !matchesFilter({ stream, type: event.type }, filter)) continue;
      events.push({
        id: event.id,
        type: event.type,
        data: JSON.parse(event.data) as unknown,
        metadata: JSON.parse(event.metadata) as EventMetadata,
        stream,
        revision: revision + k,
        position: position + k,
        createdAt,
      });
    }
  }
  return events;
}

/** Each call's outcome from the function's rows: its streams' results in request order, or its failure. */
function outcomes(
  calls: number,
  parts: Array<{ call: number; request: PreparedAppend }>,
  rows: AppendRow[],
): Array<Outcome<AppendResult[]>> {
  const results: AppendResult[][] = Array.from({ length: calls }, () => []);
  const failures = new Map<number, unknown>();
  for (const row of rows) {
    const { call, request } = parts[row.o_part]!;
    if (row.o_outcome === 'ok') {
      results[call]!.push({ nextExpectedRevision: Number(row.o_revision), position: Number(row.o_position) });
    } else if (row.o_outcome === 'wrong_revision') {
      const actual = row.o_actual === null ? 'no_stream' : Number(row.o_actual);
      failures.set(call, new WrongExpectedVersionError(request.stream, request.expectedRevision, actual));
    } else {
      failures.set(call, new DuplicateEventIdError(row.o_event_id!));
    }
  }
  return results.map((result, call) =>
    failures.has(call) ? { ok: false, error: failures.get(call) } : { ok: true, result },
  );
}

/**
 * Whether an error means the server's answer was lost rather than given: no SQLSTATE (the socket closed), class 08
 * (connection exception), or 57P01-57P03 (the backend terminated: also what a wait for a synchronous standby that
 * an operator ends by terminating the backend looks like, after the commit was written locally). A cancelled
 * statement (57014), a read-only database (class 25) and every other answered error committed nothing.
 */
function connectionLost(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  // Not a SQLSTATE (the classes are 00-58, F0, HV, P0, XX): a socket's errno (ECONNRESET, EPIPE) or none at all.
  if (typeof code !== 'string' || !/^(?:[0-5][0-9A-Z]|F0|HV|P0|XX)[0-9A-Z]{3}$/.test(code)) return true;
  return code.startsWith('08') || /^57P0[123]$/.test(code);
}

/**
 * Failures of the append statement: whether it committed is not known (the connection or the server went mid-commit).
 */
const COMMIT_UNANSWERED = new WeakSet<object>();
function unanswered(error: unknown): unknown {
  if (typeof error === 'object' && error !== null) COMMIT_UNANSWERED.add(error);
  return error;
}

/** The port's error for what is worth retrying; anything else as the server said it. */
function mapError(error: unknown, what: string): unknown {
  if (error instanceof EventStoreUnavailableError) return error;
  if (isTransientPostgresError(error))
    return new EventStoreUnavailableError(`${what}: ${(error as Error).message}`, { cause: error });
  return error;
}

/** LIMIT NULL is no limit. */
function limitOf(maxCount: number | undefined): number | null {
  if (maxCount === undefined) return null;
  checkNonNegativeInteger('maxCount', maxCount);
  return maxCount;
}

function checkNonNegativeInteger(name: string, value: number): void {
  if (!Number.isSafeInteger(value) || value < 0)
    throw new Error(`${name} must be an integer >= 0, got ${String(value)}`);
}

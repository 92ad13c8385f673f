import type pg from 'pg';
import {
  type AppendResult,
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
  WrongExpectedVersionError,
} from '../../ports/event-store.ts';
import { DuplicateEventIdError, type PreparedAppend, prepareAppends, revisionMatches } from '../sqlite/sqlite-append.ts';
import { GroupCommitter, type Outcome } from '../sqlite/sqlite-group-commit.ts';
import { type Page, PollingSubscription } from '../sqlite/polling-subscription.ts';
import { EVENT_COLUMNS, EVENT_STORE_MIGRATIONS, EVENT_STORE_SCHEMA, type EventRow, filterSql, toRecordedEvent } from './postgres-event-schema.ts';
import { EventNotifications, NOTIFY_CHANNEL } from './postgres-notifications.ts';
import { type PostgresConnectionOptions, isTransientPostgresError, migrate, openPostgresPool, prepared } from './postgres-pool.ts';

export interface PostgresEventStoreOptions extends PostgresConnectionOptions {
  /**
   * How often a caught-up subscription reads again when no notification came: the fallback for a LISTEN
   * connection that is down (its notifications are lost meanwhile). Default 1000 ms.
   */
  pollIntervalMs?: number;
  /** Told the size (appends) of every group-commit transaction that committed: for metrics. */
  onGroupCommit?: (requests: number) => void;
}

const DEFAULT_POLL_INTERVAL_MS = 1000;
/** Positions a filtered subscription examines per read, so a rare filter does not scan the whole store at once. */
const SUBSCRIPTION_SCAN_WINDOW = 10_000;
/** The transaction-scoped advisory lock under which positions are assigned (any constant unique to this use). */
const POSITION_LOCK = "hashtext('wallet-ops:event-store:positions')";

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
 * one (GroupCommitter, shared with the embedded store), so one lock, one round of statements and one commit
 * serve all of them. Each append's checks are made in memory against the state read under the lock, in queue
 * order, so a failing append (wrong expected revision, duplicate event id) is left out and the others commit
 * without savepoints. Should the server refuse the batch's writes for a permanent reason (a stream name with a
 * NUL character), the batch is run again one append per transaction, so only the guilty append fails.
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
    await migrate(pool, EVENT_STORE_SCHEMA, EVENT_STORE_MIGRATIONS);
  } catch (error) {
    await pool.end().catch(() => {});
    throw mapError(error, 'could not prepare the event store');
  }
  return new PostgresEventStore(pool, options);
}

class PostgresEventStore implements EventStore {
  private readonly pool: pg.Pool;
  private readonly committer: GroupCommitter<PreparedAppend[], AppendResult[]>;
  private readonly notifications: EventNotifications;
  private readonly pollIntervalMs: number;
  private readonly subscriptions = new Set<PollingSubscription>();
  private closing: Promise<void> | undefined;
  /** The highest position this process committed: its subscriptions are woken with it, and its NOTIFY then wakes none. */
  private committedHead = 0;

  constructor(pool: pg.Pool, options: PostgresEventStoreOptions) {
    this.pool = pool;
    this.pollIntervalMs = options.pollIntervalMs ?? DEFAULT_POLL_INTERVAL_MS;
    this.notifications = new EventNotifications(options, (head) => this.subscriptions.forEach((subscription) => subscription.wake(head)));
    const { onGroupCommit } = options;
    this.committer = new GroupCommitter({
      transaction: (batch) => this.commitBatch(batch),
      // Local subscribers read right after our own commits, without waiting for the notification's round trip.
      onCommit: () => this.subscriptions.forEach((subscription) => subscription.wake(this.committedHead)),
      ...(onGroupCommit ? { onBatch: onGroupCommit } : {}),
    });
  }

  async append(stream: string, events: NewEvent[], expectedRevision: ExpectedRevision): Promise<AppendResult> {
    const [result] = await this.appendMulti([{ stream, events, expectedRevision }]);
    return result!;
  }

  async appendMulti(requests: StreamAppend[]): Promise<AppendResult[]> {
    // Validation and JSON serialization (or the hash chain's, see SERIALIZED_JSON) happen here, outside the transaction.
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
    const sql = `SELECT ${EVENT_COLUMNS} FROM es_events WHERE position >= $1 AND position <= $2${filter.sql} ORDER BY position LIMIT $3`;
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
      readPage: (cursor, _signal, limit) => this.readPage(pageSql, filter.params, cursor, limit),
      pollIntervalMs: this.pollIntervalMs,
      onStop: () => {
        this.subscriptions.delete(subscription);
        if (this.subscriptions.size === 0) this.notifications.idle();
      },
    });
    this.subscriptions.add(subscription);
    this.notifications.needed();
    return subscription;
  }

  /** Stops subscriptions, lets queued appends commit, then closes the connections. Idempotent. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      await Promise.all([...this.subscriptions].map((subscription) => subscription.stop()));
      await this.committer.close();
      await this.notifications.close();
      await this.pool.end().catch(() => {});
    })();
    return this.closing;
  }

  private async readPage(sql: string, filterParams: unknown[], cursor: number, limit: number): Promise<Page> {
    const { rows } = await this.query<EventRow & { head: string }>(sql, [cursor, SUBSCRIPTION_SCAN_WINDOW, limit, ...filterParams]);
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

  private async transaction(batch: PreparedAppend[][]): Promise<Array<Outcome<AppendResult[]>>> {
    const client = await this.pool.connect();
    let broken: unknown;
    try {
      await client.query(`BEGIN; SELECT pg_advisory_xact_lock(${POSITION_LOCK})`);
      try {
        const plan = await this.plan(client, batch);
        if (plan.events.length > 0) await this.write(client, plan);
        await client.query(plan.events.length > 0 ? 'COMMIT' : 'ROLLBACK');
        if (plan.events.length > 0) this.committedHead = Math.max(this.committedHead, plan.head);
        return plan.outcomes;
      } catch (error) {
        await client.query('ROLLBACK').catch(() => {});
        throw error;
      }
    } catch (error) {
      // A connection that failed mid-transaction is not given back to the pool: it is closed.
      if (isTransientPostgresError(error)) broken = error;
      throw error;
    } finally {
      client.release(broken instanceof Error ? broken : undefined);
    }
  }

  /**
   * Reads, under the lock, the revisions of the batch's streams, which of its event ids are stored and the head;
   * then decides each append in queue order, as if each ran after the previous, and lays out the rows to write.
   */
  private async plan(client: pg.PoolClient, batch: PreparedAppend[][]): Promise<Plan> {
    const streams = [...new Set(batch.flatMap((requests) => requests.map((request) => request.stream)))];
    const ids = batch.flatMap((requests) => requests.flatMap((request) => request.events.map((event) => event.id)));
    const { rows } = await client.query<{ head: string; revisions: Record<string, number>; taken: string[] }>(
      prepared(
        `SELECT (SELECT coalesce(max(position), 0) FROM es_events) AS head,
                (SELECT coalesce(json_object_agg(stream, revision), '{}') FROM es_streams WHERE stream = ANY($1::text[])) AS revisions,
                (SELECT coalesce(array_agg(id), '{}') FROM es_events WHERE id = ANY($2::text[])) AS taken`,
        [streams, ids],
      ),
    );
    const state = rows[0]!;
    const revisions = new Map(Object.entries(state.revisions));
    const taken = new Set(state.taken);
    let position = Number(state.head);
    const plan: Plan = { events: [], streams: new Map(), outcomes: [], head: position };
    for (const requests of batch) {
      try {
        const decided = decide(requests, revisions, taken);
        const results: AppendResult[] = [];
        for (const { stream, events, from } of decided) {
          events.forEach((event, i) => {
            position += 1;
            plan.events.push({ position, stream, revision: from + i, event });
            taken.add(event.id);
          });
          const last = from + events.length - 1;
          revisions.set(stream, last);
          plan.streams.set(stream, last);
          results.push({ nextExpectedRevision: last, position });
        }
        plan.outcomes.push({ ok: true, result: results });
      } catch (error) {
        plan.outcomes.push({ ok: false, error });
      }
    }
    plan.head = position;
    return plan;
  }

  /** The batch's rows in one statement: events, stream revisions, and the notification sent at commit. */
  private async write(client: pg.PoolClient, plan: Plan): Promise<void> {
    const column = <T>(pick: (row: PlannedEvent) => T) => plan.events.map(pick);
    await client.query(prepared(
      `WITH written AS (
         INSERT INTO es_events (position, id, stream, revision, type, data, metadata, created_at)
         SELECT p, i, s, r, t, d, m, statement_timestamp()
         FROM unnest($1::bigint[], $2::text[], $3::text[], $4::bigint[], $5::text[], $6::text[], $7::text[]) AS u(p, i, s, r, t, d, m)
       ), revised AS (
         INSERT INTO es_streams (stream, revision)
         SELECT * FROM unnest($8::text[], $9::bigint[])
         ON CONFLICT (stream) DO UPDATE SET revision = excluded.revision
       )
       SELECT pg_notify('${NOTIFY_CHANNEL}', $10)`,
      [
        column((row) => row.position),
        column((row) => row.event.id),
        column((row) => row.stream),
        column((row) => row.revision),
        column((row) => row.event.type),
        column((row) => row.event.data),
        column((row) => row.event.metadata),
        [...plan.streams.keys()],
        [...plan.streams.values()],
        String(plan.head),
      ],
    ));
  }

  private async readEvents(sql: string, params: unknown[]): Promise<RecordedEvent[]> {
    const { rows } = await this.query<EventRow>(sql, params);
    return rows.map(toRecordedEvent);
  }

  private async query<Row extends pg.QueryResultRow>(sql: string, params: unknown[]): Promise<pg.QueryResult<Row>> {
    try {
      // Every text here is one of a few (the filters' values are parameters): each is prepared once per connection.
      return await this.pool.query<Row>(prepared(sql, params));
    } catch (error) {
      if (this.closing) throw new EventStoreUnavailableError('the event store is closed', { cause: error });
      throw mapError(error, 'could not read the event store');
    }
  }

  private assertOpen(): void {
    if (this.closing) throw new EventStoreUnavailableError('the event store is closed');
  }
}

interface PlannedEvent {
  position: number;
  stream: string;
  revision: number;
  event: PreparedAppend['events'][number];
}

interface Plan {
  events: PlannedEvent[];
  /** Each written stream's new last revision. */
  streams: Map<string, number>;
  outcomes: Array<Outcome<AppendResult[]>>;
  /** The highest position written (or the head read, when nothing is). */
  head: number;
}

/**
 * One appendMulti call checked against the state its predecessors in the batch left: all its streams pass or it
 * throws the first failure (the embedded store's order: streams in request order, events in order).
 */
function decide(
  requests: PreparedAppend[],
  revisions: Map<string, number>,
  taken: Set<string>,
): Array<{ stream: string; events: PreparedAppend['events']; from: number }> {
  const mine = new Set<string>();
  return requests.map(({ stream, expectedRevision, events }) => {
    const current = revisions.get(stream);
    if (!revisionMatches(expectedRevision, current)) throw new WrongExpectedVersionError(stream, expectedRevision, current ?? 'no_stream');
    for (const event of events) {
      // Reusing an id is a bug in the caller, not a retry to absorb: refused, as by the embedded store.
      if (taken.has(event.id) || mine.has(event.id)) throw new DuplicateEventIdError(event.id);
      mine.add(event.id);
    }
    return { stream, events, from: (current ?? -1) + 1 };
  });
}

/** The port's error for what is worth retrying; anything else as the server said it. */
function mapError(error: unknown, what: string): unknown {
  if (error instanceof EventStoreUnavailableError) return error;
  if (isTransientPostgresError(error)) return new EventStoreUnavailableError(`${what}: ${(error as Error).message}`, { cause: error });
  return error;
}

/** LIMIT NULL is no limit. */
function limitOf(maxCount: number | undefined): number | null {
  if (maxCount === undefined) return null;
  checkNonNegativeInteger('maxCount', maxCount);
  return maxCount;
}

function checkNonNegativeInteger(name: string, value: number): void {
  if (!Number.isSafeInteger(value) || value < 0) throw new Error(`${name} must be an integer >= 0, got ${String(value)}`);
}

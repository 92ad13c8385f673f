import type { EventFilter, EventMetadata, RecordedEvent } from '../../ports/event-store.ts';
import type { Migration } from './postgres-pool.ts';

/** The key of the event store's migrations in wallet_ops_migrations (postgres-pool.ts). */
export const EVENT_STORE_SCHEMA = 'event-store';

/**
 * Schema of the PostgreSQL event store, as versioned migrations (applied at open, see migrate()).
 *
 * `position` is assigned by the appender under a lock (postgres-event-store.ts), not by a sequence: a sequence
 * hands out numbers before commit, so a lower number could commit after a higher one was read. Data and metadata
 * are stored as TEXT, the exact JSON written (the hash chain's canonical JSON included), not as JSONB, which would
 * reorder keys and refuse some strings JSON allows (\u0000). `es_streams` holds each stream's last revision, so
 * the expected-revision check is one primary-key lookup. The (type, position) index serves type filters; stream
 * prefix filters are evaluated on the position-ordered scan, as in the embedded store.
 */
export const EVENT_STORE_MIGRATIONS: Migration[] = [
  {
    version: 1,
    sql: `
      CREATE TABLE es_events (
        position   BIGINT      PRIMARY KEY,
        id         TEXT        NOT NULL UNIQUE,
        stream     TEXT        NOT NULL,
        revision   BIGINT      NOT NULL,
        type       TEXT        NOT NULL,
        data       TEXT        NOT NULL,
        metadata   TEXT        NOT NULL,
        created_at TIMESTAMPTZ NOT NULL,
        UNIQUE (stream, revision)
      );
      CREATE TABLE es_streams (
        stream   TEXT   PRIMARY KEY,
        revision BIGINT NOT NULL
      );
      CREATE INDEX es_events_by_type ON es_events (type, position);
    `,
  },
];

export interface EventRow {
  position: string;
  id: string;
  stream: string;
  revision: string;
  type: string;
  data: string;
  metadata: string;
  created_at: Date;
}

export const EVENT_COLUMNS = 'position, id, stream, revision, type, data, metadata, created_at';

/** BIGINT columns come back as strings from pg; positions and revisions stay below 2^53. */
export function toRecordedEvent(row: EventRow): RecordedEvent {
  return {
    id: row.id,
    type: row.type,
    data: JSON.parse(row.data) as unknown,
    metadata: JSON.parse(row.metadata) as EventMetadata,
    stream: row.stream,
    revision: Number(row.revision),
    position: Number(row.position),
    createdAt: row.created_at.toISOString(),
  };
}

/**
 * SQL conditions (to AND into a WHERE) for a filter, numbering their parameters from `firstParam`. Same semantics
 * as the port's matchesFilter, including "an empty list matches nothing". starts_with compares literally: no
 * LIKE pattern to escape.
 */
export function filterSql(filter: EventFilter | undefined, firstParam: number): { sql: string; params: unknown[] } {
  const clauses: string[] = [];
  const params: unknown[] = [];
  const prefixes = filter?.streamPrefixes;
  if (prefixes) {
    params.push(prefixes);
    clauses.push(`EXISTS (SELECT 1 FROM unnest($${firstParam}::text[]) AS prefix WHERE starts_with(stream, prefix))`);
  }
  const types = filter?.eventTypes;
  if (types) {
    params.push(types);
    clauses.push(`type = ANY($${firstParam + params.length - 1}::text[])`);
  }
  return { sql: clauses.map((clause) => ` AND ${clause}`).join(''), params };
}

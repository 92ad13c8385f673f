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

/**
 * The append, as one function the server runs in one round trip (the shape of Emmett's emt_append_to_stream and
 * Marten's mt_append_event): it takes the position lock, then decides each append call of a group-commit batch in
 * order, as if each ran after the previous (against the revisions and ids read once under the lock, moved in memory
 * by the calls before it; a call that fails writes nothing and the others go on), writes the batch's events and
 * stream revisions with one INSERT each (not a lookup and two INSERTs per stream: a batch of 64 creates would run
 * some 500 statements inside the lock), notifies at commit, and returns one row per stream written, or one row for a
 * call that failed. A batch where every call commits (the usual one: each stream once, no id taken, every expected
 * revision met) is decided and written by set statements, without the loop.
 *
 * Arguments, one entry per stream of the batch in call order: the call's index, the stream, its expected revision
 * ('no_stream', 'stream_exists', 'any' or a number) and its event count; then the events' ids and types, flattened in
 * the same order; then their data and metadata as UTF-8 in one binary parameter, each event's data followed by its
 * metadata, with each event's byte offset and lengths (v1 took them as two text arrays: quoting ~1 kB of JSON per
 * event into an array literal cost ~20 µs of the process's CPU per create, and the server's parsing of it ~7).
 * Versioned by name, so that a process of the previous release keeps calling its own during a rolling upgrade (v1
 * stays in a database it was created in); created (or replaced) at every open, under the migrations' lock
 * (postgres-pool.ts, migrate). v3 returns the events' created_at too, so that this process hands its own events to
 * its subscriptions without reading them back (postgres-event-store.ts, handOver).
 */
export const APPEND_FUNCTION = 'es_append_v3';
/** The transaction-scoped advisory lock under which positions are assigned (any constant unique to this use). */
export const POSITION_LOCK = "hashtext('wallet-ops:event-store:positions')";
export const EVENT_STORE_ROUTINES = `
  CREATE OR REPLACE FUNCTION ${APPEND_FUNCTION}(
    p_call int[], p_stream text[], p_expected text[], p_count int[],
    p_id text[], p_type text[], p_json bytea, p_offset int[], p_data_bytes int[], p_metadata_bytes int[],
    p_channel text
  ) RETURNS TABLE (
    o_part int, o_outcome text, o_actual bigint, o_event_id text, o_revision bigint, o_position bigint,
    o_created_at timestamptz
  )
  LANGUAGE plpgsql AS $fn$
  DECLARE
    v_parts int := coalesce(array_length(p_stream, 1), 0);
    v_head bigint;
    v_offset int[] := ARRAY[1];
    -- Each stream's revision as the calls decided so far leave it; the ids stored or written by an earlier call.
    v_revs jsonb;
    v_taken text[];
    v_revisions bigint[];
    -- What the batch writes, laid out in memory and written by one INSERT each at the end (the old plan's shape).
    w_pos bigint[] := '{}';
    w_idx int[] := '{}';
    w_part int[] := '{}';
    w_rev bigint[] := '{}';
    w_streams text[] := '{}';
    v_first int := 1;
    v_last int;
    v_cur bigint;
    v_matches boolean;
    v_failed boolean;
    v_from bigint;
    i int;
    j int;
    k int;
  BEGIN
    -- Transaction-scoped: released at the commit that follows this statement, so positions commit in order.
    PERFORM pg_advisory_xact_lock(${POSITION_LOCK});
    -- What every event written gets as created_at; an OUT column, so every row returned carries it.
    o_created_at := statement_timestamp();
    SELECT coalesce(max(e.position), 0) INTO v_head FROM es_events e;
    SELECT coalesce(jsonb_object_agg(s.stream, s.revision), '{}') INTO v_revs
      FROM es_streams s WHERE s.stream = ANY (p_stream);
    v_taken := ARRAY(SELECT e.id FROM es_events e WHERE e.id = ANY (p_id));
    FOR i IN 2..v_parts LOOP
      v_offset[i] := v_offset[i - 1] + p_count[i - 1];
    END LOOP;
    -- The usual batch (every stream once, every id new, every expected revision met: every call commits, as in order)
    -- in four set statements; the loop below runs tens of PL/pgSQL statements per stream (a fifth of the server's CPU
    -- per append of a batch of creates).
    v_revisions := ARRAY(
      SELECT (v_revs ->> x.stream)::bigint FROM unnest(p_stream) WITH ORDINALITY AS x(stream, n) ORDER BY x.n);
    IF cardinality(v_taken) = 0
       AND (SELECT count(DISTINCT x.stream) FROM unnest(p_stream) AS x(stream)) = v_parts
       AND (SELECT count(DISTINCT x.id) FROM unnest(p_id) AS x(id)) = cardinality(p_id)
       AND NOT EXISTS (
         SELECT FROM unnest(p_expected, v_revisions) AS x(expected, cur)
         WHERE NOT CASE x.expected WHEN 'any' THEN true WHEN 'no_stream' THEN x.cur IS NULL
           WHEN 'stream_exists' THEN x.cur IS NOT NULL ELSE coalesce(x.cur = x.expected::bigint, false) END)
    THEN
      RETURN QUERY
        SELECT (x.n - 1)::int, 'ok'::text, NULL::bigint, NULL::text, coalesce(x.cur, -1) + x.count,
          v_head + sum(x.count) OVER (ORDER BY x.n), o_created_at
        FROM unnest(v_revisions, p_count) WITH ORDINALITY AS x(cur, count, n) ORDER BY x.n;
      INSERT INTO es_events (position, id, stream, revision, type, data, metadata, created_at)
      SELECT v_head + e.ev, p_id[e.ev], p_stream[g.part],
        coalesce(v_revisions[g.part], -1) + 1 + e.ev - v_offset[g.part], p_type[e.ev],
        convert_from(substring(p_json FROM p_offset[e.ev] + 1 FOR p_data_bytes[e.ev]), 'UTF8'),
        convert_from(substring(p_json FROM p_offset[e.ev] + p_data_bytes[e.ev] + 1 FOR p_metadata_bytes[e.ev]), 'UTF8'),
        o_created_at
      FROM generate_series(1, v_parts) AS g(part),
        generate_series(v_offset[g.part], v_offset[g.part] + p_count[g.part] - 1) AS e(ev);
      INSERT INTO es_streams (stream, revision)
      SELECT p_stream[g.part], coalesce(v_revisions[g.part], -1) + p_count[g.part]
      FROM generate_series(1, v_parts) AS g(part)
      ON CONFLICT (stream) DO UPDATE SET revision = excluded.revision;
      PERFORM pg_notify(p_channel, (v_head + cardinality(p_id))::text);
      RETURN;
    END IF;
    WHILE v_first <= v_parts LOOP
      v_last := v_first;
      WHILE v_last < v_parts AND p_call[v_last + 1] = p_call[v_first] LOOP
        v_last := v_last + 1;
      END LOOP;
      v_failed := false;
      <<checks>>
      FOR i IN v_first..v_last LOOP
        v_cur := (v_revs ->> p_stream[i])::bigint;
        -- Assigned first: an IF's condition ends at its first THEN, a CASE's included.
        v_matches := CASE p_expected[i]
            WHEN 'any' THEN true
            WHEN 'no_stream' THEN v_cur IS NULL
            WHEN 'stream_exists' THEN v_cur IS NOT NULL
            ELSE coalesce(v_cur = p_expected[i]::bigint, false) END;
        IF NOT v_matches THEN
          o_part := i - 1; o_outcome := 'wrong_revision'; o_actual := v_cur;
          o_event_id := NULL; o_revision := NULL; o_position := NULL;
          RETURN NEXT;
          v_failed := true;
          EXIT checks;
        END IF;
        FOR j IN v_offset[i]..v_offset[i] + p_count[i] - 1 LOOP
          -- Stored already, or earlier in this call (reusing an id is a caller's bug, refused, not absorbed).
          IF p_id[j] = ANY (v_taken) OR p_id[j] = ANY (p_id[v_offset[v_first]:j - 1]) THEN
            o_part := i - 1; o_outcome := 'duplicate_id'; o_actual := NULL;
            o_event_id := p_id[j]; o_revision := NULL; o_position := NULL;
            RETURN NEXT;
            v_failed := true;
            EXIT checks;
          END IF;
        END LOOP;
      END LOOP;
      IF NOT v_failed THEN
        FOR i IN v_first..v_last LOOP
          v_from := coalesce((v_revs ->> p_stream[i])::bigint, -1) + 1;
          FOR k IN 0..p_count[i] - 1 LOOP
            w_idx := w_idx || (v_offset[i] + k);
            w_pos := w_pos || (v_head + k + 1);
            w_part := w_part || i;
            w_rev := w_rev || (v_from + k);
          END LOOP;
          v_head := v_head + p_count[i];
          v_revs := jsonb_set(v_revs, ARRAY[p_stream[i]], to_jsonb(v_from + p_count[i] - 1));
          w_streams := w_streams || p_stream[i];
          o_part := i - 1; o_outcome := 'ok'; o_actual := NULL;
          o_event_id := NULL; o_revision := v_from + p_count[i] - 1; o_position := v_head;
          RETURN NEXT;
        END LOOP;
        v_taken := v_taken || p_id[v_offset[v_first]:v_offset[v_last] + p_count[v_last] - 1];
      END IF;
      v_first := v_last + 1;
    END LOOP;
    IF cardinality(w_pos) > 0 THEN
      INSERT INTO es_events (position, id, stream, revision, type, data, metadata, created_at)
      SELECT u.pos, p_id[u.idx], p_stream[u.part], u.rev, p_type[u.idx],
        convert_from(substring(p_json FROM p_offset[u.idx] + 1 FOR p_data_bytes[u.idx]), 'UTF8'),
        convert_from(
          substring(p_json FROM p_offset[u.idx] + p_data_bytes[u.idx] + 1 FOR p_metadata_bytes[u.idx]), 'UTF8'),
        o_created_at
      FROM unnest(w_pos, w_idx, w_part, w_rev) AS u(pos, idx, part, rev);
      INSERT INTO es_streams (stream, revision)
      SELECT w.stream, (v_revs ->> w.stream)::bigint FROM (SELECT DISTINCT unnest(w_streams) AS stream) AS w
      ON CONFLICT (stream) DO UPDATE SET revision = excluded.revision;
      PERFORM pg_notify(p_channel, v_head::text);
    END IF;
  END
  $fn$;
`;

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

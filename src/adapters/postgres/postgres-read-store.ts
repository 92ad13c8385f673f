/**
 * The ReadStore port on PostgreSQL, with the same semantics as the embedded SQLite adapter (the reference).
 *
 * Layout: one table per collection, `rm_<collection> (id TEXT PRIMARY KEY, doc JSONB NOT NULL)`, and one
 * `read_checkpoints (projection, position, generation)`; every declared index is a btree on the fields' key
 * expressions (postgres-read-query.ts), so `where` + `range` + `sort` read an index range in order. One table per
 * collection keeps each model's statistics and indexes its own, and lets `promote` swap a rebuilt model in with
 * a rename inside one transaction (PostgreSQL's DDL is transactional: readers see the old table or the new one).
 *
 * - commit: one transaction. With an expected checkpoint or generation, the projection's checkpoint row is
 *   locked first (`SELECT … FOR UPDATE`, after creating it when missing), so two runners of one projection are
 *   serialized and the second sees the first's checkpoint and is refused. Consecutive upserts into a collection
 *   go as one statement per 1,000 documents, so a rebuild's large commit is many bounded statements.
 * - incrementCounter and take are single statements (`INSERT … ON CONFLICT DO UPDATE … RETURNING`,
 *   `DELETE … RETURNING`): the row lock makes them atomic across every process on the database.
 * - Every statement runs under the pool's statement timeout; index builds (defineCollections, promote) under a
 *   longer one. Errors that say nothing about the request (connection lost, failover, timeout, deadlock) become
 *   ReadStoreUnavailableError; the caller's errors keep their type.
 */
import type pg from 'pg';
import type {
  Checkpoint,
  CollectionDefinition,
  Counter,
  CounterChange,
  Document,
  FindQuery,
  ReadStore,
  Write,
} from '../../ports/read-store.ts';
import { CheckpointConflictError, ReadStoreQueryError, ReadStoreUnavailableError } from '../../ports/read-store.ts';
import {
  isTransientPostgresError,
  migrate,
  openPostgresPool,
  prepared,
  type PostgresConnectionOptions,
} from './postgres-pool.ts';
import {
  CHECKPOINTS_TABLE,
  READ_STORE_MIGRATIONS,
  checkCollectionName,
  compileCount,
  compileFind,
  compileSweep,
  holdsNul,
  indexName,
  indexSql,
  isDeclaredIndexName,
  quote,
  tableName,
  textColumns,
  validateDefinition,
} from './postgres-read-query.ts';

/** How often one handle deletes a counter collection's expired counters (during an increment). */
const COUNTER_SWEEP_EVERY_MS = 60_000;
/** Documents per upsert statement, ids per getMany or delete statement. */
const BATCH = 1_000;
/** Building an index over a large collection takes longer than any query should; still bounded. */
const INDEX_BUILD_TIMEOUT_MS = 15 * 60_000;
/** Deadlocks and serialization failures abort a transaction that can simply run again. */
const RETRIES = 3;
/** Serializes the DDL of every process on the database (a hash of the name, as migrate's lock). */
const DDL_LOCK = 'wallet-ops-read-store-ddl';
/** Unicode-aware collations for `lower()`, best first: full case mapping (PG 18), simple (PG 17), ICU. */
const SEARCH_COLLATIONS = ['pg_unicode_fast', 'pg_c_utf8', 'und-x-icu'];

type Client = pg.PoolClient;

/**
 * `readOnly`: a hot standby's copy of the read models (POSTGRES_READ_URL), which cannot be written: nothing is
 * migrated and defineCollections only learns the definitions (the primary creates the tables, which replicate).
 */
export async function openPostgresReadStore(
  options: PostgresConnectionOptions & { readOnly?: boolean },
): Promise<ReadStore> {
  const pool = openPostgresPool(options);
  try {
    if (!options.readOnly) await migrate(pool, 'read-store', READ_STORE_MIGRATIONS);
    const searchCollation = await chooseSearchCollation(pool);
    return withOwnMethods(
      new PostgresReadStore(pool, options.statementTimeoutMs, searchCollation, options.readOnly ?? false),
    );
  } catch (error) {
    await pool.end().catch(() => {});
    throw isTransientPostgresError(error)
      ? new ReadStoreUnavailableError(`PostgreSQL is unavailable: ${(error as Error).message}`, { cause: error })
      : error;
  }
}

/** Every method of the port, so that the compiler notices one added to it. */
const METHODS: Record<keyof ReadStore, true> = {
  defineCollections: true,
  get: true,
  find: true,
  findText: true,
  count: true,
  commit: true,
  getMany: true,
  getCheckpoint: true,
  getGeneration: true,
  promote: true,
  dropCollection: true,
  incrementCounter: true,
  take: true,
  close: true,
};

/** A plain object of bound methods, as the embedded adapter returns: a caller may spread it to wrap one method. */
function withOwnMethods(store: PostgresReadStore): ReadStore {
  return Object.fromEntries(
    Object.keys(METHODS).map((name) => [
      name,
      (store[name as keyof ReadStore] as (...args: unknown[]) => unknown).bind(store),
    ]),
  ) as unknown as ReadStore;
}

/** The best Unicode-aware collation this server has for the database's encoding; null: the database's own. */
async function chooseSearchCollation(pool: pg.Pool): Promise<string | null> {
  const { rows } = await pool.query<{ collname: string }>(
    'SELECT collname FROM pg_collation WHERE collname = ANY($1) AND collencoding IN (-1, (SELECT encoding FROM ' +
      'pg_database WHERE datname = current_database()))',
    [SEARCH_COLLATIONS],
  );
  const found = new Set(rows.map((row) => row.collname));
  return SEARCH_COLLATIONS.find((name) => found.has(name)) ?? null;
}

class PostgresReadStore implements ReadStore {
  private readonly pool: pg.Pool;
  /** The texts of grouped commits (of two or more) run as prepared statements: PREPARED_GROUP_TEXTS at most. */
  private readonly preparedGroups = new Set<string>();
  private readonly statementTimeoutMs: number;
  private readonly searchCollation: string | null;
  private readonly definitions = new Map<string, CollectionDefinition>();
  private readonly lastSweep = new Map<string, number>();
  private readonly readOnly: boolean;
  /** One-statement commits waiting for the statement in flight (commitInOneStatement). */
  private pendingCommits: PendingCommit[] = [];
  /** Grouped getMany statements under way: a commit waits for those in flight when it comes (commitInOneStatement). */
  private readonly readsInFlight = new Set<Promise<unknown>>();
  /** getMany reads asked in this turn of the event loop (readTogether). */
  private readonly pendingReads: Array<{
    table: string;
    ids: string[];
    resolve(docs: Document[]): void;
    reject(error: unknown): void;
  }> = [];
  private flushingCommits = false;
  private closed = false;

  constructor(pool: pg.Pool, statementTimeoutMs: number, searchCollation: string | null, readOnly: boolean) {
    this.pool = pool;
    this.statementTimeoutMs = statementTimeoutMs;
    this.searchCollation = searchCollation;
    this.readOnly = readOnly;
  }

  async defineCollections(list: CollectionDefinition[]): Promise<void> {
    list.forEach(validateDefinition);
    if (!this.readOnly)
      await this.transaction(async (client) => {
        await this.ddl(client);
        for (const def of list)
          await client.query(
            `CREATE TABLE IF NOT EXISTS ${quote(tableName(def.name))} (id TEXT PRIMARY KEY, doc JSONB NOT NULL)`,
          );
        // Only missing indexes are built: CREATE INDEX IF NOT EXISTS would lock the table against writes even when the
        // index exists. One of ours that is no longer declared (a model's queries changed) is dropped: every write
        // of the collection would go on paying for it.
        const existing = await this.indexesOf(
          client,
          list.map((def) => tableName(def.name)),
        );
        for (const def of list) {
          const table = tableName(def.name);
          const declared = (def.indexes ?? []).map((fields) => ({ fields, name: indexName(table, fields) }));
          for (const { fields, name } of declared)
            if (!existing.has(name)) await buildIndex(client, indexSql(table, fields));
          for (const name of existing)
            if (isDeclaredIndexName(table, name) && !declared.some((index) => index.name === name))
              await client.query(`DROP INDEX ${quote(name)}`);
        }
      });
    for (const def of list) this.definitions.set(def.name, { ...def, searchFields: [...(def.searchFields ?? [])] });
  }

  async get<T extends Document = Document>(collection: string, id: string): Promise<T | null> {
    const table = this.table(collection);
    if (holdsNul(id)) return null; // no TEXT id holds U+0000, and sending one fails the statement
    const { rows } = await this.query<{ doc: T }>(`SELECT doc FROM ${table} WHERE id = $1`, [id]);
    return rows[0]?.doc ?? null;
  }

  async find<T extends Document = Document>(collection: string, query: FindQuery = {}): Promise<T[]> {
    const { sql, params } = compileFind(this.definition(collection), query, this.searchCollation);
    return (await this.query<{ doc: T }>(sql, params)).rows.map((row) => row.doc);
  }

  async findText<T extends Document = Document>(
    collection: string,
    query: FindQuery,
    field: string,
  ): Promise<Array<string | T>> {
    const { sql, params } = compileFind(this.definition(collection), query, this.searchCollation, textColumns(field));
    return (await this.query<{ text: string | null; doc: T | null }>(sql, params)).rows.map(
      (row) => row.doc ?? row.text!,
    );
  }

  async count(collection: string, query: Pick<FindQuery, 'where' | 'search' | 'range'> = {}): Promise<number> {
    const { sql, params } = compileCount(this.definition(collection), query, this.searchCollation);
    return Number((await this.query<{ n: string }>(sql, params)).rows[0]!.n); // a BIGINT, as a string
  }

  async commit(writes: Write[], checkpoint?: Checkpoint): Promise<void> {
    // Everything is checked before the transaction starts: a bad write leaves nothing behind.
    const steps = this.plan(writes);
    if (checkpoint) checkCheckpoint(checkpoint);
    if (steps.length === 0 && !checkpoint) return;
    if (checkpoint && steps.length <= ONE_STATEMENT_STEPS && touchesEachRowOnce(steps))
      return this.commitInOneStatement(steps, checkpoint);
    await this.transaction(async (client) => {
      if (checkpoint && (checkpoint.expected !== undefined || checkpoint.generation !== undefined))
        await this.fence(client, checkpoint);
      for (const step of steps) await client.query(step.sql, step.params);
      if (checkpoint) {
        // The checkpoint's statements (and the fence's) are the same at every commit: prepared once per connection.
        await client.query(
          prepared(
            `INSERT INTO ${CHECKPOINTS_TABLE} (projection, position) VALUES ($1, $2) ON CONFLICT (projection) DO ` +
              'UPDATE SET position = EXCLUDED.position',
            [checkpoint.projection, checkpoint.position],
          ),
        );
      }
    });
  }

  /**
   * A projection's page as one statement, so one round trip and one commit: the checkpoint is moved by a
   * compare-and-set (an UPDATE whose WHERE holds the expected position and generation, or the first INSERT of
   * the row), and every write is gated on it having moved. A second writer's UPDATE waits for the first's row lock
   * and then compares against the row the first committed (READ COMMITTED re-reads it), so it moves nothing and
   * writes nothing. Writes of one statement cannot see one another: only pages that touch each row once come here.
   *
   * Group commit: the followers of a process get each page at the same moment and commit it at about the same
   * moment. Commits that arrive while one is being sent go together in the next statement, each still gated on its
   * own checkpoint only (one refused leaves the others committed), so a page costs the database one commit, not
   * one per projection.
   */
  private commitInOneStatement(steps: Step[], checkpoint: Checkpoint): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.pendingCommits.push({ steps, checkpoint, resolve, reject });
      if (this.flushingCommits) return;
      this.flushingCommits = true;
      void this.flushAfterReads();
    });
  }

  /**
   * The other followers of the page are reading their documents (readTogether) and commit as soon as they have
   * them: the commits wait for the reads asked by the next turn of the event loop, then one more turn. Reads asked
   * later are not waited for, so commits never starve.
   */
  private async flushAfterReads(): Promise<void> {
    const nextTurn = () => new Promise((resolve) => setImmediate(resolve));
    await nextTurn();
    await nextTurn(); // a flushReads queued after us in that turn has sent its statement
    await Promise.allSettled([...this.readsInFlight]);
    await nextTurn();
    await this.flushCommits();
  }

  private async flushCommits(): Promise<void> {
    while (this.pendingCommits.length > 0) {
      const group: PendingCommit[] = [];
      const rest: PendingCommit[] = [];
      const projections = new Set<string>();
      const rows = new Set<string>();
      for (const commit of this.pendingCommits) {
        // One commit per projection per statement, no row written twice, a bounded statement: the rest wait for the
        // next.
        const keys = rowKeys(commit.steps);
        const fits =
          !projections.has(commit.checkpoint.projection) &&
          !keys.some((key) => rows.has(key)) &&
          group.length < GROUP_MAX;
        if (!fits) {
          rest.push(commit);
          continue;
        }
        group.push(commit);
        projections.add(commit.checkpoint.projection);
        keys.forEach((key) => rows.add(key));
      }
      this.pendingCommits = rest;
      await this.runGroup(group).catch((error: unknown) => group.forEach((commit) => commit.reject(error)));
    }
    this.flushingCommits = false;
  }

  /** One statement for the group; each commit resolves or is refused on its own checkpoint. Never throws. */
  private async runGroup(group: PendingCommit[]): Promise<void> {
    const params: unknown[] = [];
    const ctes: string[] = [];
    const results: string[] = [];
    const joins: string[] = [];
    group.forEach(({ steps, checkpoint }, m) => {
      const fenced = checkpoint.expected !== undefined || checkpoint.generation !== undefined;
      const at = params.length;
      const $ = (n: number) => `$${at + n}`;
      params.push(checkpoint.projection, checkpoint.position);
      joins.push(` LEFT JOIN ${CHECKPOINTS_TABLE} AS c${m} ON c${m}.projection = ${$(1)}`);
      if (fenced) {
        params.push(checkpoint.expected !== undefined, checkpoint.expected ?? null, checkpoint.generation ?? null);
        ctes.push(`m${m}_row AS (
           UPDATE ${CHECKPOINTS_TABLE} SET position = ${$(2)}
           WHERE projection = ${$(1)}
             AND (NOT ${$(3)}::boolean OR position IS NOT DISTINCT FROM ${$(4)}::bigint)
             AND (${$(5)}::int IS NULL OR generation = ${$(5)}::int)
           RETURNING 1
         ), m${m}_first AS (
           INSERT INTO ${CHECKPOINTS_TABLE} (projection, position)
           SELECT ${$(1)}, ${$(2)}
           WHERE ${$(4)}::bigint IS NULL AND coalesce(${$(5)}::int, 0) = 0
             AND NOT EXISTS (SELECT FROM ${CHECKPOINTS_TABLE} WHERE projection = ${$(1)})
           ON CONFLICT (projection) DO NOTHING
           RETURNING 1
         ), m${m} AS (SELECT 1 FROM m${m}_row UNION ALL SELECT 1 FROM m${m}_first)`);
      } else {
        ctes.push(`m${m} AS (
           INSERT INTO ${CHECKPOINTS_TABLE} (projection, position) VALUES (${$(1)}, ${$(2)})
           ON CONFLICT (projection) DO UPDATE SET position = EXCLUDED.position
           RETURNING 1
         )`);
      }
      steps.forEach((step, i) => {
        const offset = params.length;
        params.push(...step.params);
        const sql = step.gated
          .replace(/\$(\d+)/g, (_, n: string) => `$${Number(n) + offset}`)
          .replaceAll(GATE, `EXISTS (SELECT FROM m${m})`);
        ctes.push(`m${m}_w${i} AS (${sql})`);
      });
      results.push(
        `(SELECT count(*) FROM m${m})::int AS moved${m}, c${m}.position AS position${m}, c${m}.generation AS ` +
          `generation${m}`,
      );
    });
    // Every commit here carries its checkpoint: the statement's transaction does not wait for its WAL flush
    // (synchronous_commit off for it alone). A crash that takes it takes the checkpoint with the writes, and the
    // followers replay from the one left; any synchronous commit after it flushes it too. Visible at once either way.
    const sql =
      `WITH ${ctes.join(', ')} SELECT ${results.join(', ')} FROM (SELECT set_config('synchronous_commit', 'off', ` +
      `true)) AS one${joins.join('')}`;
    let row: Record<string, unknown>;
    try {
      if (group.length > 1 && this.preparedGroups.size < PREPARED_GROUP_TEXTS) this.preparedGroups.add(sql);
      const named = group.length === 1 || this.preparedGroups.has(sql);
      row = await this.oneStatement(named ? prepared(sql, params) : { text: sql, values: params });
    } catch (error) {
      if (group.length > 1 && !isTransientPostgresError(error)) {
        // Which commit the server refused is not known: each alone, so only that one fails.
        for (const commit of group) await this.runGroup([commit]);
        return;
      }
      for (const commit of group) commit.reject(error);
      return;
    }
    group.forEach(({ checkpoint, resolve, reject }, m) => {
      if (Number(row[`moved${m}`]) > 0) return resolve();
      const generation = Number(row[`generation${m}`] ?? 0);
      if (checkpoint.generation !== undefined && generation !== checkpoint.generation) {
        return reject(
          new CheckpointConflictError(checkpoint.projection, checkpoint.generation, generation, 'generation'),
        );
      }
      // What this statement's snapshot saw; under a concurrent commit the row it lost to may be newer.
      reject(
        new CheckpointConflictError(
          checkpoint.projection,
          checkpoint.expected ?? null,
          toPosition(row[`position${m}`] as string | null),
        ),
      );
    });
  }

  /** One statement in autocommit, again after a deadlock or a serialization failure (nothing was committed). */
  private async oneStatement(query: pg.QueryConfig): Promise<Record<string, unknown>> {
    for (let attempt = 1; ; attempt++) {
      this.checkOpen();
      try {
        return (await this.pool.query(query)).rows[0] as Record<string, unknown>;
      } catch (error) {
        if (isRetryableAbort(error) && attempt < RETRIES) continue;
        throw this.translate(error);
      }
    }
  }

  async getMany<T extends Document = Document>(collection: string, ids: string[]): Promise<T[]> {
    const table = this.table(collection);
    const storable = ids.filter((id) => !holdsNul(id)); // no TEXT id holds U+0000
    if (storable.length <= BATCH) return this.readTogether(table, storable) as Promise<T[]>;
    const found: T[] = [];
    for (let i = 0; i < storable.length; i += BATCH) {
      const { rows } = await this.query<{ doc: T }>(`SELECT doc FROM ${table} WHERE id = ANY($1::text[])`, [
        storable.slice(i, i + BATCH),
      ]);
      found.push(...rows.map((row) => row.doc));
    }
    return found;
  }

  /**
   * The followers of a process get each page at the same moment and each reads the documents it folds: the reads
   * asked in one turn of the event loop go as one statement (and their commits then arrive together too).
   */
  private readTogether(table: string, ids: string[]): Promise<Document[]> {
    return new Promise((resolve, reject) => {
      this.pendingReads.push({ table, ids, resolve, reject });
      if (this.pendingReads.length === 1) setImmediate(() => void this.flushReads());
    });
  }

  private async flushReads(): Promise<void> {
    const reads = this.pendingReads.splice(0);
    const sql = reads
      .map(({ table }, i) => `SELECT ${i} AS q, doc FROM ${table} WHERE id = ANY($${i + 1}::text[])`)
      .join(' UNION ALL ');
    const params = reads.map(({ ids }) => ids);
    let read: Promise<pg.QueryResult<{ q: number; doc: Document }>> | undefined;
    try {
      this.checkOpen();
      read = this.pool.query<{ q: number; doc: Document }>(
        reads.length === 1 ? prepared(sql, params) : { text: sql, values: params },
      );
      this.readsInFlight.add(read);
      const { rows } = await read;
      const found = reads.map((): Document[] => []);
      for (const row of rows) found[row.q]!.push(row.doc);
      reads.forEach((pending, i) => pending.resolve(found[i]!));
    } catch (error) {
      const translated = this.translate(error);
      reads.forEach((pending) => pending.reject(translated));
    } finally {
      if (read) this.readsInFlight.delete(read);
    }
  }

  async getCheckpoint(projection: string): Promise<number | null> {
    const { rows } = await this.query<{ position: string | null }>(
      `SELECT position FROM ${CHECKPOINTS_TABLE} WHERE projection = $1`,
      [projection],
    );
    return toPosition(rows[0]?.position);
  }

  async getGeneration(projection: string): Promise<number> {
    const { rows } = await this.query<{ generation: number }>(
      `SELECT generation FROM ${CHECKPOINTS_TABLE} WHERE projection = $1`,
      [projection],
    );
    return rows[0]?.generation ?? 0;
  }

  /**
   * 1. The source gets the target's declared indexes and loses any other, and fresh statistics, while only the
   *    rebuild uses it (outside the swap: an index build over a large model must not hold readers up).
   * 2. One transaction: the target is dropped, the source renamed to it (with its indexes), the checkpoint moved
   *    and the generation raised. Readers wait for it (they queue on the table's lock for as long as the rename
   *    takes, not the build) and then read the new table.
   */
  async promote(source: string, target: string, checkpoints: { from: string; to: string }): Promise<void> {
    const from = this.definition(source);
    const to = this.definition(target);
    if (from.name === to.name) throw new ReadStoreQueryError(`cannot promote ${source} over itself`);
    const sourceTable = tableName(from.name);
    const targetTable = tableName(to.name);
    const declared = (to.indexes ?? []).map((fields) => ({ fields, name: indexName(sourceTable, fields) }));
    await this.transaction(async (client) => {
      await this.ddl(client);
      for (const { fields } of declared) await buildIndex(client, indexSql(sourceTable, fields));
      for (const name of await this.indexesOf(client, [sourceTable])) {
        if (name !== `${sourceTable}_pkey` && !declared.some((index) => index.name === name))
          await client.query(`DROP INDEX ${quote(name)}`);
      }
      await buildIndex(client, `ANALYZE ${quote(sourceTable)}`);
    });
    await this.transaction(async (client) => {
      await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [DDL_LOCK]);
      await client.query(`DROP TABLE IF EXISTS ${quote(targetTable)}`);
      await client.query(`ALTER TABLE ${quote(sourceTable)} RENAME TO ${quote(targetTable)}`);
      // Index names follow the table's, so that the source name can be defined again.
      for (const name of await this.indexesOf(client, [targetTable])) {
        if (name.startsWith(`${sourceTable}_`))
          await client.query(
            `ALTER INDEX ${quote(name)} RENAME TO ${quote(`${targetTable}_${name.slice(sourceTable.length + 1)}`)}`,
          );
      }
      const { rows } = await client.query<{ position: string | null }>(
        `SELECT position FROM ${CHECKPOINTS_TABLE} WHERE projection = $1`,
        [checkpoints.from],
      );
      const position = toPosition(rows[0]?.position);
      await client.query(`UPDATE ${CHECKPOINTS_TABLE} SET position = NULL WHERE projection = $1`, [checkpoints.from]);
      await client.query(
        `INSERT INTO ${CHECKPOINTS_TABLE} (projection, position, generation) VALUES ($1, $2, 1)
         ON CONFLICT (projection) DO UPDATE
         SET position = EXCLUDED.position, generation = ${CHECKPOINTS_TABLE}.generation + 1`,
        [checkpoints.to, position],
      );
    });
    this.definitions.delete(from.name);
  }

  async dropCollection(name: string): Promise<void> {
    checkCollectionName(name);
    await this.transaction(async (client) => {
      await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [DDL_LOCK]);
      await client.query(`DROP TABLE IF EXISTS ${quote(tableName(name))}`);
    });
    this.definitions.delete(name);
  }

  /**
   * One statement: a missing counter is inserted; an existing one is updated under its row lock, so concurrent
   * increments queue and each sees the count the previous one left. A live counter (number count, number
   * expiresAt after `now`) gets `by` added, floored at 0, and keeps its other fields; any other starts afresh.
   * Arithmetic is in float8, as JavaScript's, so the counts equal the embedded adapter's.
   */
  async incrementCounter(collection: string, id: string, change: CounterChange): Promise<Counter> {
    checkCounterChange(id, change);
    const table = this.table(collection);
    if (change.now - (this.lastSweep.get(collection) ?? -Infinity) >= COUNTER_SWEEP_EVERY_MS) {
      // Before the increment: a failed sweep must not report a counted increment as failed (a retry would count twice).
      this.lastSweep.set(collection, change.now);
      const sweep = compileSweep(this.definition(collection).name, change.now);
      await this.query(sweep.sql, sweep.params);
    }
    const { rows } = await this.query<{ doc: Counter }>(
      `INSERT INTO ${table} AS c (id, doc)
       VALUES ($1, jsonb_build_object('id', $1::text, 'count', GREATEST(0, $2::float8), 'expiresAt', $4::float8))
       ON CONFLICT (id) DO UPDATE SET doc = CASE
         WHEN jsonb_typeof(c.doc->'count') = 'number' AND jsonb_typeof(c.doc->'expiresAt') = 'number' THEN CASE
           WHEN (c.doc->'expiresAt')::float8 > $3::float8
           THEN c.doc || jsonb_build_object('count', GREATEST(0, (c.doc->'count')::float8 + $2::float8))
           ELSE EXCLUDED.doc END
         ELSE EXCLUDED.doc END
       RETURNING doc`,
      [id, change.by, change.now, change.expiresAt],
    );
    return rows[0]!.doc;
  }

  async take<T extends Document = Document>(collection: string, id: string): Promise<T | null> {
    const table = this.table(collection);
    const { rows } = await this.query<{ doc: T }>(`DELETE FROM ${table} WHERE id = $1 RETURNING doc`, [id]);
    return rows[0]?.doc ?? null;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.pool.end();
  }

  private definition(collection: string): CollectionDefinition {
    const found = this.definitions.get(collection);
    if (!found) throw new ReadStoreQueryError(`unknown collection ${JSON.stringify(collection)}`);
    return found;
  }

  private table(collection: string): string {
    return quote(tableName(this.definition(collection).name));
  }

  /** The checkpoint fence: the projection's row locked, then its generation and position compared. */
  private async fence(client: Client, checkpoint: Checkpoint): Promise<void> {
    // A row to lock even before the first commit: two first commits expecting null then queue on it.
    await client.query(
      prepared(`INSERT INTO ${CHECKPOINTS_TABLE} (projection) VALUES ($1) ON CONFLICT (projection) DO NOTHING`, [
        checkpoint.projection,
      ]),
    );
    const { rows } = await client.query<{ position: string | null; generation: number }>(
      prepared(`SELECT position, generation FROM ${CHECKPOINTS_TABLE} WHERE projection = $1 FOR UPDATE`, [
        checkpoint.projection,
      ]),
    );
    const generation = rows[0]?.generation ?? 0;
    if (checkpoint.generation !== undefined && generation !== checkpoint.generation) {
      throw new CheckpointConflictError(checkpoint.projection, checkpoint.generation, generation, 'generation');
    }
    const position = toPosition(rows[0]?.position);
    if (checkpoint.expected !== undefined && position !== checkpoint.expected)
      throw new CheckpointConflictError(checkpoint.projection, checkpoint.expected, position);
  }

  /** The writes as statements, in order: consecutive upserts (or deletes) into one collection batched. */
  private plan(writes: Write[]): Step[] {
    if (!Array.isArray(writes)) throw new TypeError('writes must be an array');
    const steps: Step[] = [];
    let run: { op: 'upsert' | 'delete'; table: string; items: Map<string, string> } | null = null;
    const flush = () => {
      if (!run) return;
      const items = [...run.items];
      for (let i = 0; i < items.length; i += BATCH) {
        const chunk = items.slice(i, i + BATCH);
        const { table } = run;
        const ids = chunk.map(([id]) => id);
        // One id per statement at most once (ON CONFLICT cannot touch a row twice): the map kept the last.
        const upsert = (gate: string) =>
          `INSERT INTO ${table} (id, doc) SELECT d->>'id', d FROM jsonb_array_elements($1::jsonb) AS d${gate} ON ` +
          'CONFLICT (id) DO UPDATE SET doc = EXCLUDED.doc';
        steps.push(
          run.op === 'upsert'
            ? {
                sql: upsert(''),
                gated: upsert(` WHERE ${GATE}`),
                params: [`[${chunk.map(([, doc]) => doc).join(',')}]`],
                table,
                ids,
              }
            : {
                sql: `DELETE FROM ${table} WHERE id = ANY($1::text[])`,
                gated: `DELETE FROM ${table} WHERE id = ANY($1::text[]) AND ${GATE}`,
                params: [ids],
                table,
                ids,
              },
        );
      }
      run = null;
    };
    const runOf = (op: 'upsert' | 'delete', table: string): Map<string, string> => {
      if (run?.op !== op || run.table !== table) {
        flush();
        run = { op, table, items: new Map() };
      }
      return run.items;
    };
    for (const write of writes) {
      const table = this.table(write?.collection);
      switch (write.op) {
        case 'upsert': {
          if (typeof write.doc?.id !== 'string')
            throw new TypeError(`upsert into ${table}: the document needs a string id`);
          const items = runOf('upsert', table);
          items.delete(write.doc.id); // a later upsert of the id takes the later place
          items.set(write.doc.id, JSON.stringify(write.doc));
          break;
        }
        case 'delete': {
          if (typeof write.id !== 'string') throw new TypeError(`delete from ${table}: the id must be a string`);
          runOf('delete', table).set(write.id, write.id);
          break;
        }
        case 'patch': {
          if (typeof write.id !== 'string') throw new TypeError(`patch of ${table}: the id must be a string`);
          if (write.patch === null || typeof write.patch !== 'object' || Array.isArray(write.patch))
            throw new TypeError(`patch of ${table}: the patch must be an object`);
          if ('id' in write.patch && write.patch.id !== write.id)
            throw new TypeError(`patch of ${table}: cannot change an id`);
          flush();
          // A shallow merge, null stored as null; a field set to undefined is removed, as the embedded adapter's JSON
          // does.
          const removed = Object.keys(write.patch).filter((key) => write.patch[key] === undefined);
          const update = `UPDATE ${table} SET doc = (doc - $2::text[]) || $3::jsonb WHERE id = $1`;
          steps.push({
            sql: update,
            gated: `${update} AND ${GATE}`,
            params: [write.id, removed, JSON.stringify(write.patch)],
            table,
            ids: [write.id],
          });
          break;
        }
        default:
          throw new TypeError(`unknown write ${JSON.stringify((write as { op?: unknown }).op)}`);
      }
    }
    flush();
    return steps;
  }

  /** Takes the DDL lock and lifts the statement timeout to the index-build bound, for this transaction. */
  private async ddl(client: Client): Promise<void> {
    await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [DDL_LOCK]);
    await client.query(`SET LOCAL statement_timeout = ${Math.max(INDEX_BUILD_TIMEOUT_MS, this.statementTimeoutMs)}`);
  }

  private async indexesOf(client: Client, tables: string[]): Promise<Set<string>> {
    const { rows } = await client.query<{ indexname: string }>(
      `SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() AND tablename = ANY($1::text[])`,
      [tables],
    );
    return new Set(rows.map((row) => row.indexname));
  }

  private async query<R extends pg.QueryResultRow>(sql: string, params: unknown[]): Promise<pg.QueryResult<R>> {
    this.checkOpen();
    try {
      return await this.pool.query<R>(sql, params);
    } catch (error) {
      throw this.translate(error);
    }
  }

  /**
   * Runs `fn` in a transaction on one connection, again when PostgreSQL aborted it for a deadlock or a
   * serialization failure (nothing was committed). A connection that failed is destroyed, not pooled.
   */
  private async transaction<T>(fn: (client: Client) => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      this.checkOpen();
      let client: Client;
      try {
        client = await this.pool.connect();
      } catch (error) {
        throw this.translate(error);
      }
      let broken = false;
      try {
        await client.query('BEGIN');
        const result = await fn(client);
        await client.query('COMMIT');
        return result;
      } catch (error) {
        await client.query('ROLLBACK').catch(() => (broken = true));
        if (isTransientPostgresError(error) && !isRetryableAbort(error)) broken = true;
        if (isRetryableAbort(error) && attempt < RETRIES) continue;
        throw this.translate(error);
      } finally {
        client.release(broken);
      }
    }
  }

  private translate(error: unknown): unknown {
    if (this.closed) return new ReadStoreUnavailableError('the read store is closed', { cause: error });
    if (isTransientPostgresError(error))
      return new ReadStoreUnavailableError(`PostgreSQL is unavailable: ${(error as Error).message}`, { cause: error });
    return error;
  }

  private checkOpen(): void {
    if (this.closed) throw new ReadStoreUnavailableError('the read store is closed');
  }
}

/**
 * Index builds and ANALYZE, under the DDL timeout set for the transaction: the client's per-query bound must not cut
 * them short.
 */
function buildIndex(client: Client, sql: string): Promise<unknown> {
  return client.query({ text: sql, query_timeout: INDEX_BUILD_TIMEOUT_MS + 1_000 } as pg.QueryConfig);
}

/** 40001 serialization_failure, 40P01 deadlock_detected. */
function isRetryableAbort(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === '40001' || code === '40P01';
}

/** One statement of a commit: `gated` is the same, run only when the checkpoint moved (commitInOneStatement). */
interface Step {
  sql: string;
  gated: string;
  params: unknown[];
  table: string;
  ids: string[];
}

/** The condition of every write of a one-statement commit. */
const GATE = 'EXISTS (SELECT FROM moved)';
/** At most this many write statements go in one statement with the checkpoint (a rebuild's large commits do not). */
const ONE_STATEMENT_STEPS = 8;

/** True when no row is written by two of the steps (the writes of one statement do not see each other's). */
function touchesEachRowOnce(steps: Step[]): boolean {
  const keys = rowKeys(steps);
  return new Set(keys).size === keys.length;
}

function rowKeys(steps: Step[]): string[] {
  return steps.flatMap((step) => step.ids.map((id) => `${step.table}\u0000${id}`));
}

interface PendingCommit {
  steps: Step[];
  checkpoint: Checkpoint;
  resolve(): void;
  reject(error: unknown): void;
}

/** At most this many commits go in one statement. */
const GROUP_MAX = 32;
/**
 * How many distinct texts of grouped commits a process runs as prepared statements: a page's followers commit the
 * same shape of statement again and again, and planning one of a few dozen CTEs costs the server more than running
 * it. Each stays prepared on every connection it ran on, so the set is bounded; texts past it are planned each time.
 */
const PREPARED_GROUP_TEXTS = 256;

/** BIGINT comes back from pg as a string (it may exceed 2^53); positions stay below it. */
function toPosition(value: string | null | undefined): number | null {
  return value === null || value === undefined ? null : Number(value);
}

function checkCheckpoint(checkpoint: Checkpoint): void {
  if (typeof checkpoint.projection !== 'string' || !Number.isSafeInteger(checkpoint.position)) {
    throw new TypeError('a checkpoint needs a projection name and an integer position');
  }
}

function checkCounterChange(id: string, change: CounterChange): void {
  if (typeof id !== 'string') throw new TypeError('a counter needs a string id');
  for (const name of ['by', 'now', 'expiresAt'] as const) {
    if (!Number.isFinite(change?.[name])) throw new TypeError(`incrementCounter: ${name} must be a finite number`);
  }
}

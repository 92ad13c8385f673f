/**
 * The embedded read store: one SQLite table per collection (`id TEXT PRIMARY KEY, doc TEXT NOT NULL`, the
 * document as JSON), fields reached with `json_extract(doc, '$.path')`, declared indexes as expression indexes
 * on exactly those expressions so that the planner uses them for `where` + `sort`.
 *
 * How it matches MongoDB for the values projections store:
 * - where: equality that also checks the JSON type, so `true` never matches `1` nor `"5"` matches `5`;
 *   `null` matches a null or a missing field, as `{ field: null }` does in MongoDB.
 * - sort: SQLite orders NULL < numbers < text, numbers numerically and text by UTF-8 bytes (= code point
 *   order), which is MongoDB's order for null/missing, numbers and strings. Null and missing are equal: first
 *   ascending, last descending. Booleans sort as 0/1 among numbers and objects/arrays as JSON text, unlike
 *   MongoDB: do not sort on them.
 * - search: substring match after JavaScript `toLowerCase()` on both sides (Unicode-aware, unlike SQLite's
 *   ASCII-only lower(); MongoDB's /i folds case per character, which differs only for rare letters such as
 *   the Greek final sigma), in a registered function, so the text is never a LIKE or regex pattern. Search
 *   fields are expected to hold strings; other values never match.
 *
 * Collection definitions live in memory: every handle, including a reader in another process, calls
 * `defineCollections` at start (it is idempotent) before querying.
 */
import type Database from 'better-sqlite3';
import type {
  CollectionDefinition,
  Checkpoint,
  Counter,
  CounterChange,
  Document,
  FindQuery,
  RangeCondition,
  ReadStore,
  Scalar,
  SearchClause,
  Write,
} from '../../ports/read-store.ts';
import { CheckpointConflictError, ReadStoreQueryError, ReadStoreUnavailableError } from '../../ports/read-store.ts';
import { openSqliteDatabase } from './sqlite-database.ts';
import { BUSY_BUDGET_MS, retryWhileBusy, sqliteCorruption, sqliteFault } from './sqlite-retry.ts';
import { StoreCorruptedError } from '../../ports/store-corrupted.ts';
import { statSync, type Stats } from 'node:fs';
import { basename } from 'node:path';
import { StatementCache, inListLength } from './sqlite-statements.ts';

const COLLECTION_NAME = /^[a-z][a-z0-9_]*$/;
const FIELD_PATH = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$/;
const CHECKPOINTS = 'checkpoints';
const GENERATIONS = 'checkpoint_generations';
const CONTAINS_CI = 'wallet_ops_contains_ci';
/**
 * A checkpoint's generation fence: the generation a rebuild's promote raised (0: never promoted) is the expected one.
 */
const GENERATION_IS = `coalesce((SELECT generation FROM ${GENERATIONS} WHERE projection = ?), 0) = ?`;

/** `"`: how a JSON string's text starts. */
const QUOTE = 0x22;
/** Most ids in one `getMany` statement (a power of two: see inListLength). */
const GET_MANY_CHUNK = 512;
/**
 * WAL pages between automatic checkpoints (SQLite's default is 1,000, about 4 MB). A page of the projections writes
 * every b-tree page it touches whole into the WAL, about 27 for one create, and mostly the same pages again for the
 * next (the checkpoints row, a party's index leaves): a checkpoint copies each distinct page once however often it
 * was written, so a longer WAL copies fewer of them per create (about 40% less checkpoint work, one fsync pair per
 * ~150 creates rather than ~37). A commit is durable once its WAL frames are, not once they are checkpointed: FULL
 * commits fsync at the commit, as before; the projections' NORMAL ones at the next FULL commit or checkpoint, so a
 * power loss between them may take a longer tail of those, which the followers replay from their checkpoints. The
 * WAL file stays at about 16 MB.
 */
const WAL_AUTOCHECKPOINT_PAGES = 4000;
/** How often one handle deletes a counter collection's expired counters (during an increment). */
const COUNTER_SWEEP_EVERY_MS = 60_000;

interface Compiled {
  sql: string;
  params: unknown[];
}

export interface SqliteReadStoreOptions {
  file: string;
  /** How long a call may wait for another process's lock before failing. Default BUSY_BUDGET_MS. */
  busyBudgetMs?: number;
  /** How often a call checks that the path still names the file opened (see run()). Default 250 ms. */
  fileCheckIntervalMs?: number;
}

export function openSqliteReadStore(options: SqliteReadStoreOptions): ReadStore {
  const busyBudgetMs = options.busyBudgetMs ?? BUSY_BUDGET_MS;
  const db = openSqliteDatabase(
    options.file,
    (setup) => {
      setup.exec(`CREATE TABLE IF NOT EXISTS ${CHECKPOINTS} (projection TEXT PRIMARY KEY, position INTEGER NOT NULL)`);
      setup.exec(
        `CREATE TABLE IF NOT EXISTS ${GENERATIONS} (projection TEXT PRIMARY KEY, generation INTEGER NOT NULL)`,
      );
    },
    busyBudgetMs,
  );
  db.pragma(`wal_autocheckpoint = ${WAL_AUTOCHECKPOINT_PAGES}`);
  db.function(CONTAINS_CI, { deterministic: true }, (value: unknown, needle: unknown) =>
    typeof value === 'string' && typeof needle === 'string' && value.toLowerCase().includes(needle) ? 1 : 0,
  );
  const closed = new AbortController();
  const opened = statSync(options.file);
  const fileCheckIntervalMs = options.fileCheckIntervalMs ?? 250;
  let fileCheckedAt = -Infinity;

  /**
   * The file this process reads must still be the one at its path. One deleted (or replaced by a restore, or by
   * `projections rebuild` run on a deleted file) is served on from the unlinked inode while everyone else uses
   * the new one, and a restart silently drops what only the old one held (docs/operations.md, "What only the
   * read store holds"). Refused as a damaged store: /health fails and the orchestrator restarts the process on
   * the file at the path, and the log says to restore the old file first if its state matters.
   */
  function assertSameFile(): void {
    const now = performance.now();
    if (now - fileCheckedAt < fileCheckIntervalMs) return;
    fileCheckedAt = now;
    let current: Stats | undefined;
    try {
      current = statSync(options.file);
    } catch {
      current = undefined;
    }
    if (current?.ino === opened.ino && current.dev === opened.dev) return;
    fileCheckedAt = -Infinity; // and every later call
    throw new StoreCorruptedError(
      basename(options.file),
      `the file was ${current ? 'replaced' : 'removed'} while this process had it open (it would serve and write ` +
        `a file no one else reads): restart the process to use the file at ${options.file}`,
    );
  }

  /**
   * Every call runs its SQLite work through here: one synchronous attempt at a time (a whole transaction or a
   * read), retried on timers while another connection holds the lock. A busy database past the budget, a full
   * disk or an I/O error is the store's problem and becomes ReadStoreUnavailableError; the caller's errors
   * (ReadStoreQueryError, CheckpointConflictError, TypeError for a bad write) keep their type. A failed
   * transaction has been rolled back by better-sqlite3 before the error reaches us.
   */
  async function run<T>(fn: () => T): Promise<T> {
    assertSameFile();
    try {
      return await retryWhileBusy(fn, { budgetMs: busyBudgetMs, signal: closed.signal });
    } catch (error) {
      const corruption = sqliteCorruption(error);
      if (corruption) throw new StoreCorruptedError(basename(options.file), corruption, { cause: error });
      const fault = sqliteFault(error);
      if (fault) throw new ReadStoreUnavailableError(`the read store is unavailable (${fault})`, { cause: error });
      throw error;
    }
  }

  const definitions = new Map<string, CollectionDefinition>();
  // Compiled once per SQL text and kept while used; bounded, since each costs native memory (sqlite-statements.ts).
  const statements = new StatementCache(db);
  const statement = (sql: string): Database.Statement => statements.get(sql);

  // A projection's commit upserts thousands of documents: their statement is found by collection name, without
  // building and hashing the SQL text each time. Emptied with `statements`.
  const upserts = new Map<string, Database.Statement>();
  function upsertStatement(collection: string): Database.Statement {
    let prepared = upserts.get(collection);
    if (!prepared) {
      const table = quote(definition(collection).name);
      prepared = statement(
        `INSERT INTO ${table} (id, doc) VALUES (?, ?) ON CONFLICT (id) DO UPDATE SET doc = excluded.doc`,
      );
      upserts.set(collection, prepared);
    }
    return prepared;
  }

  function definition(collection: string): CollectionDefinition {
    const found = definitions.get(collection);
    if (!found) throw new ReadStoreQueryError(`unknown collection ${JSON.stringify(collection)}`);
    return found;
  }

  /**
   * A write checked and its document serialized, before any SQL of its commit runs: what is left can fail only
   * in SQLite. A caller's fault (a bad write, an unknown collection) is thrown here.
   */
  function prepareWrite(write: Write): () => void {
    if (write.op === 'upsert') {
      if (typeof write.doc?.id !== 'string')
        throw new TypeError(`upsert into ${quote(definition(write.collection).name)}: the document needs a string id`);
      const upsert = upsertStatement(write.collection);
      const [id, doc] = [write.doc.id, JSON.stringify(write.doc)];
      return () => upsert.run(id, doc);
    }
    const table = quote(definition(write.collection).name);
    switch (write.op) {
      case 'patch': {
        if ('id' in write.patch && write.patch.id !== write.id)
          throw new TypeError(`patch of ${table}: cannot change an id`);
        JSON.stringify(write.patch); // what cannot be serialized throws now; the stored document always can
        return () => {
          // Merged in JS rather than with json_patch, whose RFC 7386 semantics would delete fields set to null.
          const row = statement(`SELECT doc FROM ${table} WHERE id = ?`).get(write.id) as { doc: string } | undefined;
          if (!row) return;
          const merged = { ...(JSON.parse(row.doc) as Document), ...write.patch };
          statement(`UPDATE ${table} SET doc = ? WHERE id = ?`).run(JSON.stringify(merged), write.id);
        };
      }
      case 'delete':
        return () => statement(`DELETE FROM ${table} WHERE id = ?`).run(write.id);
      default:
        throw new TypeError(`unknown write ${JSON.stringify((write as { op?: unknown }).op)}`);
    }
  }

  /** A commit with its writes prepared: the checkpoint is moved first, so a refused fence has written nothing. */
  interface PreparedCommit {
    writes: Array<() => void>;
    checkpoint: Checkpoint | undefined;
  }
  function prepareCommit(writes: Write[], checkpoint: Checkpoint | undefined): PreparedCommit {
    if (checkpoint) checkCheckpoint(checkpoint);
    return { writes: writes.map(prepareWrite), checkpoint };
  }
  function applyCommit(commit: PreparedCommit): void {
    if (commit.checkpoint) moveCheckpoint(commit.checkpoint);
    for (const write of commit.writes) write();
  }

  // IMMEDIATE takes the write lock up front, so a concurrent writer shows up as SQLITE_BUSY at BEGIN (retried by
  // run) instead of failing when a deferred read transaction tries to upgrade.
  const commitAll = db.transaction((writes: Write[], checkpoint?: Checkpoint) =>
    applyCommit(prepareCommit(writes, checkpoint)),
  );

  function checkCheckpoint({ projection, position }: Checkpoint): void {
    if (typeof projection !== 'string' || !Number.isFinite(position))
      throw new TypeError('a checkpoint needs a projection name and a finite position');
  }

  /**
   * The checkpoint moved, fenced by the expected checkpoint and generation, in one statement (a projection's page
   * commits several at once: three statements each cost more than its writes). No row changed: the fence held,
   * and the two reads below say which way, generation first.
   */
  function moveCheckpoint(checkpoint: Checkpoint): void {
    const { projection, position, expected, generation } = checkpoint;
    const generationFence = generation === undefined ? 'true' : GENERATION_IS;
    const fence = generation === undefined ? [] : [projection, generation];
    const moved =
      typeof expected === 'number'
        ? statement(
            `UPDATE ${CHECKPOINTS} SET position = ? WHERE projection = ? AND position = ? AND ${generationFence}`,
          ).run(position, projection, expected, ...fence)
        : statement(
            `INSERT INTO ${CHECKPOINTS} (projection, position) SELECT ?, ? WHERE ${generationFence} ON CONFLICT ` +
              `(projection) DO ${expected === null ? 'NOTHING' : 'UPDATE SET position = excluded.position'}`,
          ).run(projection, position, ...fence);
    if (moved.changes === 1) return;
    const actualGeneration = generationOf(projection);
    if (generation !== undefined && actualGeneration !== generation)
      throw new CheckpointConflictError(projection, generation, actualGeneration, 'generation');
    throw new CheckpointConflictError(projection, expected ?? null, checkpointOf(projection));
  }

  /**
   * Group commit: the followers of a process get each page at the same moment and commit it at about the same
   * moment; the commits asked in one turn of the event loop go in one transaction (one fsync). One refused (a
   * checkpoint conflict, a bad write) leaves the others committed without a savepoint each (SQLite would copy every
   * page a savepoint touches into its journal): a bad write is found before any SQL runs, and a checkpoint's fence
   * before its writes. Any other error fails the transaction, and each commit is then tried alone.
   */
  const pendingCommits: Array<{
    writes: Write[];
    checkpoint: Checkpoint | undefined;
    resolve(): void;
    reject(error: unknown): void;
  }> = [];
  const callersFault = (error: unknown) =>
    error instanceof CheckpointConflictError || error instanceof TypeError || error instanceof ReadStoreQueryError;
  const refused = (error: unknown) => {
    if (callersFault(error)) return { error };
    throw error;
  };
  const commitGroup = db.transaction((group: typeof pendingCommits) => {
    const prepared = group.map(({ writes, checkpoint }) => {
      try {
        return prepareCommit(writes, checkpoint);
      } catch (error) {
        return refused(error);
      }
    });
    return prepared.map((commit) => {
      if ('error' in commit) return commit;
      try {
        if (commit.checkpoint) moveCheckpoint(commit.checkpoint);
      } catch (error) {
        return refused(error); // the fence held: nothing of this commit was written
      }
      for (const write of commit.writes) write();
      return undefined;
    });
  });
  /**
   * A group of followers' commits, each with its checkpoint, needs no fsync of its own: the checkpoint commits
   * atomically with its writes, so a power loss that takes the tail of the WAL takes both, and the followers
   * replay from the checkpoint left (nothing lost, nothing applied twice). Any other commit (a webhook attempt,
   * a console secret, a counter) is fsync'd, and with it every commit before it in the WAL. This keeps the
   * projections' commits, which a create's read-your-writes waits for, off the disk's latency.
   * The mode is set before each transaction that writes (and left as it is after it: a page of the projections
   * would otherwise cost two statements more), so every write that is not a group of checkpointed commits goes
   * through `durably`.
   */
  const syncModes = {
    FULL: db.prepare('PRAGMA synchronous = FULL'),
    NORMAL: db.prepare('PRAGMA synchronous = NORMAL'),
  };
  let synchronous: keyof typeof syncModes = 'FULL';
  const setSync = (mode: keyof typeof syncModes) => {
    if (mode !== synchronous) syncModes[(synchronous = mode)].run();
  };
  const syncFor = (commits: Array<{ checkpoint: Checkpoint | undefined }>) =>
    setSync(commits.every((commit) => commit.checkpoint !== undefined) ? 'NORMAL' : 'FULL');
  const durably = <T>(transaction: () => T): T => {
    setSync('FULL');
    return transaction();
  };
  async function flushCommits(): Promise<void> {
    const group = pendingCommits.splice(0);
    try {
      const outcomes = await run(() => {
        syncFor(group);
        return commitGroup.immediate(group);
      });
      group.forEach((commit, i) => (outcomes[i] ? commit.reject(outcomes[i].error) : commit.resolve()));
    } catch (error) {
      if (group.length > 1 && !(error instanceof ReadStoreUnavailableError || error instanceof StoreCorruptedError)) {
        // Which commit the database refused is not known: each alone, so only that one fails.
        for (const commit of group)
          await run(() => {
            syncFor([commit]);
            return commitAll.immediate(commit.writes, commit.checkpoint);
          }).then(commit.resolve, commit.reject);
        return;
      }
      group.forEach((commit) => commit.reject(error));
    }
  }

  /**
   * Read, add, write in one IMMEDIATE transaction: the write lock is held from the read on, so no increment is lost.
   */
  const lastSweep = new Map<string, number>();
  const incrementOne = db.transaction((collection: string, id: string, change: CounterChange): Counter => {
    const table = quote(definition(collection).name);
    const row = statement(`SELECT doc FROM ${table} WHERE id = ?`).get(id) as { doc: string } | undefined;
    const current = row ? (JSON.parse(row.doc) as Partial<Counter>) : null;
    const live =
      current !== null &&
      typeof current.count === 'number' &&
      typeof current.expiresAt === 'number' &&
      current.expiresAt > change.now;
    const counter: Counter = live
      ? { ...(current as Counter), count: Math.max(0, current.count! + change.by) }
      : { id, count: Math.max(0, change.by), expiresAt: change.expiresAt };
    statement(`INSERT INTO ${table} (id, doc) VALUES (?, ?) ON CONFLICT (id) DO UPDATE SET doc = excluded.doc`).run(
      id,
      JSON.stringify(counter),
    );
    if (change.now - (lastSweep.get(collection) ?? -Infinity) >= COUNTER_SWEEP_EVERY_MS) {
      statement(`DELETE FROM ${table} WHERE ${fieldExpr('expiresAt')} <= ?`).run(change.now);
      lastSweep.set(collection, change.now);
    }
    return counter;
  });

  const takeOne = db.transaction((collection: string, id: string): string | undefined => {
    const table = quote(definition(collection).name);
    return (statement(`DELETE FROM ${table} WHERE id = ? RETURNING doc`).get(id) as { doc: string } | undefined)?.doc;
  });

  function checkpointOf(projection: string): number | null {
    const row = statement(`SELECT position FROM ${CHECKPOINTS} WHERE projection = ?`).get(projection);
    return row ? (row as { position: number }).position : null;
  }

  function generationOf(projection: string): number {
    const row = statement(`SELECT generation FROM ${GENERATIONS} WHERE projection = ?`).get(projection);
    return row ? (row as { generation: number }).generation : 0;
  }

  /**
   * The declared indexes: one of ours a model no longer declares (its queries changed) would cost every write of the
   * collection a b-tree more, so a start with the new definitions drops it.
   */
  function createIndexes(def: CollectionDefinition): void {
    const declared = new Set<string>();
    for (const fields of def.indexes ?? []) {
      const index = `${def.name}:${fields.join(',')}`;
      declared.add(index);
      db.exec(`CREATE INDEX IF NOT EXISTS ${quote(index)} ON ${quote(def.name)} (${fields.map(fieldExpr).join(', ')})`);
    }
    for (const index of indexesOf(def.name))
      if (index.startsWith(`${def.name}:`) && !declared.has(index)) db.exec(`DROP INDEX ${quote(index)}`);
  }

  /** A table's own indexes (not the primary key's). */
  function indexesOf(table: string): string[] {
    return statement(`SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = ? AND sql IS NOT NULL`)
      .pluck()
      .all(table) as string[];
  }

  /**
   * Each table's stored copy of its `textField`, by table: known at define (and at a promote); a table made before
   * the column existed has none, and its lists read the field out of the documents until a rebuild makes it anew.
   */
  const textColumnOf = new Map<string, string>();
  const defineAll = db.transaction((list: CollectionDefinition[]) => {
    for (const def of list) {
      const text = def.textField === undefined ? '' : `, ${textColumnDefinition(def.textField)}`;
      db.exec(`CREATE TABLE IF NOT EXISTS ${quote(def.name)} (id TEXT PRIMARY KEY, doc TEXT NOT NULL${text})`);
      createIndexes(def);
      knowTextColumn(def);
    }
  });
  function knowTextColumn(def: CollectionDefinition): void {
    const column = def.textField === undefined ? undefined : textColumn(def.textField);
    const has =
      column !== undefined &&
      statement('SELECT count(*) FROM pragma_table_xinfo(?) WHERE name = ?').pluck().get(def.name, column) === 1;
    if (has) textColumnOf.set(def.name, column);
    else textColumnOf.delete(def.name);
  }

  // The source's own indexes go with the rename under the source's names; they are dropped and the target's
  // declared indexes built inside the same transaction, so readers switch to a complete, indexed table.
  const promoteAll = db.transaction(
    (source: CollectionDefinition, target: CollectionDefinition, checkpoints: { from: string; to: string }) => {
      const sourceIndexes = indexesOf(source.name);
      db.exec(`DROP TABLE IF EXISTS ${quote(target.name)}`);
      db.exec(`ALTER TABLE ${quote(source.name)} RENAME TO ${quote(target.name)}`);
      for (const index of sourceIndexes) db.exec(`DROP INDEX ${quote(index)}`);
      createIndexes(target);
      knowTextColumn(target);
      const position = checkpointOf(checkpoints.from);
      statement(`DELETE FROM ${CHECKPOINTS} WHERE projection = ?`).run(checkpoints.from);
      if (position === null) statement(`DELETE FROM ${CHECKPOINTS} WHERE projection = ?`).run(checkpoints.to);
      else {
        statement(
          `INSERT INTO ${CHECKPOINTS} (projection, position) VALUES (?, ?) ON CONFLICT (projection) DO UPDATE ` +
            'SET position = excluded.position',
        ).run(checkpoints.to, position);
      }
      statement(
        `INSERT INTO ${GENERATIONS} (projection, generation) VALUES (?, 1) ON CONFLICT (projection) DO UPDATE ` +
          'SET generation = generation + 1',
      ).run(checkpoints.to);
      statements.clear(); // statements on the replaced table are stale
      upserts.clear();
    },
  );

  return {
    async defineCollections(list) {
      list.forEach(validateDefinition);
      await run(() => durably(() => defineAll.immediate(list)));
      for (const def of list) definitions.set(def.name, { ...def, searchFields: [...(def.searchFields ?? [])] });
    },
    async get<T extends Document = Document>(collection: string, id: string) {
      const table = quote(definition(collection).name);
      const row = (await run(() => statement(`SELECT doc FROM ${table} WHERE id = ?`).get(id))) as
        { doc: string } | undefined;
      return row ? (JSON.parse(row.doc) as T) : null;
    },
    async find<T extends Document = Document>(collection: string, query: FindQuery = {}) {
      const { sql, params } = compileFind(definition(collection), query);
      const rows = (await run(() => statement(sql).all(...params))) as Array<{ doc: string }>;
      return rows.map((row) => JSON.parse(row.doc) as T);
    },
    async findText<T extends Document = Document>(collection: string, query: FindQuery, field: string) {
      const def = definition(collection);
      const column = def.textField === field ? textColumnOf.get(def.name) : undefined;
      if (column !== undefined) {
        // The stored copy (a generated column): no document parsed. A row whose field is not a string has none.
        const stored = compileFind(def, query, `${quote(column)} AS text`);
        const texts = (await run(() => statement(stored.sql).all(...stored.params)).catch((error: unknown) => {
          // The table was made anew without it (a rebuild by an older version): read the documents from now on.
          if (!/no such column/.test(String((error as Error)?.message))) throw error;
          textColumnOf.delete(def.name);
          return undefined;
        })) as Array<{ text: string | null }> | undefined;
        if (texts?.every((row) => row.text !== null)) return texts.map((row) => row.text!);
      }
      // The field as JSON (`->`): SQLite copies a string out still escaped, and V8 unescapes it faster than SQLite's
      // json_extract does (a list of 100 reads in about two thirds of the time). A page holding a row whose field
      // is not a string is read again in one statement, the text or the whole document per row.
      const fast = compileFind(definition(collection), query, `doc -> '$.${fieldPath(field)}' AS json`);
      const values = (await run(() => statement(fast.sql).all(...fast.params))) as Array<{ json: string | null }>;
      if (values.every((row) => row.json?.charCodeAt(0) === QUOTE))
        return values.map((row) => JSON.parse(row.json!) as string);
      const { sql, params } = compileFind(definition(collection), query, textColumns(field));
      const rows = (await run(() => statement(sql).all(...params))) as Array<{
        text: string | null;
        doc: string | null;
      }>;
      return rows.map((row) => (row.doc === null ? row.text! : (JSON.parse(row.doc) as T)));
    },
    async count(collection, query = {}) {
      const def = definition(collection);
      const filter = compileFilter(def, query);
      const row = await run(() =>
        statement(`SELECT count(*) AS n FROM ${quote(def.name)}${filter.sql}`).get(...filter.params),
      );
      return (row as { n: number }).n;
    },
    commit(writes, checkpoint) {
      return new Promise<void>((resolve, reject) => {
        pendingCommits.push({ writes, checkpoint, resolve, reject });
        if (pendingCommits.length === 1) setImmediate(() => void flushCommits());
      });
    },
    async getMany<T extends Document = Document>(collection: string, ids: string[]) {
      const table = quote(definition(collection).name);
      // Bounded IN lists: SQLite caps bound parameters. Each chunk is padded to a power of two, so a batch of any
      // size reuses one of a few statements per collection (one per length would be hundreds, each held in
      // native memory). All chunks are read in one attempt, so no write of this process lands between them.
      const rows = await run(() => {
        const found: Array<{ doc: string }> = [];
        for (let i = 0; i < ids.length; i += GET_MANY_CHUNK) {
          const chunk = ids.slice(i, i + GET_MANY_CHUNK);
          const length = inListLength(chunk.length);
          const params =
            length === chunk.length ? chunk : [...chunk, ...new Array<string>(length - chunk.length).fill(chunk[0]!)];
          found.push(
            ...(statement(`SELECT doc FROM ${table} WHERE id IN (${params.map(() => '?').join(',')})`).all(
              ...params,
            ) as Array<{ doc: string }>),
          );
        }
        return found;
      });
      return rows.map((row) => JSON.parse(row.doc) as T);
    },
    async getCheckpoint(projection) {
      return run(() => checkpointOf(projection));
    },
    async getGeneration(projection) {
      return run(() => generationOf(projection));
    },
    async promote(source, target, checkpoints) {
      const from = definition(source);
      const to = definition(target);
      await run(() => durably(() => promoteAll.immediate(from, to, checkpoints)));
      definitions.delete(source);
      textColumnOf.delete(source);
    },
    async dropCollection(name) {
      if (!COLLECTION_NAME.test(name)) throw new ReadStoreQueryError(`bad collection name ${JSON.stringify(name)}`);
      await run(() => durably(() => db.exec(`DROP TABLE IF EXISTS ${quote(name)}`)));
      textColumnOf.delete(name);
      statements.clear();
      upserts.clear();
      definitions.delete(name);
    },
    async incrementCounter(collection, id, change) {
      checkCounterChange(id, change);
      return run(() => durably(() => incrementOne.immediate(collection, id, change)));
    },
    async take<T extends Document = Document>(collection: string, id: string) {
      const doc = await run(() => durably(() => takeOne.immediate(collection, id)));
      return doc === undefined ? null : (JSON.parse(doc) as T);
    },
    async close() {
      closed.abort(new ReadStoreUnavailableError('the read store is closed'));
      statements.clear();
      upserts.clear();
      if (db.open) db.close();
    },
  };
}

/** The SQL `find` runs; exported so tests can check its query plan. */
export function compileFind(def: CollectionDefinition, query: FindQuery, columns = 'doc'): Compiled {
  const filter = compileFilter(def, query);
  const order = (query.sort ?? []).map(([field, direction]) => {
    if (direction !== 'asc' && direction !== 'desc')
      throw new ReadStoreQueryError(`bad sort direction ${JSON.stringify(direction)}`);
    return `${fieldExpr(field)} ${direction.toUpperCase()}`;
  });
  // LIMIT -1 is SQLite for "no limit"; OFFSET needs a LIMIT before it. The limit is written into the SQL, and a skip
  // of 0 left out, not bound: SQLite plans with their values, so a statement with `LIMIT ? OFFSET ?` is compiled
  // again at every run. Another skip stays bound, so that paging through a collection makes no statement per page.
  const limit = query.limit === undefined ? -1 : nonNegativeInteger('limit', query.limit);
  const skip = query.skip === undefined ? 0 : nonNegativeInteger('skip', query.skip);
  const orderBy = order.length ? ` ORDER BY ${order.join(', ')}` : '';
  return {
    sql:
      `SELECT ${columns} FROM ${quote(def.name)}${filter.sql}${orderBy} LIMIT ` +
      `${limit}${skip === 0 ? '' : ' OFFSET ?'}`,
    params: skip === 0 ? filter.params : [...filter.params, skip],
  };
}

/** The WHERE clause (with its leading space) for `where` and `search`, or an empty string. */
function compileFilter(def: CollectionDefinition, query: Pick<FindQuery, 'where' | 'search' | 'range'>): Compiled {
  const parts = Object.entries(query.where ?? {}).map(([field, value]) => equals(field, value));
  for (const [field, condition] of Object.entries(query.range ?? {})) parts.push(between(field, condition));
  if (query.search) {
    const clauses = (Array.isArray(query.search) ? query.search : [query.search]).map((clause) =>
      contains(def, clause),
    );
    if (clauses.length === 0) throw new ReadStoreQueryError('search needs at least one clause');
    parts.push({ sql: `(${clauses.map((c) => c.sql).join(' OR ')})`, params: clauses.flatMap((c) => c.params) });
  }
  if (parts.length === 0) return { sql: '', params: [] };
  return { sql: ` WHERE ${parts.map((p) => p.sql).join(' AND ')}`, params: parts.flatMap((p) => p.params) };
}

function equals(field: string, value: Scalar): Compiled {
  const expr = fieldExpr(field);
  if (value === null) return { sql: `${expr} IS NULL`, params: [] };
  // json_extract returns true/false as 1/0 and objects as JSON text: the type check keeps them apart. It comes
  // after the indexed comparison and does not stop the planner from using the index.
  const type = `json_type(doc, '$.${field}')`;
  switch (typeof value) {
    case 'string':
      // json_extract gives JSON strings as TEXT and numbers as INTEGER/REAL, which never equal a TEXT
      // parameter; only an object or array (given as its JSON text) could. The type check, which parses each
      // candidate document again, is therefore kept for values that look like JSON objects or arrays only.
      return /^[[{]/.test(value)
        ? { sql: `${expr} = ? AND ${type} = 'text'`, params: [value] }
        : { sql: `${expr} = ?`, params: [value] };
    case 'number':
      if (!Number.isFinite(value)) throw new ReadStoreQueryError(`where ${field}: not a finite number`);
      return { sql: `${expr} = ? AND ${type} IN ('integer', 'real')`, params: [value] };
    case 'boolean':
      return { sql: `${expr} = ? AND ${type} = ?`, params: [value ? 1 : 0, String(value)] };
    default:
      throw new ReadStoreQueryError(`where ${field}: only strings, numbers, booleans and null are allowed`);
  }
}

const RANGE_OPERATORS = { gt: '>', gte: '>=', lt: '<', lte: '<=' } as const;

/**
 * Bounds on the indexed expression itself, so the planner can use an index range. SQLite orders
 * NULL < numbers < text: a string range gets the bound `>= ''` (when it has no lower bound) and a number
 * range `< ''` (when it has no upper bound), which keeps values of the other type and null out, as MongoDB's
 * type-bracketed comparisons do, without reading each document's JSON type.
 */
export function between(field: string, condition: RangeCondition): Compiled {
  const expr = fieldExpr(field);
  if (condition === null || typeof condition !== 'object')
    throw new ReadStoreQueryError(`range ${field}: bounds must be an object`);
  const bounds = Object.entries(condition).filter(([, value]) => value !== undefined);
  if (bounds.length === 0) throw new ReadStoreQueryError(`range ${field}: at least one bound is needed`);
  const types = new Set(bounds.map(([, value]) => typeof value));
  if (types.size !== 1 || !(types.has('string') || types.has('number')))
    throw new ReadStoreQueryError(`range ${field}: bounds must all be strings or all be numbers`);
  const parts: string[] = [];
  const params: unknown[] = [];
  for (const [name, value] of bounds) {
    const operator = RANGE_OPERATORS[name as keyof typeof RANGE_OPERATORS];
    if (!operator) throw new ReadStoreQueryError(`range ${field}: unknown bound ${JSON.stringify(name)}`);
    if (typeof value === 'number' && !Number.isFinite(value))
      throw new ReadStoreQueryError(`range ${field}: not a finite number`);
    parts.push(`${expr} ${operator} ?`);
    params.push(value);
  }
  const names = bounds.map(([name]) => name);
  if (types.has('string') && !names.some((n) => n === 'gt' || n === 'gte')) parts.push(`${expr} >= ''`);
  if (types.has('number') && !names.some((n) => n === 'lt' || n === 'lte')) parts.push(`${expr} < ''`);
  return { sql: parts.join(' AND '), params };
}

function contains(def: CollectionDefinition, search: SearchClause): Compiled {
  if (typeof search.text !== 'string') throw new ReadStoreQueryError('search text must be a string');
  if (search.fields.length === 0) throw new ReadStoreQueryError('search needs at least one field');
  for (const field of search.fields) {
    if (!def.searchFields?.includes(field)) {
      throw new ReadStoreQueryError(`${def.name}.${field} is not declared in searchFields`);
    }
  }
  const needle = search.text.toLowerCase();
  return {
    sql: `(${search.fields.map((field) => `${CONTAINS_CI}(${fieldExpr(field)}, ?)`).join(' OR ')})`,
    params: search.fields.map(() => needle),
  };
}

/** The one expression for a field, used alike by indexes and queries so the planner can match them. */
function fieldExpr(field: string): string {
  return `json_extract(doc, '$.${fieldPath(field)}')`;
}

/**
 * A field path checked for splicing into the SQL (an index cannot hold a bound parameter): the pattern admits no quote.
 */
function fieldPath(field: string): string {
  if (typeof field !== 'string' || !FIELD_PATH.test(field))
    throw new ReadStoreQueryError(`bad field path ${JSON.stringify(field)}`);
  return field;
}

/** The column holding a copy of a collection's `textField`. */
function textColumn(field: string): string {
  return `text_${field}`;
}

/**
 * A generated column, computed by SQLite at every write of the row (whichever process, and version, writes it): the
 * field when it is a string, else null.
 */
function textColumnDefinition(field: string): string {
  const path = `'$.${fieldPath(field)}'`;
  const value = `CASE WHEN json_type(doc, ${path}) = 'text' THEN doc ->> ${path} END`;
  return `${quote(textColumn(field))} TEXT GENERATED ALWAYS AS (${value}) STORED`;
}

/**
 * findText's columns: SQLite's JSON functions read the field in C (the value unescaped, as stored), and the
 * document's text is copied out only for a row whose field is not a string, which JavaScript then parses.
 */
function textColumns(field: string): string {
  const value = fieldExpr(field);
  const isText = `json_type(doc, '$.${field}') = 'text'`;
  return `CASE WHEN ${isText} THEN ${value} END AS text, CASE WHEN ${isText} THEN NULL ELSE doc END AS doc`;
}

function validateDefinition(def: CollectionDefinition): void {
  if (typeof def.name !== 'string' || !COLLECTION_NAME.test(def.name)) {
    throw new ReadStoreQueryError(`bad collection name ${JSON.stringify(def.name)}`);
  }
  if (def.name === CHECKPOINTS || def.name === GENERATIONS || def.name.startsWith('sqlite_'))
    throw new ReadStoreQueryError(`reserved collection name ${def.name}`);
  for (const fields of def.indexes ?? []) {
    if (fields.length === 0) throw new ReadStoreQueryError(`${def.name}: an index needs at least one field`);
    fields.forEach(fieldExpr);
  }
  (def.searchFields ?? []).forEach(fieldExpr);
  if (def.textField !== undefined && !/^[A-Za-z_][A-Za-z0-9_]*$/.test(def.textField))
    throw new ReadStoreQueryError(`${def.name}: the text field must be a top-level field name`);
}

function checkCounterChange(id: string, change: CounterChange): void {
  if (typeof id !== 'string') throw new TypeError('a counter needs a string id');
  for (const name of ['by', 'now', 'expiresAt'] as const) {
    if (!Number.isFinite(change?.[name])) throw new TypeError(`incrementCounter: ${name} must be a finite number`);
  }
}

function nonNegativeInteger(name: string, value: number): number {
  if (!Number.isSafeInteger(value) || value < 0)
    throw new ReadStoreQueryError(`${name} must be a non-negative integer`);
  return value;
}

/** Names are validated first; quoting keeps keywords (e.g. a collection called `order`) usable. */
function quote(identifier: string): string {
  return `"${identifier}"`;
}

/**
 * The read store port: named collections of JSON documents keyed by `id`, shaped after what MongoDB does
 * natively (equality filters, sort, skip, limit, count, case-insensitive substring search) so that the same
 * projection and query code runs on the embedded SQLite adapter and on MongoDB unchanged.
 */

export type Document = { id: string } & Record<string, unknown>;

export interface CollectionDefinition {
  name: string;
  /** Each entry is one index over these fields (dot paths), compound when several. */
  indexes?: string[][];
  /** Fields that `search` may match. */
  searchFields?: string[];
  /**
   * A top-level string field that lists read whole (`findText`): the embedded store keeps a copy in a column of its
   * own, so that a page of them is read without parsing the documents. Other stores need nothing for it.
   */
  textField?: string;
}

export type Scalar = string | number | boolean | null;

export interface SearchClause {
  text: string;
  fields: string[];
}

/**
 * Bounds on one field, all of one type (strings or numbers): strings compare by code point, numbers
 * numerically, and a value of another type (or null, or missing) is never in the range. Keyset paging over a
 * unique sort field is a range on it; so are date ranges over ISO times and amounts kept as fixed-width strings.
 */
export interface RangeCondition {
  gt?: string | number;
  gte?: string | number;
  lt?: string | number;
  lte?: string | number;
}

export interface FindQuery {
  /** Equality on fields (dot paths); every condition must hold. */
  where?: Record<string, Scalar>;
  /** Ranges on fields (dot paths); every bound must hold, together with `where` and `search`. */
  range?: Record<string, RangeCondition>;
  /**
   * Case-insensitive substring match of `text` in any of `fields` (which must be declared searchFields).
   * The text is matched literally: no pattern or operator syntax is interpreted. Several clauses match when
   * any of them does (each clause may search its own text, e.g. digits in a phone field, words in a memo).
   */
  search?: SearchClause | SearchClause[];
  /** Applied in order; ties after the last key keep no particular order, so end with a unique field. */
  sort?: Array<[field: string, direction: 'asc' | 'desc']>;
  skip?: number;
  limit?: number;
}

export type Write =
  | { op: 'upsert'; collection: string; doc: Document }
  /** Shallow merge into an existing document; a missing document is left missing. */
  | { op: 'patch'; collection: string; id: string; patch: Record<string, unknown> }
  | { op: 'delete'; collection: string; id: string };

export interface Checkpoint {
  projection: string;
  position: number;
  /**
   * When given, the commit happens only if the projection's checkpoint is still this (null: none yet);
   * otherwise nothing is written and CheckpointConflictError is thrown. It keeps a projection that was
   * rebuilt and swapped in meanwhile, or a second runner of the same projection, from writing stale data.
   */
  expected?: number | null;
  /**
   * When given, the commit also requires the projection's generation to be this: `promote` raises it, so a
   * runner that read documents of the model that was just replaced cannot write them back, even when the
   * new model's checkpoint happens to equal the old one's.
   */
  generation?: number;
}

export interface ReadStore {
  /** Creates collections and their indexes when missing; safe to call at every start. */
  defineCollections(definitions: CollectionDefinition[]): Promise<void>;
  get<T extends Document = Document>(collection: string, id: string): Promise<T | null>;
  find<T extends Document = Document>(collection: string, query?: FindQuery): Promise<T[]>;
  /**
   * What `find` finds, in its order, but as the stored text of each document's string field `field` (a dot
   * path), read without parsing the document: a read model keeps its answer already serialized, and a reader
   * sends it as it is. A document whose field is missing or not a string (one stored before the model had it)
   * comes back whole in its place, for the caller to serialize.
   */
  findText<T extends Document = Document>(
    collection: string,
    query: FindQuery,
    field: string,
  ): Promise<Array<string | T>>;
  /** Counts what `find` would return without skip and limit. */
  count(collection: string, query?: Pick<FindQuery, 'where' | 'search' | 'range'>): Promise<number>;
  /**
   * Applies the writes in order and, when given, moves the projection's checkpoint, all atomically: a crash
   * leaves either everything or nothing, so a projection neither loses nor doubles an event.
   */
  commit(writes: Write[], checkpoint?: Checkpoint): Promise<void>;
  /** The documents with these ids that exist, in no particular order. */
  getMany<T extends Document = Document>(collection: string, ids: string[]): Promise<T[]>;
  /** The last committed position of a projection, or null when it has never committed. */
  getCheckpoint(projection: string): Promise<number | null>;
  /** How many times a rebuilt model was promoted to be this projection's (0 at first). */
  getGeneration(projection: string): Promise<number>;
  /**
   * Replaces collection `target` by collection `source` (built aside, e.g. by a rebuild), gives `target` its
   * declared indexes, moves the checkpoint of `from.projection` to `to.projection`, and removes `source` and
   * the old checkpoint, and raises the generation of `to`. Readers see the old collection or the new one,
   * never a mix. `target` must be defined.
   */
  promote(source: string, target: string, checkpoints: { from: string; to: string }): Promise<void>;
  /** Removes a collection and its documents (for an abandoned rebuild); a missing one is fine. */
  dropCollection(name: string): Promise<void>;
  /**
   * Adds `change.by` (which may be negative) to the counter `id` of `collection` and returns the counter, as one
   * atomic step across every process on the store: concurrent calls each see a different count. A counter that
   * is missing or has expired (`expiresAt <= change.now`) starts afresh from `by`, expiring at `change.expiresAt`;
   * a live one keeps its expiry (a `patch` of `expiresAt` moves it). The count never goes below 0. Times are
   * epoch milliseconds from the caller's clock. Expired counters are deleted as the store goes (each handle
   * sweeps a collection at most once a minute, during an increment): declare an index on `expiresAt`.
   */
  incrementCounter(collection: string, id: string, change: CounterChange): Promise<Counter>;
  /**
   * Removes the document and returns it, as one atomic step across every process on the store: of concurrent
   * takes of one document exactly one gets it, the others get null (as for a missing document).
   */
  take<T extends Document = Document>(collection: string, id: string): Promise<T | null>;
  close(): Promise<void>;
}

/** A counter document as `incrementCounter` keeps it. */
export interface Counter {
  id: string;
  count: number;
  /** Epoch milliseconds. */
  expiresAt: number;
  [field: string]: unknown;
}

export interface CounterChange {
  by: number;
  /** The caller's time (epoch ms): a counter with `expiresAt` at or before it has expired. */
  now: number;
  /** The expiry (epoch ms) of a counter that starts afresh. */
  expiresAt: number;
}

/** The projection's checkpoint (or generation) was not the expected one: someone else moved it. */
export class CheckpointConflictError extends Error {
  readonly projection: string;
  readonly expected: number | null;
  readonly actual: number | null;
  readonly code = 'CHECKPOINT_CONFLICT';
  constructor(projection: string, expected: number | null, actual: number | null, what = 'checkpoint') {
    super(`${what} of ${projection}: expected ${String(expected)}, found ${String(actual)}`);
    this.projection = projection;
    this.expected = expected;
    this.actual = actual;
    this.name = 'CheckpointConflictError';
  }
}

/** A query named a field that the collection did not declare for that use, or a collection that is unknown. */
export class ReadStoreQueryError extends Error {
  readonly code = 'READ_STORE_QUERY';
  constructor(message: string) {
    super(message);
    this.name = 'ReadStoreQueryError';
  }
}

/**
 * The read store could not be reached or failed for a reason unrelated to the request (busy, disk full, I/O, network):
 * worth retrying.
 */
export class ReadStoreUnavailableError extends Error {
  readonly code = 'READ_STORE_UNAVAILABLE';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ReadStoreUnavailableError';
  }
}

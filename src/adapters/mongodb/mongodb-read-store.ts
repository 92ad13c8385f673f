/**
 * The ReadStore port on MongoDB, with the official driver. One MongoDB collection per read-store collection,
 * documents stored with `_id` = id; the query building is in mongodb-query.ts (pure, unit-tested).
 *
 * - defineCollections creates the collections and their declared indexes (idempotent; every process does it
 *   at start, and keeps the definitions in memory like the embedded adapter).
 * - commit runs in a transaction (so MongoDB must be a replica set; docker-compose.yml runs a one-member one):
 *   the projection's checkpoint and generation are compared, then the writes are applied as ordered bulk
 *   writes and the checkpoint moved, all or nothing. Two concurrent commits on one checkpoint collide on its
 *   document; the driver retries the loser's transaction, which then sees the new checkpoint and refuses.
 * - promote renames the rebuilt collection over the target (`renameCollection` with `dropTarget`, atomic for
 *   readers: they see the old collection or the new one), after giving it the target's declared indexes, and
 *   then moves the checkpoint. A rename cannot be part of a transaction, so collection and checkpoint do not
 *   change together; see `promote` below for the window this leaves and why it is safe.
 */
import {
  MongoClient,
  MongoError,
  MongoNetworkError,
  MongoNotConnectedError,
  MongoOperationTimeoutError,
  MongoServerClosedError,
  MongoServerError,
  MongoServerSelectionError,
  MongoStalePrimaryError,
  MongoTopologyClosedError,
  MongoWriteConcernError,
  type ClientSession,
  type Collection,
  type Db,
  type Document as MongoDocument,
  type MongoClientOptions,
  type TransactionOptions,
} from 'mongodb';
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
  CHECKPOINTS,
  type StoredDocument,
  buildFilter,
  buildFind,
  checkCollectionName,
  counterUpdate,
  fromStored,
  fromTextRow,
  indexKey,
  isDeclaredIndex,
  planWrites,
  promotedCheckpoint,
  textProjection,
  validateDefinition,
  type FindPlan,
} from './mongodb-query.ts';

export interface MongoReadStoreOptions {
  /** e.g. `mongodb://localhost:27017/?replicaSet=rs0` (MONGODB_URL). */
  url: string;
  /** Default `wallet_ops` (MONGODB_DATABASE). */
  database?: string;
}

interface CheckpointDocument {
  _id: string;
  position?: number;
  generation?: number;
}

/** MongoDB's error codes the adapter expects. */
const NAMESPACE_NOT_FOUND = 26;
const NAMESPACE_EXISTS = 48;
const ILLEGAL_OPERATION = 20;
const DUPLICATE_KEY = 11000;
/** How often one handle deletes a counter collection's expired counters (during an increment). */
const COUNTER_SWEEP_EVERY_MS = 60_000;

/**
 * Time bounds and durability (M3). The driver's defaults wait 30 s to find a primary and never time out a
 * connection that stops answering, and acknowledge writes from the primary alone; so:
 * - serverSelectionTimeoutMS 10 s: an election takes about 10 s (electionTimeoutMillis); a request that would
 *   wait longer gets a 503 and is retried, a consumer resubscribes.
 * - connectTimeoutMS 10 s: also the monitor's heartbeat socket timeout; a heartbeat that times out clears the
 *   pool and interrupts the operations in flight on it (the driver's InterruptInUseConnections), so a
 *   partitioned primary does not hold them.
 * - socketTimeoutMS 60 s: the last resort for a connection that stops answering. Index builds (defineCollections,
 *   promote) wait on one call; a promote of a very large rebuilt model may need more: raise it in MONGODB_URL.
 * - writes: w majority with wtimeoutMS 10 s. A write acknowledged by the primary alone can be rolled back by a
 *   failover, and a projection whose checkpoint was rolled back with its documents is fine, but one read back
 *   before the rollback is not; a timed-out majority wait is reported as unavailable (the write may survive).
 * - reads: readConcern majority, so nothing read (a checkpoint a runner resumes from, a counter) can be rolled
 *   back later; each read has maxTimeMS 15 s on the server. Transactions read a majority snapshot.
 * - transactions: maxCommitTimeMS 10 s, and MongoDB's own 60 s transaction lifetime (so rebuilds commit in
 *   bounded chunks, see projections/rebuild.ts).
 * Every one of these set in MONGODB_URL wins over the default here (e.g. `&serverSelectionTimeoutMS=30000`).
 */
export const MONGO_BOUNDS = {
  serverSelectionTimeoutMS: 10_000,
  connectTimeoutMS: 10_000,
  socketTimeoutMS: 60_000,
  wtimeoutMS: 10_000,
  readMaxTimeMS: 15_000,
  maxCommitTimeMS: 10_000,
} as const;

const MAJORITY = { w: 'majority', wtimeoutMS: MONGO_BOUNDS.wtimeoutMS } as const;
const TRANSACTION: TransactionOptions = {
  readConcern: { level: 'snapshot' },
  writeConcern: MAJORITY,
  readPreference: 'primary',
  maxCommitTimeMS: MONGO_BOUNDS.maxCommitTimeMS,
};
const GET_MANY_CHUNK = 1000;
/** A server-side time limit on every read and find-and-modify outside a transaction. */
const BOUNDED = { maxTimeMS: MONGO_BOUNDS.readMaxTimeMS };
const WITHOUT_ID = { projection: { _id: 0 }, ...BOUNDED };

/** The client's options: the bounds above, except those the URL sets itself. */
export function mongoClientOptions(url: string): MongoClientOptions {
  const query = url.includes('?') ? url.slice(url.indexOf('?') + 1) : '';
  const given = new Set([...new URLSearchParams(query).keys()].map((key) => key.toLowerCase()));
  const missing = (...keys: string[]) => !keys.some((key) => given.has(key.toLowerCase()));
  return {
    // An undefined value is left out, as JSON (and so the embedded adapter) leaves it out.
    ignoreUndefined: true,
    ...(missing('serverSelectionTimeoutMS') ? { serverSelectionTimeoutMS: MONGO_BOUNDS.serverSelectionTimeoutMS } : {}),
    ...(missing('connectTimeoutMS') ? { connectTimeoutMS: MONGO_BOUNDS.connectTimeoutMS } : {}),
    ...(missing('socketTimeoutMS', 'timeoutMS') ? { socketTimeoutMS: MONGO_BOUNDS.socketTimeoutMS } : {}),
    ...(missing('w', 'wtimeoutMS', 'journal') ? { writeConcern: MAJORITY } : {}),
    ...(missing('readConcernLevel') ? { readConcern: { level: 'majority' } } : {}),
  };
}

/** Opens the adapter; the driver connects on first use. */
export function openMongoReadStore(options: MongoReadStoreOptions): ReadStore {
  const client = new MongoClient(options.url, mongoClientOptions(options.url));
  return withUnavailableErrors(new MongoReadStore(client, client.db(options.database ?? 'wallet_ops')));
}

/**
 * Server error codes that say nothing about the request: the replica set is electing or shutting down, the
 * member is not (or no longer) the primary, a host cannot be reached, an operation ran out of time, a majority
 * write concern timed out (the write may or may not survive), or the majority snapshot is not there yet. The
 * driver retries some of these itself (and then labels them RetryableWriteError); without the label (a retry
 * already spent, a transaction, a write that is not retryable) they reach the adapter as they are. The list is
 * the driver's own retryable-read codes (mongodb/lib/error.ts, RETRYABLE_READ_ERROR_CODES) plus the
 * not-primary and timeout codes it handles elsewhere.
 */
const UNAVAILABLE_CODES = new Set([
  6, // HostUnreachable
  7, // HostNotFound
  50, // MaxTimeMSExpired
  64, // WriteConcernTimeout (WriteConcernFailed before 8.1)
  89, // NetworkTimeout
  91, // ShutdownInProgress
  133, // FailedToSatisfyReadPreference
  134, // ReadConcernMajorityNotAvailableYet
  189, // PrimarySteppedDown
  262, // ExceededTimeLimit
  9001, // SocketException
  10058, // LegacyNotPrimary
  10107, // NotWritablePrimary
  11600, // InterruptedAtShutdown
  11602, // InterruptedDueToReplStateChange
  13435, // NotPrimaryNoSecondaryOk
  13436, // NotPrimaryOrSecondary
]);
/** Labels that mean "try again": the driver's and the server's. */
const UNAVAILABLE_LABELS = [
  'TransientTransactionError',
  'RetryableWriteError',
  'UnknownTransactionCommitResult',
  'ResetPool',
  'PoolRequestedRetry',
];
/** What servers before 4.2 said instead of a code. */
const LEGACY_FAILOVER_MESSAGE = /not master|node is recovering|not primary/i;

/**
 * The driver's errors that mean "the server could not be reached, is electing or ran out of time": worth retrying
 * later.
 */
export function isMongoUnavailable(error: unknown): boolean {
  if (
    error instanceof MongoNetworkError ||
    error instanceof MongoServerSelectionError ||
    error instanceof MongoTopologyClosedError ||
    error instanceof MongoNotConnectedError ||
    error instanceof MongoOperationTimeoutError ||
    error instanceof MongoServerClosedError ||
    error instanceof MongoStalePrimaryError
  ) {
    return true;
  }
  if (!(error instanceof MongoError)) return false;
  if (UNAVAILABLE_LABELS.some((label) => error.hasErrorLabel(label))) return true;
  const code =
    error instanceof MongoWriteConcernError ? (error.result.writeConcernError?.code ?? error.code) : error.code;
  if (typeof code === 'number') return UNAVAILABLE_CODES.has(code);
  return error instanceof MongoServerError && LEGACY_FAILOVER_MESSAGE.test(error.message);
}

/**
 * An outage is the port's ReadStoreUnavailableError (a 503 for requests, a retry for consumers), not a raw
 * driver error (a 500). Every other error keeps its type.
 */
function withUnavailableErrors(store: ReadStore): ReadStore {
  const translate = (error: unknown): never => {
    if (isMongoUnavailable(error))
      throw new ReadStoreUnavailableError(
        `MongoDB is unavailable: ${error instanceof Error ? error.message : String(error)}`,
        { cause: error },
      );
    throw error;
  };
  return new Proxy(store, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver) as unknown;
      if (typeof value !== 'function' || property === 'close') return value;
      return (...args: unknown[]) =>
        (value as (...a: unknown[]) => Promise<unknown>).apply(target, args).catch(translate);
    },
  });
}

class MongoReadStore implements ReadStore {
  private readonly client: MongoClient;
  private readonly db: Db;
  private readonly definitions = new Map<string, CollectionDefinition>();
  private readonly checkpoints: Collection<CheckpointDocument>;
  private readonly lastSweep = new Map<string, number>();

  constructor(client: MongoClient, db: Db) {
    this.client = client;
    this.db = db;
    this.checkpoints = db.collection<CheckpointDocument>(CHECKPOINTS);
  }

  async defineCollections(list: CollectionDefinition[]): Promise<void> {
    list.forEach(validateDefinition);
    const existing = new Set((await this.db.listCollections({}, { nameOnly: true }).toArray()).map((c) => c.name));
    // Collections exist before any transaction uses them (older servers cannot create them inside one).
    for (const name of [CHECKPOINTS, ...list.map((def) => def.name)]) {
      if (!existing.has(name)) await this.createCollection(name);
      existing.add(name);
    }
    for (const def of list) {
      for (const fields of def.indexes ?? []) await this.db.collection(def.name).createIndex(indexKey(fields));
      this.definitions.set(def.name, { ...def, searchFields: [...(def.searchFields ?? [])] });
    }
  }

  async get<T extends Document = Document>(collection: string, id: string): Promise<T | null> {
    const found = await this.collection(collection).findOne({ _id: id }, WITHOUT_ID);
    return found ? fromStored<T>(found) : null;
  }

  async find<T extends Document = Document>(collection: string, query: FindQuery = {}): Promise<T[]> {
    const plan = buildFind(this.definition(collection), query);
    if (plan.empty) return [];
    return (await this.cursor(collection, plan, WITHOUT_ID.projection).toArray()).map((doc) => fromStored<T>(doc));
  }

  async findText<T extends Document = Document>(
    collection: string,
    query: FindQuery,
    field: string,
  ): Promise<Array<string | T>> {
    const plan = buildFind(this.definition(collection), query);
    const projection = textProjection(field);
    if (plan.empty) return [];
    return (await this.cursor(collection, plan, projection).toArray()).map((row) => fromTextRow<T>(row));
  }

  async count(collection: string, query: Pick<FindQuery, 'where' | 'search' | 'range'> = {}): Promise<number> {
    return this.collection(collection).countDocuments(buildFilter(this.definition(collection), query), BOUNDED);
  }

  async commit(writes: Write[], checkpoint?: Checkpoint): Promise<void> {
    // Everything is checked before the transaction starts: a bad write leaves nothing behind.
    const groups = planWrites(writes, (name) => this.definition(name));
    if (checkpoint) checkCheckpoint(checkpoint);
    if (groups.length === 0 && !checkpoint) return;
    await this.transaction(async (session) => {
      if (checkpoint) {
        const current = await this.checkpoints.findOne({ _id: checkpoint.projection }, { session });
        if (checkpoint.generation !== undefined && (current?.generation ?? 0) !== checkpoint.generation) {
          throw new CheckpointConflictError(
            checkpoint.projection,
            checkpoint.generation,
            current?.generation ?? 0,
            'generation',
          );
        }
        if (checkpoint.expected !== undefined && (current?.position ?? null) !== checkpoint.expected) {
          throw new CheckpointConflictError(checkpoint.projection, checkpoint.expected, current?.position ?? null);
        }
      }
      for (const group of groups)
        await this.db
          .collection<StoredDocument>(group.collection)
          .bulkWrite(group.operations, { session, ordered: true });
      if (checkpoint)
        await this.checkpoints.updateOne(
          { _id: checkpoint.projection },
          { $set: { position: checkpoint.position } },
          { session, upsert: true },
        );
    });
  }

  async getMany<T extends Document = Document>(collection: string, ids: string[]): Promise<T[]> {
    const target = this.collection(collection);
    const found: T[] = [];
    for (let i = 0; i < ids.length; i += GET_MANY_CHUNK) {
      const chunk = ids.slice(i, i + GET_MANY_CHUNK);
      for (const doc of await target.find({ _id: { $in: chunk } }, WITHOUT_ID).toArray())
        found.push(fromStored<T>(doc));
    }
    return found;
  }

  async getCheckpoint(projection: string): Promise<number | null> {
    return (await this.checkpoints.findOne({ _id: projection }, BOUNDED))?.position ?? null;
  }

  async getGeneration(projection: string): Promise<number> {
    return (await this.checkpoints.findOne({ _id: projection }, BOUNDED))?.generation ?? 0;
  }

  /**
   * 1. The source gets the target's declared indexes (built while nobody reads it) and loses any other.
   * 2. Fence: the target projection's checkpoint is removed. A runner of the old model commits with the
   *    checkpoint it expects, so every commit it tries from now on is refused (CheckpointConflictError) and it
   *    restarts: from the beginning, since there is no checkpoint.
   * 3. `renameCollection(source, target, {dropTarget: true})`: readers switch to the rebuilt documents at once.
   * 4. In one transaction: the target's checkpoint becomes the source's (or the lower of it and whatever a
   *    restarted runner committed in between), its generation rises, the source's checkpoint goes.
   *
   * The window is between 2 and 4. What makes it safe is that every projected document carries the position
   * of the last event applied to it and the runner skips events at or before it, so replaying is harmless and
   * only a checkpoint that is too high can lose events. A runner that restarted in the window replays from the
   * start, so whatever it writes (into the old collection, then dropped, or into the new one) is a complete
   * fold of the events up to its checkpoint; step 4 then keeps the lower checkpoint, and its generation bump
   * refuses that runner's next commit, so it restarts once more from the promoted checkpoint. A crash inside
   * the window leaves no checkpoint for the target: its runner replays the whole history, slow but correct;
   * re-run the rebuild to finish. Readers may see `/ready` report lag while the checkpoint is absent.
   * Commits that pass no expected checkpoint (none of the runners) are not fenced.
   */
  async promote(source: string, target: string, checkpoints: { from: string; to: string }): Promise<void> {
    const sourceDef = this.definition(source);
    const targetDef = this.definition(target);
    if (sourceDef.name === targetDef.name) throw new ReadStoreQueryError(`cannot promote ${source} over itself`);
    const declared = targetDef.indexes ?? [];
    const sourceCollection = this.db.collection(sourceDef.name);
    for (const fields of declared) await sourceCollection.createIndex(indexKey(fields));
    for (const index of await sourceCollection.listIndexes().toArray()) {
      if (index.name !== '_id_' && !isDeclaredIndex(index.key as Record<string, unknown>, declared))
        await sourceCollection.dropIndex(index.name as string);
    }
    // When both names are one projection, its checkpoint is the one to keep: read it before the fence.
    const sameProjection = checkpoints.from === checkpoints.to;
    const kept = sameProjection ? await this.getCheckpoint(checkpoints.from) : null;
    await this.checkpoints.updateOne({ _id: checkpoints.to }, { $unset: { position: '' } });
    await this.db.renameCollection(sourceDef.name, targetDef.name, { dropTarget: true });
    await this.transaction(async (session) => {
      const from = sameProjection
        ? kept
        : ((await this.checkpoints.findOne({ _id: checkpoints.from }, { session }))?.position ?? null);
      const window = sameProjection
        ? null
        : ((await this.checkpoints.findOne({ _id: checkpoints.to }, { session }))?.position ?? null);
      const position = promotedCheckpoint(from, window);
      await this.checkpoints.updateOne(
        { _id: checkpoints.to },
        { ...(position === null ? { $unset: { position: '' } } : { $set: { position } }), $inc: { generation: 1 } },
        { session, upsert: true },
      );
      if (!sameProjection)
        await this.checkpoints.updateOne({ _id: checkpoints.from }, { $unset: { position: '' } }, { session });
    });
    this.definitions.delete(sourceDef.name);
  }

  async dropCollection(name: string): Promise<void> {
    checkCollectionName(name);
    if (name === CHECKPOINTS) throw new ReadStoreQueryError(`reserved collection name ${name}`);
    try {
      await this.db.collection(name).drop();
    } catch (error) {
      if (!(error instanceof MongoServerError && error.code === NAMESPACE_NOT_FOUND)) throw error;
    }
    this.definitions.delete(name);
  }

  /**
   * One findOneAndUpdate with an update pipeline (mongodb-query.ts `counterUpdate`) and upsert: atomic on the
   * document, and a retryable write, so a retry after a lost answer does not count twice. Two upserts of a
   * missing counter at once can collide on `_id`; the server (4.2+) retries such an upsert itself, and the
   * adapter once more for older servers.
   */
  async incrementCounter(collection: string, id: string, change: CounterChange): Promise<Counter> {
    const update = counterUpdate(id, change);
    const target = this.collection(collection);
    if (change.now - (this.lastSweep.get(collection) ?? -Infinity) >= COUNTER_SWEEP_EVERY_MS) {
      this.lastSweep.set(collection, change.now);
      await target.deleteMany({ expiresAt: { $lte: change.now } });
    }
    for (let attempt = 0; ; attempt++) {
      try {
        const counter = await target.findOneAndUpdate({ _id: id }, update, {
          upsert: true,
          returnDocument: 'after',
          ...WITHOUT_ID,
        });
        if (!counter) throw new Error(`incrementCounter ${collection}/${id}: the upsert returned no document`);
        return fromStored<Counter>(counter);
      } catch (error) {
        if (attempt === 0 && error instanceof MongoServerError && error.code === DUPLICATE_KEY) continue;
        throw error;
      }
    }
  }

  /** findOneAndDelete: the server removes and returns the document in one step, so one caller gets it. */
  async take<T extends Document = Document>(collection: string, id: string): Promise<T | null> {
    const found = await this.collection(collection).findOneAndDelete({ _id: id }, WITHOUT_ID);
    return found ? fromStored<T>(found) : null;
  }

  async close(): Promise<void> {
    await this.client.close();
  }

  private definition(collection: string): CollectionDefinition {
    const found = this.definitions.get(collection);
    if (!found) throw new ReadStoreQueryError(`unknown collection ${JSON.stringify(collection)}`);
    return found;
  }

  private collection(collection: string): Collection<StoredDocument> {
    return this.db.collection<StoredDocument>(this.definition(collection).name);
  }

  /** The cursor of a find plan, returning what `projection` makes of each document. */
  private cursor(collection: string, plan: FindPlan, projection: MongoDocument) {
    return this.collection(collection).find(plan.filter, {
      ...BOUNDED,
      projection,
      ...(plan.sort.length > 0 ? { sort: plan.sort } : {}),
      ...(plan.skip > 0 ? { skip: plan.skip } : {}),
      ...(plan.limit === undefined ? {} : { limit: plan.limit }),
    });
  }

  private async createCollection(name: string): Promise<void> {
    try {
      await this.db.createCollection(name);
    } catch (error) {
      // Another process created it meanwhile.
      if (!(error instanceof MongoServerError && error.code === NAMESPACE_EXISTS)) throw error;
    }
  }

  /** Runs `work` in a transaction, retried by the driver on transient errors (e.g. a write conflict). */
  private async transaction(work: (session: ClientSession) => Promise<void>): Promise<void> {
    const session = this.client.startSession();
    try {
      await session.withTransaction(() => work(session), TRANSACTION);
    } catch (error) {
      if (
        error instanceof MongoServerError &&
        error.code === ILLEGAL_OPERATION &&
        /replica set|Transaction numbers/i.test(error.message)
      ) {
        throw new Error(
          'the MongoDB read store needs transactions, so a replica set (a one-member one will do; see ' +
            'docker-compose.yml)',
          { cause: error },
        );
      }
      throw error;
    } finally {
      await session.endSession();
    }
  }
}

function checkCheckpoint(checkpoint: Checkpoint): void {
  if (typeof checkpoint.projection !== 'string' || !Number.isFinite(checkpoint.position)) {
    throw new TypeError('a checkpoint needs a projection name and a finite position');
  }
}

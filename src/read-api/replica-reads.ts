import type { Document, FindQuery, ReadStore } from '../ports/read-store.ts';

/** How often a read waiting for the replica asks it again where it stands. */
const POLL_MS = 10;
/**
 * After a read gave up waiting, reads of that model take one look at the replica and else go to the primary at once,
 * for this long or until one finds the replica caught up: a paused or lagging replica does not slow every read.
 */
const BEHIND_FOR_MS = 1_000;

export interface ReplicaReadsOptions {
  /** Where the projections write, and everything else is read and written. */
  primary: ReadStore;
  /** A hot standby of the primary, opened read-only (POSTGRES_READ_URL). */
  replica: ReadStore;
  /** The projections' collections and the checkpoint of each: only those are read from the replica. */
  models: ReadonlyArray<{ name: string; collection: { name: string } }>;
  /** How long a read waits for the replica to reach the primary's checkpoint before reading the primary. */
  waitMs: number;
  /** Told where each read of a model was answered (src/metrics). */
  onRead?: (source: 'replica' | 'primary') => void;
}

/** Where the reads of projections' collections were answered from, since the start (tests, metrics). */
export interface ReplicaReadCounts {
  replica: number;
  primary: number;
}

/**
 * The read store the read API and the console read through when a read replica is configured. A read of a
 * projection's collection goes to the replica once the replica's checkpoint of that projection is at least the
 * primary's, as the primary stood when the read arrived: the checkpoint rows replicate with the documents in the
 * same transactions, so the replica then holds everything the primary's model held, and a read never answers
 * older than one the primary would have given (a read after a create of the same process waits first for the
 * create in the primary's model, src/projections/read-your-writes.ts: the next list shows it, from either server).
 * A replica that does not get there within `waitMs`, or fails, is passed over: the primary answers. Everything
 * else (writes, the other collections, checkpoints) is the primary's. The replica is never written to and no
 * consumer follows it. It sits under the queries (src/projections/*-queries.ts): they read through it.
 */
export function withReplicaReads(options: ReplicaReadsOptions): ReadStore & { counts: ReplicaReadCounts } {
  const { primary, replica } = options;
  const modelOf = new Map(options.models.map((model) => [model.collection.name, model.name]));
  const primaryCheckpoint = new Map<string, Shared<number | null>>();
  const replicaCheckpoint = new Map<string, Shared<number | null>>();
  const behindUntil = new Map<string, number>();
  const counts: ReplicaReadCounts = { replica: 0, primary: 0 };

  /** The store to read a collection from now: the replica once it has caught up with the primary's model. */
  const source = async (collection: string): Promise<ReadStore> => {
    const model = modelOf.get(collection);
    if (model === undefined) return primary;
    const arrived = performance.now();
    const target = await shared(primaryCheckpoint, model, () => primary.getCheckpoint(model)).after(arrived);
    const deadline = arrived + ((behindUntil.get(model) ?? -Infinity) > arrived ? 0 : options.waitMs);
    try {
      for (;;) {
        const reached = await shared(replicaCheckpoint, model, () => replica.getCheckpoint(model)).after(
          performance.now(),
        );
        if (target === null || (reached !== null && reached >= target)) {
          behindUntil.delete(model);
          return replica;
        }
        if (performance.now() >= deadline) break;
        await new Promise((resolve) => setTimeout(resolve, POLL_MS));
      }
    } catch {
      // A replica that cannot say where it stands (down, its tables not replicated yet) is passed over.
    }
    behindUntil.set(model, performance.now() + BEHIND_FOR_MS);
    return primary;
  };
  /** Reads the collection where `source` says; a replica that fails the read itself is passed over too. */
  const read = async <T>(collection: string, fn: (store: ReadStore) => Promise<T>): Promise<T> => {
    const store = await source(collection);
    if (store === replica) {
      try {
        const result = await fn(replica);
        counts.replica++;
        options.onRead?.('replica');
        return result;
      } catch {
        // The same read on the primary answers, or fails as it would have without a replica.
      }
    }
    if (modelOf.has(collection)) {
      counts.primary++;
      options.onRead?.('primary');
    }
    return fn(primary);
  };

  return {
    counts,
    commit: (writes, checkpoint) => primary.commit(writes, checkpoint),
    getCheckpoint: (projection) => primary.getCheckpoint(projection),
    getGeneration: (projection) => primary.getGeneration(projection),
    promote: (source, target, checkpoints) => primary.promote(source, target, checkpoints),
    dropCollection: (name) => primary.dropCollection(name),
    incrementCounter: (collection, id, change) => primary.incrementCounter(collection, id, change),
    take: <T extends Document = Document>(collection: string, id: string) => primary.take<T>(collection, id),
    async defineCollections(list) {
      await primary.defineCollections(list);
      await replica.defineCollections(list);
    },
    get: <T extends Document = Document>(collection: string, id: string) =>
      read(collection, (store) => store.get<T>(collection, id)),
    find: <T extends Document = Document>(collection: string, query?: FindQuery) =>
      read(collection, (store) => store.find<T>(collection, query)),
    findText: <T extends Document = Document>(collection: string, query: FindQuery, field: string) =>
      read(collection, (store) => store.findText<T>(collection, query, field)),
    count: (collection, query) => read(collection, (store) => store.count(collection, query)),
    getMany: <T extends Document = Document>(collection: string, ids: string[]) =>
      read(collection, (store) => store.getMany<T>(collection, ids)),
    async close() {
      await Promise.all([primary.close(), replica.close()]);
    },
  };
}

/**
 * One question in flight per model, shared by the reads that may take its answer: `after(t)` takes an answer
 * asked at or after t (a read must not take a checkpoint read before it arrived), else the next one asked.
 */
interface Shared<T> {
  after(t: number): Promise<T>;
}

function shared<T>(map: Map<string, Shared<T>>, key: string, ask: () => Promise<T>): Shared<T> {
  let entry = map.get(key);
  if (!entry) {
    let current: { at: number; answer: Promise<T> } | undefined;
    let next: Promise<T> | undefined;
    const start = () => {
      const at = performance.now();
      const answer = ask();
      current = { at, answer };
      return answer;
    };
    entry = {
      after(t) {
        if (!current) return start();
        if (current.at >= t) return current.answer;
        // A question asked before t: the next one, started once it is answered, serves every read waiting meanwhile.
        next ??= current.answer
          .catch(() => {})
          .then(() => {
            next = undefined;
            return start();
          });
        return next;
      },
    };
    map.set(key, entry);
  }
  return entry;
}

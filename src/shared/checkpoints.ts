/**
 * Where a follower's checkpoint lives and how it is committed, as values: with the handler's writes in one
 * atomic commit (exclusive), forward only among processes that share it (shared), in the handler's own state
 * (in memory), and `batched` (a batch that writes nothing commits now and then only). A checkpoint someone else
 * moved is an answer, not a failure: `commit` returns it as a conflict, and the follower resumes from theirs.
 */
import type { EventFilter, EventStore } from '../ports/event-store.ts';
import { CheckpointConflictError, type Checkpoint, type ReadStore, type Write } from '../ports/read-store.ts';

export type Conflict = { kind: 'conflict'; reason: string };
export type CommitResult = { kind: 'committed' } | Conflict;

const COMMITTED: CommitResult = { kind: 'committed' };
export const conflict = (reason: string): Conflict => ({ kind: 'conflict', reason });

/** Every event at or below a follower's checkpoint has been handled. */
export interface CheckpointPolicy {
  /** Read at the start of every session, given the stream followed: where to resume (null: from the first event). */
  load(stream: { eventStore: EventStore; filter?: EventFilter }): Promise<number | null>;
  /** Makes `position` durable, with the handler's writes when the checkpoint lives beside them. */
  commit(position: number, writes: Write[]): Promise<CommitResult>;
  /** Batched: a batch that writes nothing commits only once this many positions or ms passed since the last commit. */
  readonly every?: { positions: number; ms: number };
}

/**
 * The checkpoint of a read model with one writer: committed atomically with the model's writes, fenced by the
 * checkpoint it expects (and, for a projection, the generation a rebuild raises), so that a rebuild swapped in
 * meanwhile, or a second runner of the same model, makes this one resume from the new checkpoint instead of
 * writing stale documents. With `builtWhenEmpty` (a projection), a model with no checkpoint and none of its
 * events in the store commits the head: it is built and has nothing to show, not "never built" until its first
 * event is applied.
 */
export function exclusiveCheckpoint(
  readStore: ReadStore,
  name: string,
  options: { fencedByGeneration?: boolean; builtWhenEmpty?: boolean } = {},
): CheckpointPolicy {
  let expected: number | null = null;
  let generation: number | undefined;
  const policy: CheckpointPolicy = {
    async load({ eventStore, filter }) {
      for (;;) {
        // The generation first: a promote between the two reads then fails our first commit, never the reverse.
        if (options.fencedByGeneration) generation = await readStore.getGeneration(name);
        expected = await readStore.getCheckpoint(name);
        if (expected !== null || !options.builtWhenEmpty) return expected;
        const head = await eventStore.headPosition();
        const [first] = await eventStore.readAll({ toPosition: head, maxCount: 1, ...(filter ? { filter } : {}) });
        if (first) return null;
        // Someone else committed first (a second runner, a promote): read their checkpoint.
        if ((await policy.commit(head, [])).kind === 'committed') return head;
      }
    },
    async commit(position, writes) {
      const fence = generation === undefined ? {} : { generation };
      const result = await commitTo(readStore, writes, { projection: name, position, expected, ...fence });
      if (result.kind === 'committed') expected = position;
      return result;
    },
  };
  return policy;
}

/**
 * A checkpoint that several processes share (the executors', key revocations'): it only moves forward. Another
 * process may be further already (nothing is written) or move it at the same moment (compare-and-set, again;
 * after three lost races this commit gives way: the next one moves it). Its handlers write nothing beside it.
 */
export function sharedCheckpoint(readStore: ReadStore, name: string): CheckpointPolicy {
  // The checkpoint as this process last read or wrote it: a commit is then one compare-and-set, and the
  // checkpoint is read again only when another process moved it meanwhile (undefined: read it first).
  let known: number | null | undefined;
  return {
    async load() {
      known = await readStore.getCheckpoint(name);
      return known;
    },
    async commit(position, writes) {
      if (writes.length > 0) throw new Error(`the shared checkpoint ${name} commits no writes`);
      for (let attempt = 0; attempt < 3; attempt++) {
        known ??= await readStore.getCheckpoint(name);
        if (known !== null && known >= position) return COMMITTED;
        const expected: number | null = known;
        known = undefined; // until the commit is known to have moved it
        if ((await commitTo(readStore, [], { projection: name, position, expected })).kind === 'committed') {
          known = position;
          return COMMITTED;
        }
      }
      return COMMITTED;
    },
  };
}

/** The read store's commit, its checkpoint conflict turned into data: the one place the port's error is caught. */
async function commitTo(readStore: ReadStore, writes: Write[], checkpoint: Checkpoint): Promise<CommitResult> {
  try {
    await readStore.commit(writes, checkpoint);
    return COMMITTED;
  } catch (error) {
    if (error instanceof CheckpointConflictError) return conflict(error.message);
    throw error;
  }
}

/** A checkpoint kept by the handler's own state (the API-key directory in memory, the sealer's last seal). */
export function checkpointIn(load: () => Promise<number | null> | number | null): CheckpointPolicy {
  return { load: async () => load(), commit: async () => COMMITTED };
}

/**
 * A policy whose batches that write nothing commit only when `every.positions` or `every.ms` have passed since the
 * last commit (a replay after a restart is then harmless and short).
 */
export const batched = (policy: CheckpointPolicy, every: { positions: number; ms: number }): CheckpointPolicy => ({
  ...policy,
  every,
});

/**
 * Whether a batch's checkpoint is committed now, or held back until its time comes (a batched policy): `asked`
 * when it carries writes, its handler acted (a restart should not act again) or a caller waits for it.
 */
export function commitsNow(
  every: CheckpointPolicy['every'],
  batch: { asked: boolean; positionsSince: number; msSince: number },
): boolean {
  if (batch.asked || !every) return true;
  return batch.positionsSince >= every.positions || batch.msSince >= every.ms;
}

import type { StateSnapshotted } from '../domain/events.ts';
import { streamPrefixes, streams } from '../domain/streams.ts';
import type { AppendResult, EventStore, NewEvent, StreamAppend } from '../ports/event-store.ts';
import { foldStream, type Folded, type SnapshotFold } from './stream-fold.ts';
import { keyVolumeState, walletState } from './wallet-state.ts';

/**
 * Snapshots of the long streams a create decides on (a payer's wallet, a key's day of volume), so that the
 * first decision after a restart reads a bounded amount whatever the history: the newest snapshot, then the
 * fewer than SNAPSHOT_EVERY events after it.
 *
 * A snapshot is a StateSnapshotted event in the stream `snapshot-<stream>`, written when an append takes the
 * stream past a multiple of SNAPSHOT_EVERY events, with the state folded up to exactly that revision from the
 * previous snapshot (the events since it, usually SNAPSHOT_EVERY: O(1) per event amortized).
 * Its own stream, not the summarized one: a snapshot must not move the revision decisions expect, and every
 * writer of a wallet (creates, checkers, the executor, with `any`) may cross a multiple. Written through the
 * same store, so the hash chain, the seals and `events export` cover it; `audit verify` folds the history and
 * reports one that disagrees with it. A snapshot is a cache, never a source: one missing (a process stopped
 * before writing it) only makes a load fold from the one before.
 */
export const SNAPSHOT_EVERY = 100;

/** The streams kept with snapshots, by prefix, and how they fold. */
export const SNAPSHOTTED: ReadonlyArray<{ prefix: string } & SnapshotFold<unknown>> = [
  { prefix: streamPrefixes.wallet, ...(walletState as SnapshotFold<unknown>) },
  { prefix: streamPrefixes.keyVolume, ...(keyVolumeState as SnapshotFold<unknown>) },
];

export const SNAPSHOT_ACTOR = 'system:snapshots';

const foldOf = (stream: string) => SNAPSHOTTED.find((fold) => stream.startsWith(fold.prefix));

/** How many snapshots a load looks at: two writers may append theirs out of order; the newest revision wins. */
const LOOK_BACK = 3;

/** The newest snapshot of the stream that this fold can restore, or null. */
export async function latestSnapshot<State>(
  store: EventStore,
  stream: string,
  fold: Pick<SnapshotFold<State>, 'snapshot'>,
): Promise<Folded<State> | null> {
  const recent = await store.readStream(streams.snapshot(stream), { direction: 'backwards', maxCount: LOOK_BACK });
  let best: Folded<State> | null = null;
  for (const event of recent) {
    const data = event.data as Partial<StateSnapshotted['data']>;
    if (event.type !== 'StateSnapshotted' || data.stream !== stream || data.fold !== fold.snapshot.fold) continue;
    if (typeof data.revision !== 'number' || !Number.isSafeInteger(data.revision) || data.revision < 0) continue;
    const state = fold.snapshot.restore(data.state);
    if (state !== null && (best === null || data.revision > best.revision)) best = { state, revision: data.revision };
  }
  return best;
}

/** The revision the append's snapshot is taken at: the last multiple it crossed, or null when it crossed none. */
export function snapshotRevision(lastRevision: number, appended: number, every = SNAPSHOT_EVERY): number | null {
  const target = Math.floor((lastRevision + 1) / every) * every - 1;
  return target >= lastRevision - appended + 1 && target >= 0 ? target : null;
}

/**
 * Writes the snapshot of `stream` at `revision`, folded from the newest snapshot before it; nothing if one is as new.
 */
export async function writeSnapshot<State>(
  store: EventStore,
  stream: string,
  fold: SnapshotFold<State>,
  revision: number,
): Promise<boolean> {
  const base = await latestSnapshot(store, stream, fold);
  if (base && base.revision >= revision) return false;
  const folded = await foldStream(
    store,
    stream,
    fold.evolve,
    base ?? { state: fold.initialState(), revision: -1 },
    revision,
  );
  if (folded.revision !== revision)
    throw new Error(`cannot snapshot ${stream} at revision ${revision}: the stream ends at ${folded.revision}`);
  const data: StateSnapshotted['data'] = {
    stream,
    revision,
    fold: fold.snapshot.fold,
    state: { ...(folded.state as Record<string, string>) },
  };
  const event: NewEvent = { type: 'StateSnapshotted', data, metadata: { actor: SNAPSHOT_ACTOR } };
  await store.append(streams.snapshot(stream), [event], 'any');
  return true;
}

export interface SnapshottingEventStore extends EventStore {
  /** Resolves once every snapshot started so far is written (or has failed). */
  settled(): Promise<void>;
}

export interface SnapshotOptions {
  every?: number;
  /** Told of a snapshot that could not be written: the append it follows has committed all the same. */
  onError?: (error: unknown, stream: string) => void;
}

/**
 * The event store, writing snapshots after the appends that cross a multiple of `every` on a snapshotted
 * stream. In the background: the append's caller is answered at its commit, and a failed snapshot is only
 * reported (the next crossing writes one). Snapshots of a stream are written one at a time, in order;
 * `close` waits for those started.
 */
export function withSnapshots(store: EventStore, options: SnapshotOptions = {}): SnapshottingEventStore {
  const every = options.every ?? SNAPSHOT_EVERY;
  const running = new Map<string, Promise<void>>();
  const started = new Set<Promise<void>>();

  const after = (request: Pick<StreamAppend, 'stream' | 'events'>, result: AppendResult) => {
    const fold = foldOf(request.stream);
    const revision = fold ? snapshotRevision(result.nextExpectedRevision, request.events.length, every) : null;
    if (!fold || revision === null) return;
    const { stream } = request;
    const job = (running.get(stream) ?? Promise.resolve())
      .then(() => writeSnapshot(store, stream, fold, revision))
      .then(
        () => undefined,
        (error: unknown) => options.onError?.(error, stream),
      );
    running.set(stream, job);
    started.add(job);
    // job never rejects (its failure went to onError above), so neither does this.
    void job.finally(() => {
      started.delete(job);
      if (running.get(stream) === job) running.delete(stream);
    });
  };

  const settled = async () => {
    while (started.size > 0) await Promise.all([...started]);
  };

  return {
    async append(stream, events, expectedRevision) {
      const result = await store.append(stream, events, expectedRevision);
      after({ stream, events }, result);
      return result;
    },
    async appendMulti(requests) {
      const results = await store.appendMulti(requests);
      requests.forEach((request, i) => after(request, results[i]!));
      return results;
    },
    readStream: (stream, readOptions) => store.readStream(stream, readOptions),
    readAll: (readOptions) => store.readAll(readOptions),
    headPosition: () => store.headPosition(),
    subscribeToAll: (subscribeOptions) => store.subscribeToAll(subscribeOptions),
    settled,
    async close() {
      await settled();
      await store.close();
    },
  };
}

import type { EventStore } from '../ports/event-store.ts';
import type { ReadStore } from '../ports/read-store.ts';
import type { ProjectedEvent, Projection } from './projection.ts';
import { checkpointOf, foldEvents, newFold, takeWrites } from './projection-runner.ts';

export interface RebuildProgress {
  projection: string;
  position: number;
  head: number;
  events: number;
}

export interface RebuildResult {
  projection: string;
  events: number;
  seconds: number;
  eventsPerSecond: number;
  position: number;
}

const SHADOW_SUFFIX = '__rebuild';
const PAGE_SIZE = 20_000;
/**
 * Events read between two commits of the shadows: a document touched many times in that span is written once,
 * and one that is still held in memory is not read back (bench:rebuild). The commits only record progress: a
 * rebuild always starts again from position 0, and nothing is promoted before the last one.
 */
const COMMIT_EVERY = 100_000;
/**
 * Most writes in one commit of a rebuild: a span's writes go in chunks of this size, each its own transaction,
 * because MongoDB aborts any transaction older than 60 s (and a transaction over many thousands of documents
 * approaches it). The shadow is read by no one until the promote, so committing it in pieces is safe; every
 * piece is fenced by the shadow checkpoint (expected = where it stands), and only the span's last piece moves it.
 * On the embedded store a commit of 1,000 documents costs about one fsync, a small price on a rebuild.
 */
export const REBUILD_WRITES_PER_COMMIT = 1_000;

/**
 * Rebuilds read models from the whole history while the old ones keep serving: the events are replayed
 * from position 0 into shadow collections with their own checkpoints, caught up to the head, then each is
 * swapped in atomically with its checkpoint (ReadStore.promote). Readers see an old model or its new one,
 * never a half-built one; a live runner of a projection notices the new generation and carries on from
 * its checkpoint. Several projections are rebuilt in one pass over the history: each page of events is read
 * once and given to every projection that wants some of it.
 */
export async function rebuildProjections(
  deps: { eventStore: EventStore; readStore: ReadStore },
  projections: Projection[],
  onProgress: (progress: RebuildProgress) => void = () => {},
): Promise<RebuildResult[]> {
  const started = performance.now();
  const targets = projections.map((projection) => ({
    projection,
    shadow: { ...projection.collection, name: `${projection.collection.name}${SHADOW_SUFFIX}`, indexes: [] },
    checkpoint: shadowCheckpoint(projection.name),
    types: new Set(projection.eventTypes),
    position: 0,
    /** The last event folded in, committed or not. */
    folded: 0,
    events: 0,
    fold: newFold(),
  }));
  type Target = (typeof targets)[number];
  const commit = async (target: Target) => {
    if (target.folded === target.position) return;
    const { docs, dirty } = target.fold;
    const written = new Map([...dirty].map((id) => [id, docs.get(id) ?? null]));
    const writes = takeWrites(target.fold, target.shadow.name);
    const fence = { checkpoint: target.checkpoint, expected: target.position };
    let start = 0;
    for (; writes.length - start > REBUILD_WRITES_PER_COMMIT; start += REBUILD_WRITES_PER_COMMIT) {
      await deps.readStore.commit(
        writes.slice(start, start + REBUILD_WRITES_PER_COMMIT),
        checkpointOf(fence, target.position),
      );
    }
    await deps.readStore.commit(writes.slice(start), checkpointOf(fence, target.folded));
    target.position = target.folded;
    // What was just written stays in memory (it is what the next events most likely touch); the rest is read
    // back if needed, so memory holds about one span of documents whatever the size of the history.
    target.fold = {
      docs: written,
      dirty: new Set(),
      stored: new Set([...written.keys()].filter((id) => written.get(id))),
    };
  };
  for (const target of targets) {
    // A shadow left by an interrupted rebuild is discarded: a rebuild always starts from position 0.
    await deps.readStore.dropCollection(target.shadow.name);
    await deps.readStore.commit([], { projection: target.checkpoint, position: 0 });
    await deps.readStore.defineCollections([target.shadow, target.projection.collection]);
  }

  const filter = { eventTypes: [...new Set(projections.flatMap((projection) => projection.eventTypes))] };
  const routes = new Map(
    filter.eventTypes.map((type) => [type, targets.flatMap((target, i) => (target.types.has(type) ? [i] : []))]),
  );
  const label = projections.map((projection) => projection.name).join(', ');
  let read = 0;
  let events = 0;
  let uncommitted = 0;
  for (let round = 0; ; round++) {
    const head = await deps.eventStore.headPosition();
    let caughtUp = false;
    while (!caughtUp) {
      const page = await deps.eventStore.readAll({
        fromPosition: read + 1,
        toPosition: head,
        maxCount: PAGE_SIZE,
        filter,
      });
      // Each event is handed to the projections of its type in one pass over the page.
      const pages: ProjectedEvent[][] = targets.map(() => []);
      for (const event of page) for (const i of routes.get(event.type) ?? []) pages[i]!.push(event);
      for (const [i, target] of targets.entries()) {
        const wanted = pages[i]!;
        if (wanted.length === 0) continue;
        await foldEvents(deps.readStore, target.projection, wanted, target.shadow.name, target.fold);
        target.folded = wanted.at(-1)!.position;
        target.events += wanted.length;
      }
      read = page.at(-1)?.position ?? read;
      events += page.length;
      uncommitted += page.length;
      caughtUp = page.length < PAGE_SIZE;
      if (caughtUp || uncommitted >= COMMIT_EVERY) {
        for (const target of targets) await commit(target);
        uncommitted = 0;
      }
      onProgress({ projection: label, position: read, head, events });
    }
    // Events appended during the replay are taken too; what arrives after the swap is the live runners'.
    if ((await deps.eventStore.headPosition()) === head || round >= 3) break;
  }
  const seconds = (performance.now() - started) / 1000;
  for (const target of targets) {
    await deps.readStore.promote(target.shadow.name, target.projection.collection.name, {
      from: target.checkpoint,
      to: target.projection.name,
    });
  }
  return targets.map((target) => ({
    projection: target.projection.name,
    events: target.events,
    seconds,
    eventsPerSecond: target.events / Math.max(seconds, 1e-9),
    position: target.position,
  }));
}

/** The checkpoint of a projection's shadow: present from the start of its rebuild until the promote removes it. */
const shadowCheckpoint = (projection: string) => `${projection}${SHADOW_SUFFIX}`;

/**
 * The rebuilds under way, seen from any process: a shadow checkpoint exists from the moment a rebuild starts
 * (at position 0) until its promote removes it, and moves with every page replayed. So a server can report
 * the progress of a rebuild that the CLI runs in another process (the metrics read this at scrape time). A
 * rebuild that was interrupted leaves its shadow checkpoint behind and shows as under way, not moving, until
 * it is run again.
 */
export async function rebuildsInProgress(
  deps: { eventStore: EventStore; readStore: ReadStore },
  projections: readonly string[],
): Promise<Array<{ projection: string; position: number; head: number }>> {
  const positions = await Promise.all(
    projections.map((projection) => deps.readStore.getCheckpoint(shadowCheckpoint(projection))),
  );
  if (positions.every((position) => position === null)) return [];
  const head = await deps.eventStore.headPosition();
  return projections.flatMap((projection, i) =>
    positions[i] === null || positions[i] === undefined ? [] : [{ projection, position: positions[i]!, head }],
  );
}

/** Rebuilds one read model (see rebuildProjections). */
export async function rebuildProjection(
  deps: { eventStore: EventStore; readStore: ReadStore },
  projection: Projection,
  onProgress?: (progress: RebuildProgress) => void,
): Promise<RebuildResult> {
  const [result] = await rebuildProjections(deps, [projection], onProgress);
  return result!;
}

export interface ProjectionStatus {
  projection: string;
  position: number | null;
  head: number;
  /** Events of interest to the projection after its checkpoint, counted up to `cap`. */
  lagEvents: number;
  /** Age in seconds of the oldest of those events: how far behind in time the projection is (0 when caught up). */
  lagSeconds: number;
}

/**
 * A checkpointed follower of the history: a projection, or the executor (whose checkpoint passes only settled
 * approvals).
 */
export interface Checkpointed {
  name: string;
  eventTypes: readonly string[];
}

/** Where each projection (or other checkpointed follower) stands against the head of the store. */
export async function projectionStatus(
  deps: { eventStore: EventStore; readStore: ReadStore },
  projections: Checkpointed[],
  cap = 1000,
  now = new Date(),
): Promise<ProjectionStatus[]> {
  const head = await deps.eventStore.headPosition();
  return Promise.all(
    projections.map(async (projection) => {
      const position = await deps.readStore.getCheckpoint(projection.name);
      const pending = await deps.eventStore.readAll({
        fromPosition: (position ?? 0) + 1,
        toPosition: head,
        maxCount: cap,
        filter: { eventTypes: [...projection.eventTypes] },
      });
      const oldest = pending[0];
      const lagSeconds = oldest
        ? Math.max(0, Math.round((now.getTime() - Date.parse(oldest.createdAt)) / 100) / 10)
        : 0;
      return { projection: projection.name, position, head, lagEvents: pending.length, lagSeconds };
    }),
  );
}

import type { EventStore } from '../ports/event-store.ts';
import type { ReadStore } from '../ports/read-store.ts';
import type { Projection } from './projection.ts';
import { applyBatch } from './projection-runner.ts';

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
// Large pages: a document touched many times in a page is written once (bench:rebuild).
const PAGE_SIZE = 20_000;

/**
 * Rebuilds one read model from the whole history while the old one keeps serving: the events are replayed
 * from position 0 into a shadow collection with its own checkpoint, caught up to the head, then swapped in
 * atomically with its checkpoint (ReadStore.promote). Readers see the old model or the new one, never a
 * half-built one; a live runner of the projection notices the new checkpoint and carries on from there.
 */
export async function rebuildProjection(
  deps: { eventStore: EventStore; readStore: ReadStore },
  projection: Projection,
  onProgress: (progress: RebuildProgress) => void = () => {},
): Promise<RebuildResult> {
  const started = performance.now();
  const shadow = { ...projection.collection, name: `${projection.collection.name}${SHADOW_SUFFIX}`, indexes: [] };
  const shadowCheckpoint = `${projection.name}${SHADOW_SUFFIX}`;
  // A shadow left by an interrupted rebuild is discarded: a rebuild always starts from position 0.
  await deps.readStore.dropCollection(shadow.name);
  await deps.readStore.commit([], { projection: shadowCheckpoint, position: 0 });
  await deps.readStore.defineCollections([shadow, projection.collection]);

  const filter = { eventTypes: [...projection.eventTypes] };
  let position = 0;
  let events = 0;
  for (let round = 0; ; round++) {
    const head = await deps.eventStore.headPosition();
    let caughtUp = false;
    while (!caughtUp) {
      const page = await deps.eventStore.readAll({ fromPosition: position + 1, toPosition: head, maxCount: PAGE_SIZE, filter });
      if (page.length > 0) {
        position = await applyBatch(deps.readStore, projection, page, { collection: shadow.name, checkpoint: shadowCheckpoint, expected: position });
        events += page.length;
      }
      caughtUp = page.length < PAGE_SIZE;
      onProgress({ projection: projection.name, position, head, events });
    }
    // Events appended during the replay are taken too; what arrives after the swap is the live runner's.
    if ((await deps.eventStore.headPosition()) === head || round >= 3) break;
  }
  await deps.readStore.promote(shadow.name, projection.collection.name, { from: shadowCheckpoint, to: projection.name });
  const seconds = (performance.now() - started) / 1000;
  return { projection: projection.name, events, seconds, eventsPerSecond: events / Math.max(seconds, 1e-9), position };
}

export interface ProjectionStatus {
  projection: string;
  position: number | null;
  head: number;
  /** Events of interest to the projection after its checkpoint, counted up to `cap`. */
  lagEvents: number;
}

/** Where each projection stands against the head of the store. */
export async function projectionStatus(deps: { eventStore: EventStore; readStore: ReadStore }, projections: Projection[], cap = 1000): Promise<ProjectionStatus[]> {
  const head = await deps.eventStore.headPosition();
  return Promise.all(
    projections.map(async (projection) => {
      const position = await deps.readStore.getCheckpoint(projection.name);
      const pending = await deps.eventStore.readAll({ fromPosition: (position ?? 0) + 1, toPosition: head, maxCount: cap, filter: { eventTypes: [...projection.eventTypes] } });
      return { projection: projection.name, position, head, lagEvents: pending.length };
    }),
  );
}

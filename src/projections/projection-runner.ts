import type { EventStore, RecordedEvent } from '../ports/event-store.ts';
import type { Document, ReadStore, Write } from '../ports/read-store.ts';
import type { Positioned, Projection, ProjectedEvent } from './projection.ts';
import { foldInMemory } from './fold.ts';
import {
  exclusiveCheckpoint,
  Follower,
  type ConsumerLogger,
  type SupervisedConsumer,
  type Supervision,
} from '../shared/follower.ts';

type Doc = Document & Positioned;

/**
 * A projection's documents held in memory while events are folded into them: every document read or changed
 * (null for one known to be absent), and the ids changed since the last commit.
 */
export interface DocumentFold {
  docs: Map<string, Doc | null>;
  dirty: Set<string>;
  /** The ids among docs that the collection holds: a document made and removed again is never written. */
  stored: Set<string>;
}

export const newFold = (): DocumentFold => ({ docs: new Map(), dirty: new Set(), stored: new Set() });

/**
 * Folds events (in position order) into the fold's documents: those it does not hold yet are read from the
 * collection first (one getMany). A document that has already seen an event's position ignores it, so a
 * replayed event changes nothing. Several events on one document are folded in memory; nothing is written.
 */
export async function foldEvents(
  readStore: ReadStore,
  projection: Projection,
  events: ProjectedEvent[],
  collection: string,
  fold: DocumentFold,
): Promise<void> {
  const { docs, dirty } = fold;
  const missing = new Set<string>();
  for (const event of events) for (const id of projection.documentIds(event)) if (!docs.has(id)) missing.add(id);
  if (missing.size > 0) {
    for (const id of missing) docs.set(id, null);
    for (const doc of await readStore.getMany<Doc>(collection, [...missing])) {
      docs.set(doc.id, doc);
      fold.stored.add(doc.id);
    }
  }
  foldInMemory(projection as Projection<Doc>, events, docs, dirty);
}

/** The writes of what the fold changed since its last commit (and forgets them as changed). */
export function takeWrites(fold: DocumentFold, collection: string): Write[] {
  const writes: Write[] = [];
  for (const id of fold.dirty) {
    const doc = fold.docs.get(id);
    if (doc) {
      writes.push({ op: 'upsert', collection, doc });
      fold.stored.add(id);
    } else if (fold.stored.delete(id)) {
      writes.push({ op: 'delete', collection, id });
    }
  }
  fold.dirty.clear();
  return writes;
}

/**
 * Applies a batch of events (in position order) to a projection's documents and commits the changed
 * documents with the new checkpoint in one atomic commit. A document that has already seen an event's
 * position ignores it, so a replayed batch changes nothing. Several events on one document in a batch are
 * folded in memory and written once.
 */
export async function applyBatch(
  readStore: ReadStore,
  projection: Projection,
  events: ProjectedEvent[],
  target: { collection: string; checkpoint: string; expected?: number | null; generation?: number },
): Promise<number> {
  const last = events.at(-1);
  if (!last) return target.expected ?? 0;
  const fold = newFold();
  await foldEvents(readStore, projection, events, target.collection, fold);
  await readStore.commit(takeWrites(fold, target.collection), checkpointOf(target, last.position));
  return last.position;
}

export function checkpointOf(
  target: { checkpoint: string; expected?: number | null; generation?: number },
  position: number,
) {
  return {
    projection: target.checkpoint,
    position,
    ...(target.expected === undefined ? {} : { expected: target.expected }),
    ...(target.generation === undefined ? {} : { generation: target.generation }),
  };
}

export interface RunnerOptions {
  eventStore: EventStore;
  readStore: ReadStore;
  projection: Projection;
  /** Most events per commit. */
  batchSize?: number;
  logger: ConsumerLogger;
  /** Supervisor settings (tests shorten the backoff). */
  supervision?: Supervision;
}

/**
 * Keeps one projection current: a follower of the projection's event types whose handler folds each batch into
 * the documents it touches and returns their writes, committed with the checkpoint the batch reached. The
 * checkpoint is exclusive and fenced by the projection's generation, so when a rebuild swaps in a new model (and
 * its checkpoint) the runner notices at its next commit and resumes from there.
 */
export class ProjectionRunner {
  private readonly follower: Follower;

  constructor(options: RunnerOptions) {
    const { eventStore, readStore, projection } = options;
    this.follower = new Follower({
      name: `projection:${projection.name}`,
      eventStore,
      filter: { eventTypes: [...projection.eventTypes] },
      checkpoint: exclusiveCheckpoint(readStore, projection.name, { fencedByGeneration: true }),
      // Read freshness tells a model never built (no checkpoint) from one with nothing to show yet.
      checkpointEmptyHistory: true,
      batchSize: options.batchSize ?? 1000,
      logger: options.logger,
      ...(options.supervision ? { supervision: options.supervision } : {}),
      handle: async (batch) => {
        const fold = newFold();
        await foldEvents(readStore, projection, batch.map(projected), projection.collection.name, fold);
        return takeWrites(fold, projection.collection.name);
      },
    });
  }

  get consumer(): SupervisedConsumer {
    return this.follower.consumer;
  }

  /** True once this runner has committed its documents up to `position`; false after `timeoutMs`. */
  untilCommitted(position: number, timeoutMs: number): Promise<boolean> {
    return this.follower.untilCommitted(position, timeoutMs);
  }

  start(): void {
    this.follower.start();
  }

  stop(): Promise<void> {
    return this.follower.stop();
  }
}

const projected = (event: RecordedEvent): ProjectedEvent => ({
  type: event.type,
  data: event.data,
  position: event.position,
  createdAt: event.createdAt,
});

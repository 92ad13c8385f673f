import type { EventStore, RecordedEvent } from '../ports/event-store.ts';
import { CheckpointConflictError, type Document, type ReadStore, type Write } from '../ports/read-store.ts';
import type { Positioned, Projection, ProjectedEvent } from './projection.ts';
import { foldInMemory } from './fold.ts';
import { SupervisedConsumer, type ConsumerLogger, type SessionContext, type SupervisedConsumerOptions } from '../shared/supervised-consumer.ts';

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
export async function foldEvents(readStore: ReadStore, projection: Projection, events: ProjectedEvent[], collection: string, fold: DocumentFold): Promise<void> {
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

export function checkpointOf(target: { checkpoint: string; expected?: number | null; generation?: number }, position: number) {
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
  supervision?: Pick<SupervisedConsumerOptions, 'baseDelayMs' | 'maxDelayMs' | 'stableAfterMs'>;
}

/**
 * Keeps one projection current: a supervised subscription from its checkpoint, events taken in batches of
 * whatever has arrived, each batch committed with the checkpoint it reached. The checkpoint is compared on
 * every commit, so when a rebuild swaps in a new model (and its checkpoint) the runner notices and resumes
 * from there. Any other failure (a store outage) ends the session; the supervisor resubscribes from the last
 * committed checkpoint.
 */
export class ProjectionRunner {
  private checkpoint: number | null = null;
  readonly consumer: SupervisedConsumer;

  constructor(private readonly options: RunnerOptions) {
    this.consumer = new SupervisedConsumer({ name: `projection:${options.projection.name}`, logger: options.logger, ...options.supervision, session: (context) => this.session(context) });
  }

  get position(): number | null {
    return this.checkpoint;
  }

  start(): void {
    this.consumer.start();
  }

  stop(): Promise<void> {
    return this.consumer.stop();
  }

  private async session(context: SessionContext): Promise<void> {
    const { eventStore, readStore, projection } = this.options;
    while (!context.stopping()) {
      // The generation first: a promote between the two reads then fails our first commit, never the reverse.
      // Outside the try below on purpose: a store error here (a MongoDB outage) ends the session like any other,
      // and the supervisor retries it with backoff (test/faults/read-store-outage.test.ts).
      const generation = await readStore.getGeneration(projection.name);
      this.checkpoint = await readStore.getCheckpoint(projection.name);
      if (this.checkpoint !== null) context.progress(this.checkpoint);
      const subscription = context.own(eventStore.subscribeToAll({ from: this.checkpoint ?? 'start', filter: { eventTypes: [...projection.eventTypes] } }));
      try {
        for await (const batch of batches(subscription, this.options.batchSize ?? 1000)) {
          this.checkpoint = await applyBatch(readStore, projection, batch.map(projected), {
            collection: projection.collection.name,
            checkpoint: projection.name,
            expected: this.checkpoint,
            generation,
          });
          context.progress(this.checkpoint);
        }
      } catch (error) {
        if (!(error instanceof CheckpointConflictError)) throw error;
        // A rebuild was swapped in: resume from its checkpoint.
      } finally {
        await subscription.stop();
      }
    }
  }
}

const projected = (event: RecordedEvent): ProjectedEvent => ({ type: event.type, data: event.data, position: event.position, createdAt: event.createdAt });

/**
 * Groups a subscription's events into batches of what is already available: the first event is awaited,
 * then more are taken as long as they arrive without yielding to the event loop. When the subscription fails
 * in the middle of a batch, the events it did deliver are yielded first and the failure comes at the next
 * pull: a consumer whose subscription keeps breaking still commits what it read, and makes progress.
 */
export async function* batches(source: AsyncIterable<RecordedEvent>, maxSize: number): AsyncGenerator<RecordedEvent[]> {
  const iterator = source[Symbol.asyncIterator]();
  const idle = Symbol('idle');
  let pending = iterator.next();
  for (;;) {
    const first = await pending;
    if (first.done) return;
    const batch = [first.value];
    pending = iterator.next();
    while (batch.length < maxSize) {
      let next: IteratorResult<RecordedEvent> | typeof idle;
      try {
        next = await Promise.race([pending, new Promise<typeof idle>((resolve) => setImmediate(() => resolve(idle)))]);
      } catch (error) {
        yield batch;
        throw error;
      }
      if (next === idle) break;
      if (next.done) {
        yield batch;
        return;
      }
      batch.push(next.value);
      pending = iterator.next();
    }
    yield batch;
  }
}

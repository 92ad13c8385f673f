import type { CollectionDefinition, Document } from '../ports/read-store.ts';

/** What a projection sees of a stored event. */
export interface ProjectedEvent {
  type: string;
  data: unknown;
  position: number;
  createdAt: string;
}

/**
 * One read model: a collection, the event types that feed it, and a pure evolve per document. The runner
 * (projection-runner.ts) does the I/O: it reads the documents an event touches, applies `evolve`, stamps the
 * event's position on what it writes, and skips an event whose position a document has already seen, so
 * that replaying an event, or a batch from an older checkpoint, changes nothing.
 */
export interface Projection<Doc extends Document = Document> {
  /** Checkpoint name; also the stable name ops use (`projections rebuild --only NAME`). */
  name: string;
  collection: CollectionDefinition;
  /** Only these event types are read for this projection. */
  eventTypes: readonly string[];
  /** Ids of the documents an event may change (often one; none for an event of no interest). */
  documentIds(event: ProjectedEvent): string[];
  /** The document after the event, or null for no document. Pure: no I/O, no clock. */
  evolve(doc: Doc | null, event: ProjectedEvent, id: string): Doc | null;
}

/** Every stored document carries the position of the last event applied to it. */
export interface Positioned {
  position: number;
}

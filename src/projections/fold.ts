import type { Document } from '../ports/read-store.ts';
import type { Positioned, ProjectedEvent, Projection } from './projection.ts';

/**
 * Folds events (in position order) into a projection's documents in memory, exactly as its runner stores
 * them: events of other types are ignored; a document given at a position ignores the events up to it, and
 * an event it holds already, so a replay changes nothing; each document evolve returns carries its id and the event's
 * position; null is no document. `docs` is folded in place (the runner passes what it read from the collection; an id
 * absent from it is a document not made yet), and the ids that changed are added to `changed`.
 *
 * The one fold of the service: the runner and the rebuild, the webhook messages (an operation as the API shows
 * it at that event) and the operator's view of webhook endpoints without a server all use it, so they agree.
 */
export function foldInMemory<Doc extends Document & Positioned>(
  projection: Projection<Doc>,
  events: Iterable<ProjectedEvent>,
  docs: Map<string, Doc | null> = new Map(),
  changed: Set<string> = new Set(),
): Map<string, Doc | null> {
  const types = new Set(projection.eventTypes);
  // The positions the documents had already seen when this fold began (the store's, or an earlier fold's).
  const seen = new Map<string, number>();
  for (const event of events) {
    if (!types.has(event.type)) continue;
    for (const id of projection.documentIds(event)) {
      const doc = docs.get(id) ?? null;
      if (!seen.has(id)) seen.set(id, doc?.position ?? -Infinity);
      // Seen: up to the position it came with, or the very event just applied (a duplicate in the batch).
      if (event.position <= seen.get(id)! || event.position === doc?.position) continue;
      const next = projection.evolve(doc, event, id);
      if (next === null && doc === null) continue;
      // evolve returns a new document (never changes its input), so one that already says so is kept as is.
      docs.set(
        id,
        next === null
          ? null
          : next.id === id && next.position === event.position
            ? next
            : { ...next, id, position: event.position },
      );
      changed.add(id);
    }
  }
  return docs;
}

import type { OperationEvent } from '../domain/events.ts';
import type { CollectionDefinition } from '../ports/read-store.ts';
import type { ProjectedEvent, Projection } from './projection.ts';

/**
 * Operations created with an API key that no checker has decided on yet, one document each, removed when the
 * operation is approved or rejected. The key-revocation consumer reads it to find a revoked key's pending
 * operations without replaying the history, and, on its periodic sweep, those of keys that have expired.
 *
 * `ApiKeyRevoked` (and `ApiKeyPreviousSecretEnded`, a departure's revocation of one secret) are among its event
 * types although they change no document: the projection's checkpoint then passes every revocation, so a reader that
 * sees the checkpoint at or past a revocation knows that every operation requested before it is here (unless already
 * decided).
 */
export type PendingOperationDoc = {
  /** The operation id. */
  id: string;
  keyID: string;
  createdAt: string;
  /** Position of the OperationRequested event. */
  requestPosition: number;
  position: number;
};

export const PENDING_OPERATIONS_PROJECTION = 'pending-operations';
export const PENDING_OPERATIONS_COLLECTION: CollectionDefinition = {
  name: 'pending_operations',
  indexes: [['keyID', 'requestPosition']],
};

const OPERATION_TYPES = ['OperationRequested', 'OperationApproved', 'OperationRejected'] as const;
const EVENT_TYPES = [...OPERATION_TYPES, 'ApiKeyRevoked', 'ApiKeyPreviousSecretEnded'] as const;
type PendingEvent = Extract<OperationEvent, { type: (typeof OPERATION_TYPES)[number] }>;

const isOperationEvent = (event: ProjectedEvent): event is ProjectedEvent & PendingEvent =>
  (OPERATION_TYPES as readonly string[]).includes(event.type);

export function pendingOperationsProjection(): Projection<PendingOperationDoc> {
  return {
    name: PENDING_OPERATIONS_PROJECTION,
    collection: PENDING_OPERATIONS_COLLECTION,
    eventTypes: EVENT_TYPES,
    documentIds: (event) => (isOperationEvent(event) ? [event.data.operationID] : []),
    evolve(doc, event, id) {
      if (!isOperationEvent(event)) return doc;
      switch (event.type) {
        case 'OperationRequested':
          // Operations of other channels have no key (and are approved in the same append).
          return event.data.keyID === null
            ? null
            : {
                id,
                keyID: event.data.keyID,
                createdAt: event.data.createdAt,
                requestPosition: event.position,
                position: event.position,
              };
        case 'OperationApproved':
        case 'OperationRejected':
          return null; // decided: off the list
      }
    },
  };
}

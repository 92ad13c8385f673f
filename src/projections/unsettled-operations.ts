import type { OperationEvent } from '../domain/events.ts';
import type { CollectionDefinition } from '../ports/read-store.ts';
import type { ProjectedEvent, Projection } from './projection.ts';

/**
 * The executor's work list: every approved operation that has no outcome yet, one document each, removed when
 * it completes or fails. The executor's reconciliation sweep reads it to find approvals that no executor is
 * carrying out, without replaying the history.
 */
export type UnsettledOperationDoc = {
  /** The operation id. */
  id: string;
  approvedAt: string;
  /** Position of the OperationApproved event. */
  approvalPosition: number;
  position: number;
};

export const UNSETTLED_OPERATIONS_COLLECTION: CollectionDefinition = {
  name: 'unsettled_operations',
  indexes: [['approvalPosition']],
};

const EVENT_TYPES = ['OperationApproved', 'OperationCompleted', 'OperationFailed'] as const;
type UnsettledEvent = Extract<OperationEvent, { type: (typeof EVENT_TYPES)[number] }>;

const isUnsettledEvent = (event: ProjectedEvent): event is ProjectedEvent & UnsettledEvent =>
  (EVENT_TYPES as readonly string[]).includes(event.type);

export function unsettledOperationsProjection(): Projection<UnsettledOperationDoc> {
  return {
    name: 'unsettled-operations',
    collection: UNSETTLED_OPERATIONS_COLLECTION,
    eventTypes: EVENT_TYPES,
    documentIds: (event) => (isUnsettledEvent(event) ? [event.data.operationID] : []),
    evolve(doc, event, id) {
      if (!isUnsettledEvent(event)) return doc;
      if (event.type !== 'OperationApproved') return null; // settled: off the list
      return { id, approvedAt: event.data.approvedAt, approvalPosition: event.position, position: event.position };
    },
  };
}

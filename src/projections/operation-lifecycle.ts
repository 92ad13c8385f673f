import type { OperationEvent } from '../domain/events.ts';
import type { ProjectedEvent } from './projection.ts';

/** The contract's statuses; an executor's claim and the submission leave an operation `approved`. */
export type OperationStatus = 'pending' | 'approved' | 'rejected' | 'completed' | 'failed';

export type LaterOperationEvent = Exclude<OperationEvent, { type: 'OperationRequested' }>;

/** What every operation list shows of an operation's progress. */
export interface LifecycleFields {
  status: OperationStatus;
  sequenceNumber: number | null;
  blockchainID: string;
  lastError: string | null;
  updatedAt: string;
}

/**
 * The change a later event of an operation's stream makes to the fields every operation list shares,
 * (plus the walletOperationID at completion). Times come from the event's data, so a rebuild gives
 * identical documents.
 */
export function lifecycleChange(event: LaterOperationEvent): Partial<LifecycleFields> & { walletOperationID?: string } {
  switch (event.type) {
    case 'OperationApproved':
      return { status: 'approved', updatedAt: event.data.approvedAt };
    case 'OperationRejected':
      return { status: 'rejected', updatedAt: event.data.rejectedAt };
    case 'OperationExecutionStarted':
      return {}; // an executor's claim (the lists do not subscribe to it)
    case 'OperationSubmitted':
      return { sequenceNumber: event.data.sequenceNumber, updatedAt: event.data.submittedAt };
    case 'OperationCompleted': {
      const { blockchainID, walletOperationID, sequenceNumber, completedAt } = event.data;
      return { status: 'completed', blockchainID, walletOperationID, sequenceNumber, updatedAt: completedAt };
    }
    case 'OperationFailed':
      return { status: 'failed', lastError: event.data.lastError, updatedAt: event.data.failedAt };
  }
}

export const OPERATION_EVENT_TYPES = [
  'OperationRequested',
  'OperationApproved',
  'OperationRejected',
  'OperationSubmitted',
  'OperationCompleted',
  'OperationFailed',
] as const;

export function isOperationEvent(event: ProjectedEvent): event is ProjectedEvent & OperationEvent {
  return (OPERATION_EVENT_TYPES as readonly string[]).includes(event.type);
}

import type { OperationEvent } from '../domain/events.ts';
import { contractStatus, statusAfter, type ContractStatus } from '../domain/operation-status.ts';
import type { ProjectedEvent } from './projection.ts';

export type LaterOperationEvent = Exclude<OperationEvent, { type: 'OperationRequested' }>;

/** What every operation list shows of an operation's progress. */
export interface LifecycleFields {
  /** The contract's status (src/domain/operation-status.ts): an executor's claim and the submission show `approved`. */
  status: ContractStatus;
  sequenceNumber: number | null;
  blockchainID: string;
  lastError: string | null;
  /** The checker's reason (or the key revocation's), once rejected; absent before. */
  rejectionReason?: string;
  updatedAt: string;
}

/**
 * The change a later event of an operation's stream makes to the fields every operation list shares,
 * (plus the walletOperationID at completion). Times come from the event's data, so a rebuild gives
 * identical documents.
 */
export function lifecycleChange(event: LaterOperationEvent): Partial<LifecycleFields> & { walletOperationID?: string } {
  const status = contractStatus(statusAfter(event.type));
  switch (event.type) {
    case 'OperationApproved':
      return { status, updatedAt: event.data.approvedAt };
    case 'OperationRejected':
      return { status, rejectionReason: event.data.reason, updatedAt: event.data.rejectedAt };
    case 'OperationExecutionStarted':
      return {}; // an executor's claim (the lists do not subscribe to it)
    case 'OperationSubmitted':
      // Still `approved` to the contract, which the operation already was when an executor claimed it.
      return { status, sequenceNumber: event.data.sequenceNumber, updatedAt: event.data.submittedAt };
    case 'OperationCompleted': {
      const { blockchainID, walletOperationID, sequenceNumber, completedAt } = event.data;
      return { status, blockchainID, walletOperationID, sequenceNumber, updatedAt: completedAt };
    }
    case 'OperationFailed':
      return { status, lastError: event.data.lastError, updatedAt: event.data.failedAt };
    case 'OperationSettlementRequested':
      return {}; // waits for its approval (the lists do not subscribe to it)
    case 'OperationSettledFromLedger': {
      // Completed as the ledger has it, as if the executor had recorded it: the failure's error no longer holds.
      const { blockchainID, walletOperationID, sequenceNumber, settledAt } = event.data;
      return { status, blockchainID, walletOperationID, sequenceNumber, lastError: null, updatedAt: settledAt };
    }
  }
}

export const OPERATION_EVENT_TYPES = [
  'OperationRequested',
  'OperationApproved',
  'OperationRejected',
  'OperationSubmitted',
  'OperationCompleted',
  'OperationFailed',
  'OperationSettledFromLedger',
] as const;

export function isOperationEvent(event: ProjectedEvent): event is ProjectedEvent & OperationEvent {
  return (OPERATION_EVENT_TYPES as readonly string[]).includes(event.type);
}

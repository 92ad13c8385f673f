import type { OperationEvent } from './events.ts';

/**
 * An operation's stage inside the service. `executing` (an executor's claim) and `submitted` (sent to the
 * ledger) are the executor's business: the contract never shows them (see contractStatus).
 */
export const OPERATION_STATUSES = [
  'pending',
  'approved',
  'rejected',
  'executing',
  'submitted',
  'completed',
  'failed',
] as const;
export type OperationStatus = (typeof OPERATION_STATUSES)[number];

/** The statuses the APIs, the lists, the console and their filters show. */
export const CONTRACT_STATUSES = ['pending', 'approved', 'rejected', 'completed', 'failed'] as const;
export type ContractStatus = (typeof CONTRACT_STATUSES)[number];

const CONTRACT: Record<OperationStatus, ContractStatus> = {
  pending: 'pending',
  approved: 'approved',
  rejected: 'rejected',
  // Claimed or submitted, the operation is still approved to whoever asks until its outcome is known.
  executing: 'approved',
  submitted: 'approved',
  completed: 'completed',
  failed: 'failed',
};

/** The one mapping from an operation's stage inside the service to the status the contract shows. */
export function contractStatus(status: OperationStatus): ContractStatus {
  return CONTRACT[status];
}

const AFTER: Record<OperationEvent['type'], OperationStatus> = {
  OperationRequested: 'pending',
  OperationApproved: 'approved',
  OperationRejected: 'rejected',
  OperationExecutionStarted: 'executing',
  OperationSubmitted: 'submitted',
  OperationCompleted: 'completed',
  OperationFailed: 'failed',
  // A settlement waits for its approval: the operation is failed until then.
  OperationSettlementRequested: 'failed',
  OperationSettledFromLedger: 'completed',
};

/** Whether an event type is one of an operation stream's (which alone set its status). */
export function isOperationEventType(type: string): type is OperationEvent['type'] {
  return Object.hasOwn(AFTER, type);
}

/** The stage an operation is in after an event of its stream: each event sets it, whatever came before. */
export function statusAfter(type: OperationEvent['type']): OperationStatus {
  return AFTER[type];
}

import type { OperationEvent, OperationRequested } from '../domain/events.ts';
import { DomainError } from '../domain/errors.ts';
import { Decimal } from '../domain/money.ts';
import { samePartyRef } from '../domain/parties.ts';
import { streams } from '../domain/streams.ts';
import type { ActingUser } from './api-keys.ts';
import { assertNever } from './decider.ts';
import type { Decision, StreamWrite } from './pipeline.ts';

/**
 * An operation's lifecycle after its creation: a checker of the operation's party approves it (the executor
 * then carries it out) or rejects it, which gives back what it held: the payer's funds and the key's volume.
 */
export type OperationStatus = 'pending' | 'approved' | 'rejected' | 'executing' | 'submitted' | 'completed' | 'failed';

export type OperationState =
  | { status: 'none' }
  | {
      status: OperationStatus;
      operation: OperationRequested['data'];
      decidedBy: string | null;
      sequenceNumber: number | null;
      blockchainID: string | null;
      lastError: string | null;
      /** The executor's claim while executing. */
      claim: { executorID: string; attempt: number; leaseUntil: string } | null;
    };

export const operationState = {
  initialState: (): OperationState => ({ status: 'none' }),
  evolve(state: OperationState, event: OperationEvent): OperationState {
    switch (event.type) {
      case 'OperationRequested':
        return { status: 'pending', operation: event.data, decidedBy: null, sequenceNumber: null, blockchainID: null, lastError: null, claim: null };
    }
    if (state.status === 'none') return state; // every operation stream starts with OperationRequested
    switch (event.type) {
      case 'OperationApproved':
        return { ...state, status: 'approved', decidedBy: event.data.approvedBy };
      case 'OperationRejected':
        return { ...state, status: 'rejected', decidedBy: event.data.rejectedBy };
      case 'OperationExecutionStarted':
        return { ...state, status: 'executing', claim: { executorID: event.data.executorID, attempt: event.data.attempt, leaseUntil: event.data.leaseUntil } };
      case 'OperationSubmitted':
        return { ...state, status: 'submitted', sequenceNumber: event.data.sequenceNumber };
      case 'OperationCompleted':
        return { ...state, status: 'completed', sequenceNumber: event.data.sequenceNumber, blockchainID: event.data.blockchainID };
      case 'OperationFailed':
        return { ...state, status: 'failed', lastError: event.data.lastError };
      default:
        return assertNever(event);
    }
  },
};

export type OperationDecision =
  | { type: 'ApproveOperation'; data: { operationID: string; by: ActingUser; now: string } }
  | { type: 'RejectOperation'; data: { operationID: string; by: ActingUser; reason: string; now: string } };

function requireCheckerOf(state: OperationState, command: OperationDecision, action: string) {
  const { operationID, by } = command.data;
  if (state.status === 'none') throw new DomainError('NOT_FOUND', `operation ${operationID} does not exist`);
  if (!samePartyRef(by.party, state.operation.party)) throw new DomainError('OTHER_PARTY', `operation ${operationID} belongs to another party`);
  if (!by.roles.includes('checker')) throw new DomainError('ROLE_REQUIRED', `${action} an operation needs the checker role`);
  if (state.status !== 'pending') throw new DomainError('WRONG_STATE', `cannot ${action} operation ${operationID}: it is ${state.status}, not pending`);
  return state.operation;
}

/** Writes to release what a pending operation holds; releases cannot break an invariant, so no revision is expected. */
export function releaseWrites(operation: OperationRequested['data'], reason: 'rejected' | 'failed', assetScale: number): StreamWrite[] {
  const { operationID, payer, keyID, volumeDay } = operation;
  const held = new Decimal(operation.amount).plus(operation.fee).toFixed(assetScale);
  const writes: StreamWrite[] = [
    { stream: streams.wallet(payer), events: [{ type: 'HoldReleased', data: { wallet: payer, operationID, amount: held, reason } }], expectedRevision: 'any' },
  ];
  if (volumeDay !== null && keyID !== null) {
    writes.push({
      stream: streams.keyVolume(keyID, volumeDay),
      events: [{ type: 'VolumeReleased', data: { keyID, day: volumeDay, operationID, amount: operation.amount } }],
      expectedRevision: 'any',
    });
  }
  return writes;
}

/** A checker's decision, pure: the events for the operation stream and, for a rejection, the releases. */
export function decideOnOperation(command: OperationDecision, state: OperationState, assetScale: number): Decision<{ operationID: string; state: OperationStatus }> {
  const { operationID, by, now } = command.data;
  const stream = streams.operation(operationID);
  switch (command.type) {
    case 'ApproveOperation': {
      requireCheckerOf(state, command, 'approve');
      return {
        writes: [{ stream, events: [{ type: 'OperationApproved', data: { operationID, approvedBy: by.userID, approvedAt: now } }] }],
        result: { operationID, state: 'approved' },
      };
    }
    case 'RejectOperation': {
      const operation = requireCheckerOf(state, command, 'reject');
      return {
        writes: [
          { stream, events: [{ type: 'OperationRejected', data: { operationID, rejectedBy: by.userID, reason: command.data.reason, rejectedAt: now } }] },
          ...releaseWrites(operation, 'rejected', assetScale),
        ],
        result: { operationID, state: 'rejected' },
      };
    }
    default:
      return assertNever(command);
  }
}

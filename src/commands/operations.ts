import type { EventMetadata } from '../ports/event-store.ts';
import { validTraceparent } from '../ports/tracing.ts';
import type { OperationEvent, OperationRequested, WalletEvent } from '../domain/events.ts';
import { DomainError } from '../domain/errors.ts';
import { Decimal } from '../domain/money.ts';
import type { OperationStatus } from '../domain/operation-status.ts';
import { samePartyRef } from '../domain/parties.ts';
import { streams } from '../domain/streams.ts';
import { requireMayVouch } from '../domain/segregation.ts';
import { effectiveStatus, keyKeepers, type ActingUser, type ApiKeyRecord, type ApiKeyState } from './api-keys.ts';
import { assertNever } from './decider.ts';
import type { Decision, StreamWrite } from './pipeline.ts';

/**
 * An operation's lifecycle after its creation: a checker of the operation's party approves it (the executor
 * then carries it out) or rejects it, which gives back what it held: the payer's funds and the key's volume.
 *
 * Segregation of duties (src/domain/segregation.ts): the checker who approves is never a person who could have
 * created the operation: whoever was handed the key secret that created it (its generation is recorded at the
 * create), whoever holds a secret of the key still accepted, the key's requester, or, through another channel,
 * the user who requested the operation. And an operation whose key has been revoked,
 * or has expired by the time of the decision, is never approved: the key-revocation consumer rejects it
 * (RejectOperationOfRevokedKey, and RejectOperationOfExpiredKey from its periodic sweep).
 */
export type OperationState =
  | { status: 'none' }
  | {
      status: OperationStatus;
      operation: OperationRequested['data'];
      /**
       * The user who requested it through a channel without a key (`user:<id>` actor); null for key-created operations.
       */
      requestedBy: string | null;
      decidedBy: string | null;
      sequenceNumber: number | null;
      blockchainID: string | null;
      lastError: string | null;
      /** The executor's claim while executing. */
      claim: { executorID: string; attempt: number; leaseUntil: string } | null;
      /** The trace context of its creation and of its approval (event metadata): where the next step's span hangs. */
      trace: { created: string | null; approved: string | null };
    };

export const operationState = {
  initialState: (): OperationState => ({ status: 'none' }),
  evolve(state: OperationState, event: OperationEvent & { metadata?: EventMetadata }): OperationState {
    if (event.type === 'OperationRequested') {
      return {
        status: 'pending',
        operation: event.data,
        requestedBy: requestingUser(event.metadata),
        decidedBy: null,
        sequenceNumber: null,
        blockchainID: null,
        lastError: null,
        claim: null,
        trace: { created: traceparentOf(event.metadata), approved: null },
      };
    }
    if (state.status === 'none') return state; // every operation stream starts with OperationRequested
    switch (event.type) {
      case 'OperationApproved':
        return {
          ...state,
          status: 'approved',
          decidedBy: event.data.approvedBy,
          trace: { ...state.trace, approved: traceparentOf(event.metadata) },
        };
      case 'OperationRejected':
        return { ...state, status: 'rejected', decidedBy: event.data.rejectedBy };
      case 'OperationExecutionStarted':
        return {
          ...state,
          status: 'executing',
          claim: { executorID: event.data.executorID, attempt: event.data.attempt, leaseUntil: event.data.leaseUntil },
        };
      case 'OperationSubmitted':
        return { ...state, status: 'submitted', sequenceNumber: event.data.sequenceNumber };
      case 'OperationCompleted':
        return {
          ...state,
          status: 'completed',
          sequenceNumber: event.data.sequenceNumber,
          blockchainID: event.data.blockchainID,
        };
      case 'OperationFailed':
        return { ...state, status: 'failed', lastError: event.data.lastError };
      case 'OperationSettlementRequested':
        return state; // failed until another operator approves it (src/commands/failed-settlement.ts)
      case 'OperationSettledFromLedger':
        return {
          ...state,
          status: 'completed',
          sequenceNumber: event.data.sequenceNumber,
          blockchainID: event.data.blockchainID,
        };
      default:
        return assertNever(event);
    }
  },
};

/** A console user named as the actor of an event: `user:<id>`. */
function requestingUser(metadata: EventMetadata | undefined): string | null {
  const actor = metadata?.actor;
  return typeof actor === 'string' && actor.startsWith('user:') ? actor.slice('user:'.length) : null;
}

/** A traceparent in metadata: checked again, as events may come from an import or an older writer. */
const traceparentOf = (metadata: EventMetadata | undefined): string | null =>
  validTraceparent(metadata?.traceparent) ?? null;

/** Who rejects, and why, the pending operations of a revoked or an expired key. */
export const KEY_REVOCATION_ACTOR = 'system:key-revocation';
export const KEY_REVOKED_REASON = 'API key revoked';
export const KEY_EXPIRED_REASON = 'API key expired';
export const SECRET_ENDED_REASON = 'the API key secret that created it ended with its holder’s departure';

/** Whether the key secret that created the operation ended with its holder's departure (ApiKeyPreviousSecretEnded). */
const secretEnded = (key: ApiKeyRecord, operation: OperationRequested['data']): boolean =>
  operation.secretGeneration !== undefined && key.endedSecretGenerations.includes(operation.secretGeneration);

export type OperationDecision =
  | { type: 'ApproveOperation'; data: { operationID: string; by: ActingUser; now: string } }
  | { type: 'RejectOperation'; data: { operationID: string; by: ActingUser; reason: string; now: string } }
  /**
   * The key-revocation consumer's: rejects the operation if it is pending and its key revoked, or the key secret
   * that created it ended with its holder's departure; else does nothing.
   */
  | { type: 'RejectOperationOfRevokedKey'; data: { operationID: string; now: string } }
  /**
   * The key-revocation consumer's sweep: rejects the operation if it is pending and its key (not revoked) expired by
   * `now`, else does nothing.
   */
  | { type: 'RejectOperationOfExpiredKey'; data: { operationID: string; now: string } };

/**
 * What a decision on an operation reads, in the same decision: the operation's stream, and the stream of the
 * key that created it (`{ status: 'none' }` for an operation of another channel, which has no key).
 */
export interface OperationDecisionStates {
  operation: OperationState;
  key: ApiKeyState;
}

function requireCheckerOf(
  state: OperationState,
  command: Extract<OperationDecision, { data: { by: ActingUser } }>,
  action: string,
) {
  const { operationID, by } = command.data;
  if (state.status === 'none') throw new DomainError('NOT_FOUND', `operation ${operationID} does not exist`);
  if (!samePartyRef(by.party, state.operation.party))
    throw new DomainError('OTHER_PARTY', `operation ${operationID} belongs to another party`);
  if (!by.roles.includes('checker'))
    throw new DomainError('ROLE_REQUIRED', `${action} an operation needs the checker role`);
  if (state.status !== 'pending')
    throw new DomainError(
      'WRONG_STATE',
      `cannot ${action} operation ${operationID}: it is ${state.status}, not pending`,
    );
  return state.operation;
}

/** Writes to release what a pending operation holds; releases cannot break an invariant, so no revision is expected. */
export function releaseWrites(
  operation: OperationRequested['data'],
  reason: 'rejected' | 'failed',
  assetScale: number,
): StreamWrite[] {
  const { operationID, payer, keyID, volumeDay } = operation;
  const held = new Decimal(operation.amount).plus(operation.fee).toFixed(assetScale);
  const writes: StreamWrite[] = [
    {
      stream: streams.wallet(payer),
      events: [{ type: 'HoldReleased', data: { wallet: payer, operationID, amount: held, reason } }],
      expectedRevision: 'any',
    },
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

/**
 * The money movements of an operation that executed, as the ledger moved them: the payer debited (amount and fee,
 * settling `heldAmount` of its hold), the payee credited, the fee to the platform. Written by a completion, and by
 * the settlement of a failure whose money moved (its hold already released: `heldAmount` 0).
 */
export function movementWrites(
  operation: OperationRequested['data'],
  heldAmount: string,
  assetScale: number,
): StreamWrite[] {
  const { operationID } = operation;
  const credit = (wallet: OperationRequested['data']['payee'], amount: string): StreamWrite => ({
    stream: streams.wallet(wallet),
    events: [{ type: 'WalletCredited', data: { wallet, operationID, amount } } satisfies WalletEvent],
    expectedRevision: 'any',
  });
  const debit = new Decimal(operation.amount).plus(operation.fee).toFixed(assetScale);
  const writes: StreamWrite[] = [
    {
      stream: streams.wallet(operation.payer),
      events: [
        {
          type: 'WalletDebited',
          data: {
            wallet: operation.payer,
            operationID,
            amount: debit,
            heldAmount: new Decimal(heldAmount).toFixed(assetScale),
          },
        } satisfies WalletEvent,
      ],
      expectedRevision: 'any',
    },
    credit(operation.payee, operation.amount),
  ];
  if (new Decimal(operation.fee).gt(0)) writes.push(credit({ kind: 'platform', id: 'fees' }, operation.fee));
  return writes;
}

/** The key that created the operation, as the decision read it; null for an operation of another channel. */
function keyOf(operation: OperationRequested['data'], key: ApiKeyState): ApiKeyRecord | null {
  if (operation.keyID === null) return null;
  // The handler reads the key's stream with the operation's: anything else is a bug, not a refusal.
  if (key.status === 'none' || key.keyID !== operation.keyID)
    throw new Error(`a decision on operation ${operation.operationID} needs the state of API key ${operation.keyID}`);
  return key;
}

/**
 * Approval needs a checker independent of whoever could have created the operation, and a key still standing.
 * Both facts are read in the decision itself (who holds which of the key's secrets, and whether the previous
 * one still works, from its stream; its expiry judged at the decision's time), not from a read model that may lag.
 */
function requireApprovable(states: OperationDecisionStates, by: ActingUser, operationID: string, now: string): void {
  const { operation: state } = states;
  if (state.status === 'none') return;
  const key = keyOf(state.operation, states.key);
  // An operation created before generations were recorded (null): every holder the key has had could have made it.
  const act = key
    ? {
        maker: state.requestedBy,
        keepers: keyKeepers(key, now),
        usedGeneration: state.operation.secretGeneration ?? null,
      }
    : { maker: state.requestedBy, keepers: null };
  requireMayVouch(by.userID, act, `approve operation ${operationID}`, key ? `API key ${key.keyID}` : 'it');
  if (key?.status === 'revoked') {
    throw new DomainError(
      'WRONG_STATE',
      `cannot approve operation ${operationID}: the API key ${key.keyID} that created it has been revoked, so ` +
        'the operation is being rejected',
    );
  }
  // Its holder left: nobody may vouch for what that secret made, as for a revoked key's operations.
  if (key && secretEnded(key, state.operation)) {
    throw new DomainError(
      'WRONG_STATE',
      `cannot approve operation ${operationID}: ${SECRET_ENDED_REASON}, so the operation is being rejected`,
    );
  }
  // An expired key's operations are as dead as a revoked key's: nobody may vouch for its use any longer.
  if (key && effectiveStatus(key, now) === 'expired') {
    throw new DomainError(
      'KEY_EXPIRED',
      `cannot approve operation ${operationID}: the API key ${key.keyID} that created it expired at ` +
        `${key.expiresAt}, so the operation is being rejected`,
    );
  }
}

/**
 * The consumer's rejection: what it was, pure; nothing to write unless the operation is pending and `applies` to its
 * key.
 */
function rejectForKey(
  states: OperationDecisionStates,
  operationID: string,
  now: string,
  /** Why the operation is rejected given its key, or null when the rejection does not apply to it. */
  reasonFor: (key: ApiKeyRecord, operation: OperationRequested['data']) => string | null,
  assetScale: number,
): Decision<{ operationID: string; state: OperationStatus | 'none' }> {
  const { operation: state } = states;
  // Idempotent: an operation already decided, or whose key stands, is left as it is (no writes).
  if (state.status !== 'pending') return { writes: [], result: { operationID, state: state.status } };
  const key = keyOf(state.operation, states.key);
  const reason = key && reasonFor(key, state.operation);
  if (!reason) return { writes: [], result: { operationID, state: state.status } };
  return {
    writes: [
      {
        stream: streams.operation(operationID),
        events: [
          {
            type: 'OperationRejected',
            data: { operationID, rejectedBy: KEY_REVOCATION_ACTOR, reason, rejectedAt: now },
          },
        ],
      },
      ...releaseWrites(state.operation, 'rejected', assetScale),
    ],
    result: { operationID, state: 'rejected' },
  };
}

/** A checker's decision, pure: the events for the operation stream and, for a rejection, the releases. */
export function decideOnOperation(
  command: OperationDecision,
  states: OperationDecisionStates,
  assetScale: number,
): Decision<{ operationID: string; state: OperationStatus | 'none' }> {
  const { operationID, now } = command.data;
  const { operation: state } = states;
  const stream = streams.operation(operationID);
  switch (command.type) {
    case 'ApproveOperation': {
      requireCheckerOf(state, command, 'approve');
      requireApprovable(states, command.data.by, operationID, now);
      return {
        writes: [
          {
            stream,
            events: [
              { type: 'OperationApproved', data: { operationID, approvedBy: command.data.by.userID, approvedAt: now } },
            ],
          },
        ],
        result: { operationID, state: 'approved' },
      };
    }
    case 'RejectOperation': {
      // Anyone who may check may reject, the key's requester included: a rejection moves no money.
      const operation = requireCheckerOf(state, command, 'reject');
      return {
        writes: [
          {
            stream,
            events: [
              {
                type: 'OperationRejected',
                data: { operationID, rejectedBy: command.data.by.userID, reason: command.data.reason, rejectedAt: now },
              },
            ],
          },
          ...releaseWrites(operation, 'rejected', assetScale),
        ],
        result: { operationID, state: 'rejected' },
      };
    }
    case 'RejectOperationOfRevokedKey':
      return rejectForKey(
        states,
        operationID,
        now,
        (key, operation) =>
          key.status === 'revoked' ? KEY_REVOKED_REASON : secretEnded(key, operation) ? SECRET_ENDED_REASON : null,
        assetScale,
      );
    case 'RejectOperationOfExpiredKey':
      // A revoked key's operations are the revocation's to reject, with its reason.
      return rejectForKey(
        states,
        operationID,
        now,
        (key) => (effectiveStatus(key, now) === 'expired' ? KEY_EXPIRED_REASON : null),
        assetScale,
      );
    default:
      return assertNever(command);
  }
}

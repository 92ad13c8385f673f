import type { AccessChange, AccessRequestEvent } from '../domain/events.ts';
import { DomainError } from '../domain/errors.ts';
import { assertNever, type Decider } from './decider.ts';
import type { ActingAdmin, UserCommand } from './users.ts';

/**
 * Maker-checker on access itself. Every change that grants or widens a console user's access is requested
 * by one platform administrator and takes effect only when a different administrator approves it:
 *
 *   (none) -request-> pending -approve (another administrator)-> approved   (the change is applied in the same append)
 *                     pending -reject (any administrator; by the requester: a withdrawal)-> rejected
 *
 * Approved and rejected are final. Nobody requests or approves a change to their own access, and a request
 * whose administrator has since been disabled can no longer be approved (it cannot be left as a trap).
 */
export type { ActingAdmin };

export type AccessRequestCommand =
  | {
      type: 'RequestAccess';
      data: { requestID: string; change: AccessChange; reason: string | null; by: ActingAdmin; now: string };
    }
  /**
   * `requesterActive`: whether the requesting administrator is still an active administrator, as the handler read it.
   */
  | {
      type: 'ApproveAccessRequest';
      data: { requestID: string; by: ActingAdmin; requesterActive: boolean; now: string };
    }
  | { type: 'RejectAccessRequest'; data: { requestID: string; by: ActingAdmin; reason: string | null; now: string } };

export type AccessRequestStatus = 'pending' | 'approved' | 'rejected';

export interface AccessRequestRecord {
  status: AccessRequestStatus;
  requestID: string;
  change: AccessChange;
  reason: string | null;
  requestedBy: string;
  requestedAt: string;
  decidedBy: string | null;
  decidedAt: string | null;
  rejectionReason: string | null;
}

export type AccessRequestState = { status: 'none' } | AccessRequestRecord;

/** The changes whose approval makes a one-time temporary password (shown once, to the approver). */
export const needsTemporaryPassword = (change: AccessChange): boolean =>
  change.kind === 'add-user' || change.kind === 'reset-password';

function requireAdmin(by: ActingAdmin, action: string): void {
  if (!by.platformAdmin) throw new DomainError('ROLE_REQUIRED', `${action} needs a platform administrator`);
}

function requirePending(state: AccessRequestState, requestID: string, action: string): AccessRequestRecord {
  if (state.status === 'none') throw new DomainError('NOT_FOUND', `access request ${requestID} does not exist`);
  if (state.status !== 'pending')
    throw new DomainError(
      'WRONG_STATE',
      `cannot ${action}: access request ${requestID} is ${state.status}, not pending`,
    );
  return state;
}

function decide(command: AccessRequestCommand, state: AccessRequestState): AccessRequestEvent[] {
  const { requestID, by, now } = command.data;
  switch (command.type) {
    case 'RequestAccess': {
      const { change, reason } = command.data;
      if (state.status !== 'none')
        throw new DomainError('ALREADY_EXISTS', `access request ${requestID} already exists`);
      requireAdmin(by, 'requesting an access change');
      if (change.userID === by.userID)
        throw new DomainError('SAME_USER', 'you cannot request a change to your own access');
      return [
        { type: 'AccessRequested', data: { requestID, change, reason, requestedBy: by.userID, requestedAt: now } },
      ];
    }
    case 'ApproveAccessRequest': {
      requireAdmin(by, 'approving an access change');
      const request = requirePending(state, requestID, 'approve it');
      if (by.userID === request.requestedBy)
        throw new DomainError('SAME_USER', 'the administrator who requested an access change cannot also approve it');
      if (by.userID === request.change.userID)
        throw new DomainError('SAME_USER', 'you cannot approve a change to your own access');
      if (!command.data.requesterActive)
        throw new DomainError(
          'WRONG_STATE',
          'the administrator who requested this change is no longer active: reject it, and request it again if ' +
            'it is still needed',
        );
      return [{ type: 'AccessRequestApproved', data: { requestID, approvedBy: by.userID, approvedAt: now } }];
    }
    case 'RejectAccessRequest':
      requireAdmin(by, 'rejecting an access change');
      requirePending(state, requestID, 'reject it');
      return [
        {
          type: 'AccessRequestRejected',
          data: { requestID, rejectedBy: by.userID, reason: command.data.reason, rejectedAt: now },
        },
      ];
    default:
      return assertNever(command);
  }
}

function evolve(state: AccessRequestState, event: AccessRequestEvent): AccessRequestState {
  if (event.type === 'AccessRequested') {
    return { status: 'pending', ...event.data, decidedBy: null, decidedAt: null, rejectionReason: null };
  }
  if (state.status === 'none') return state; // a request stream always starts with AccessRequested
  switch (event.type) {
    case 'AccessRequestApproved':
      return { ...state, status: 'approved', decidedBy: event.data.approvedBy, decidedAt: event.data.approvedAt };
    case 'AccessRequestRejected':
      return {
        ...state,
        status: 'rejected',
        decidedBy: event.data.rejectedBy,
        decidedAt: event.data.rejectedAt,
        rejectionReason: event.data.reason,
      };
    default:
      return assertNever(event);
  }
}

export const accessRequestDecider: Decider<AccessRequestCommand, AccessRequestState, AccessRequestEvent> = {
  initialState: () => ({ status: 'none' }),
  decide,
  evolve,
};

/**
 * The user command an approved change becomes, decided on the user's stream in the same append. At request
 * time the handler decides it too, on the user's state then, and discards the events: an impossible change
 * (enable an active user, a role they have) is refused at once, by the same rules, instead of at approval.
 */
export function changeCommand(
  change: AccessChange,
  approval: { requestID: string; approvedBy: string; passwordHash: string; now: string },
): UserCommand {
  const { requestID, approvedBy, passwordHash, now } = approval;
  switch (change.kind) {
    case 'add-user': {
      const { userID, party, email, roles, platformAdmin } = change;
      return {
        type: 'AddUser',
        data: { userID, party, email, passwordHash, roles, platformAdmin, mustChangePassword: true, now },
      };
    }
    case 'add-role':
      return { type: 'AddUserRole', data: { userID: change.userID, role: change.role, requestID, approvedBy, now } };
    case 'enable-user':
      return { type: 'EnableUser', data: { userID: change.userID, requestID, approvedBy, now } };
    case 'reset-password':
      return { type: 'ResetUserPassword', data: { userID: change.userID, passwordHash, requestID, approvedBy, now } };
    default:
      return assertNever(change);
  }
}

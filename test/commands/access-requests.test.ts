import { describe, expect, it } from 'vitest';
import { accessRequestDecider, changeCommand, needsTemporaryPassword } from '../../src/commands/access-requests.ts';
import { fold } from '../../src/commands/decider.ts';
import type { AccessChange, AccessRequestEvent } from '../../src/domain/events.ts';
import { deciderSpec } from '../support/decider-spec.ts';

const given = deciderSpec(accessRequestDecider);
const T0 = '2026-01-01T00:00:00.000Z';
const T1 = '2026-01-02T00:00:00.000Z';
const requestID = 'acr_0123456789abcdef0123456789abcdef';

const adminA = { userID: 'admin-a', platformAdmin: true };
const adminB = { userID: 'admin-b', platformAdmin: true };
const partyUser = { userID: 'u-checker', platformAdmin: false };

const addChecker: AccessChange = {
  kind: 'add-user',
  userID: 'u-new',
  party: { type: 'distributor', id: 'd-1' },
  email: 'new@acme.test',
  roles: ['checker'],
  platformAdmin: false,
};
const requested: AccessRequestEvent = {
  type: 'AccessRequested',
  data: { requestID, change: addChecker, reason: 'new cashier', requestedBy: 'admin-a', requestedAt: T0 },
};
const approved: AccessRequestEvent = {
  type: 'AccessRequestApproved',
  data: { requestID, approvedBy: 'admin-b', approvedAt: T1 },
};
const rejected: AccessRequestEvent = {
  type: 'AccessRequestRejected',
  data: { requestID, rejectedBy: 'admin-b', reason: 'unknown person', rejectedAt: T1 },
};

const request = (by = adminA, change: AccessChange = addChecker) => ({
  type: 'RequestAccess' as const,
  data: { requestID, change, reason: 'new cashier', by, now: T0 },
});
const approve = (by = adminB, requesterActive = true) => ({
  type: 'ApproveAccessRequest' as const,
  data: { requestID, by, requesterActive, now: T1 },
});
const reject = (by = adminB, reason: string | null = 'unknown person') => ({
  type: 'RejectAccessRequest' as const,
  data: { requestID, by, reason, now: T1 },
});

describe('access requests: maker-checker on access', () => {
  describe('requesting', () => {
    it('when an administrator requests a change, then it is pending with the change, the reason and the requester', () =>
      given([]).when(request()).then([requested]));

    it('when a party user requests a change, then it is refused ROLE_REQUIRED', () =>
      given([]).when(request(partyUser)).thenRefused('ROLE_REQUIRED'));

    it('when an administrator requests a change to their own access, then it is refused SAME_USER', () =>
      given([])
        .when(request(adminA, { kind: 'reset-password', userID: 'admin-a', email: 'a@platform.test' }))
        .thenRefused('SAME_USER'));

    it('when the request id is already used, then it is refused ALREADY_EXISTS', () =>
      given([requested]).when(request()).thenRefused('ALREADY_EXISTS'));
  });

  describe('approving', () => {
    it('when a different administrator approves, then it is approved', () =>
      given([requested]).when(approve()).then([approved]));

    it('when the administrator who requested it approves, then it is refused SAME_USER: one administrator alone changes no access', () =>
      given([requested])
        .when(approve(adminA))
        .thenRefused('SAME_USER', /requested an access change cannot also approve it/));

    it('when the subject of the change approves it, then it is refused SAME_USER', () =>
      given([
        {
          ...requested,
          data: { ...requested.data, change: { kind: 'reset-password', userID: 'admin-b', email: 'b@platform.test' } },
        },
      ])
        .when(approve(adminB))
        .thenRefused('SAME_USER', /your own access/));

    it('when a party user approves, then it is refused ROLE_REQUIRED', () =>
      given([requested]).when(approve(partyUser)).thenRefused('ROLE_REQUIRED'));

    it('when the requesting administrator has been disabled since, then approval is refused WRONG_STATE', () =>
      given([requested])
        .when(approve(adminB, false))
        .thenRefused('WRONG_STATE', /no longer active/));

    it('when the request does not exist, then approval is refused NOT_FOUND', () =>
      given([]).when(approve()).thenRefused('NOT_FOUND'));

    it('when the request was already approved or rejected, then approval is refused WRONG_STATE', () => {
      given([requested, approved])
        .when(approve())
        .thenRefused('WRONG_STATE', /is approved/);
      given([requested, rejected])
        .when(approve())
        .thenRefused('WRONG_STATE', /is rejected/);
    });
  });

  describe('rejecting', () => {
    it('when another administrator rejects with a reason, then it is rejected', () =>
      given([requested]).when(reject()).then([rejected]));

    it('when the requester rejects their own request, then it is withdrawn (rejected by them)', () =>
      given([requested])
        .when(reject(adminA, null))
        .then([
          { type: 'AccessRequestRejected', data: { requestID, rejectedBy: 'admin-a', reason: null, rejectedAt: T1 } },
        ]));

    it('when a party user rejects, then it is refused ROLE_REQUIRED', () =>
      given([requested]).when(reject(partyUser)).thenRefused('ROLE_REQUIRED'));

    it('when the request is no longer pending, then rejection is refused WRONG_STATE', () =>
      given([requested, approved]).when(reject()).thenRefused('WRONG_STATE'));

    it('when the request does not exist, then rejection is refused NOT_FOUND', () =>
      given([]).when(reject()).thenRefused('NOT_FOUND'));
  });

  describe('state', () => {
    it('when nothing happened, then the state is none; and a decision without a request changes nothing', () => {
      expect(accessRequestDecider.initialState()).toEqual({ status: 'none' });
      expect(fold(accessRequestDecider, accessRequestDecider.initialState(), [approved])).toEqual({ status: 'none' });
    });

    it('when a request is folded, then it is pending with no decision', () =>
      expect(fold(accessRequestDecider, accessRequestDecider.initialState(), [requested])).toEqual({
        status: 'pending',
        requestID,
        change: addChecker,
        reason: 'new cashier',
        requestedBy: 'admin-a',
        requestedAt: T0,
        decidedBy: null,
        decidedAt: null,
        rejectionReason: null,
      }));

    it('when an approval is folded, then it is approved by its approver', () =>
      expect(fold(accessRequestDecider, accessRequestDecider.initialState(), [requested, approved])).toMatchObject({
        status: 'approved',
        decidedBy: 'admin-b',
        decidedAt: T1,
        rejectionReason: null,
      }));

    it('when a rejection is folded, then it is rejected with its reason', () =>
      expect(fold(accessRequestDecider, accessRequestDecider.initialState(), [requested, rejected])).toMatchObject({
        status: 'rejected',
        decidedBy: 'admin-b',
        rejectionReason: 'unknown person',
      }));
  });

  describe('what an approved change does to the user', () => {
    const approval = { requestID, approvedBy: 'admin-b', passwordHash: 'temp-hash', now: T1 };

    it('when a user is added, then the user gets the temporary password, which must be changed', () => {
      expect(changeCommand(addChecker, approval)).toEqual({
        type: 'AddUser',
        data: {
          userID: 'u-new',
          party: { type: 'distributor', id: 'd-1' },
          email: 'new@acme.test',
          passwordHash: 'temp-hash',
          roles: ['checker'],
          platformAdmin: false,
          mustChangePassword: true,
          now: T1,
        },
      });
      expect(needsTemporaryPassword(addChecker)).toBe(true);
    });

    it('when a role is added, then AddUserRole names the request and approver; no password is made', () => {
      const change: AccessChange = { kind: 'add-role', userID: 'u-1', email: 'a@b.test', role: 'checker' };
      expect(changeCommand(change, approval)).toEqual({
        type: 'AddUserRole',
        data: { userID: 'u-1', role: 'checker', requestID, approvedBy: 'admin-b', now: T1 },
      });
      expect(needsTemporaryPassword(change)).toBe(false);
    });

    it('when a user is enabled, then EnableUser names the request and approver', () => {
      const change: AccessChange = { kind: 'enable-user', userID: 'u-1', email: 'a@b.test' };
      expect(changeCommand(change, approval)).toEqual({
        type: 'EnableUser',
        data: { userID: 'u-1', requestID, approvedBy: 'admin-b', now: T1 },
      });
      expect(needsTemporaryPassword(change)).toBe(false);
    });

    it('when a password is reset, then ResetUserPassword carries the temporary hash', () => {
      const change: AccessChange = { kind: 'reset-password', userID: 'u-1', email: 'a@b.test' };
      expect(changeCommand(change, approval)).toEqual({
        type: 'ResetUserPassword',
        data: { userID: 'u-1', passwordHash: 'temp-hash', requestID, approvedBy: 'admin-b', now: T1 },
      });
      expect(needsTemporaryPassword(change)).toBe(true);
    });
  });
});

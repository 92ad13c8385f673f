import { describe, expect, it } from 'vitest';
import {
  acceptedSecrets,
  checkRotationDecision,
  checkRotationRequest,
  checkRotationWithdrawal,
  overlapEnd,
} from '../../src/domain/secret-rotation.ts';
import { expectRefused } from '../support/decider-spec.ts';

const pending = { requestedBy: 'u-maker', reason: 'yearly', requestedAt: '2026-01-01T00:00:00.000Z' };

describe('secret rotation rules', () => {
  describe('acceptedSecrets', () => {
    const rotating = { current: 'new', previous: 'old', previousValidUntil: '2026-01-02T00:00:00.000Z' };

    it('when the overlap lasts, then the current secret and the previous one are accepted, current first', () =>
      expect(acceptedSecrets(rotating, '2026-01-01T23:59:59.999Z')).toEqual(['new', 'old']));

    it('when the overlap has ended, then only the current secret is accepted', () =>
      expect(acceptedSecrets(rotating, '2026-01-02T00:00:00.000Z')).toEqual(['new']));

    it('when there never was a rotation, then only the current secret is accepted', () =>
      expect(
        acceptedSecrets({ current: 'only', previous: null, previousValidUntil: null }, '2026-01-01T00:00:00.000Z'),
      ).toEqual(['only']));

    it('when there is no current secret (revoked), then none is accepted', () =>
      expect(
        acceptedSecrets({ current: null, previous: null, previousValidUntil: null }, '2026-01-01T00:00:00.000Z'),
      ).toEqual([]));
  });

  it('when the overlap is 24 hours, then the previous secret works until a day after the approval', () =>
    expect(overlapEnd('2026-01-01T10:00:00.000Z', 24)).toBe('2026-01-02T10:00:00.000Z'));

  it('when the overlap is out of bounds, then it is a programming error', () => {
    expect(() => overlapEnd('2026-01-01T10:00:00.000Z', -1)).toThrow(RangeError);
    expect(() => overlapEnd('2026-01-01T10:00:00.000Z', 169)).toThrow(RangeError);
  });

  it('when a maker asks with none pending, then it is allowed; a checker alone or a second request is refused', () => {
    checkRotationRequest({ userID: 'u-maker', roles: ['maker'] }, null, 'API key k');
    expectRefused(
      () => checkRotationRequest({ userID: 'u-checker', roles: ['checker'] }, null, 'API key k'),
      'ROLE_REQUIRED',
    );
    expectRefused(
      () => checkRotationRequest({ userID: 'u-maker', roles: ['maker'] }, pending, 'API key k'),
      'WRONG_STATE',
    );
  });

  it('when the requester decides on their own rotation, then it is refused; another checker may', () => {
    expectRefused(
      () => checkRotationDecision({ userID: 'u-maker', roles: ['maker', 'checker'] }, pending, 'API key k', 'approve'),
      'SAME_USER',
    );
    expectRefused(
      () => checkRotationDecision({ userID: 'u-other', roles: ['maker'] }, pending, 'API key k', 'reject'),
      'ROLE_REQUIRED',
    );
    expectRefused(
      () => checkRotationDecision({ userID: 'u-checker', roles: ['checker'] }, null, 'API key k', 'approve'),
      'WRONG_STATE',
    );
    expect(checkRotationDecision({ userID: 'u-checker', roles: ['checker'] }, pending, 'API key k', 'approve')).toBe(
      pending,
    );
  });

  it('when someone other than the requester withdraws, then it is refused', () => {
    expectRefused(
      () => checkRotationWithdrawal({ userID: 'u-checker', roles: ['checker'] }, pending, 'API key k'),
      'SAME_USER',
    );
    expectRefused(
      () => checkRotationWithdrawal({ userID: 'u-maker', roles: ['maker'] }, null, 'API key k'),
      'WRONG_STATE',
    );
    expect(checkRotationWithdrawal({ userID: 'u-maker', roles: ['maker'] }, pending, 'API key k')).toBe(pending);
  });
});

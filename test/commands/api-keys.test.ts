import { describe, expect, it } from 'vitest';
import {
  acceptedSecretHashes,
  apiKeyDecider,
  effectiveStatus,
  expiryFrom,
  type ActingUser,
} from '../../src/commands/api-keys.ts';
import type { ApiKeyEvent, ApiKeyRequested } from '../../src/domain/events.ts';
import { deciderSpec } from '../support/decider-spec.ts';

const given = deciderSpec(apiKeyDecider);
const acme = { type: 'distributor', id: 'd-acme' } as const;
const other = { type: 'merchant', id: 'm-other' } as const;

const maker: ActingUser = { userID: 'u-maker', party: acme, roles: ['maker'] };
const checker: ActingUser = { userID: 'u-checker', party: acme, roles: ['checker'] };
const makerChecker: ActingUser = { userID: 'u-both', party: acme, roles: ['maker', 'checker'] };
const foreignChecker: ActingUser = { userID: 'u-foreign', party: other, roles: ['maker', 'checker'] };
const admin: ActingUser = { userID: 'u-admin', party: null, roles: [] };

const T0 = '2026-01-01T00:00:00.000Z';
const T1 = '2026-01-02T00:00:00.000Z';
const T2 = '2026-01-03T00:00:00.000Z';
const AFTER_EXPIRY = '2026-02-05T00:00:00.000Z';

const terms = {
  keyID: 'key_AAAAAAAAAAAAAAAA',
  party: acme,
  label: 'till 1',
  permissions: ['Read Balance' as const, 'Perform Operations' as const],
  maxTransactionAmount: '500.00',
  maxDailyVolume: '10000.00',
  allowedIPs: ['10.0.0.0/8'],
  expiresInDays: 30,
};
const keyID = terms.keyID;

const requested: ApiKeyRequested = {
  type: 'ApiKeyRequested',
  data: { ...terms, requestedBy: maker.userID, requestedAt: T0 },
};
const approved: ApiKeyEvent = {
  type: 'ApiKeyApproved',
  data: {
    keyID,
    approvedBy: checker.userID,
    approvedAt: T1,
    expiresAt: expiryFrom(T1, 30),
    secretHash: 'ab'.repeat(32),
  },
};
const revocationRequested: ApiKeyEvent = {
  type: 'ApiKeyRevocationRequested',
  data: { keyID, requestedBy: maker.userID, reason: 'till stolen', requestedAt: T2 },
};

describe('API key lifecycle', () => {
  describe('requesting a key', () => {
    it('when a maker requests a key for their party, then it is pending with the terms and the maker recorded', () =>
      given([])
        .when({ type: 'RequestApiKey', data: { ...terms, by: maker, now: T0 } })
        .then([requested]));

    it('when a user without the maker role requests a key, then it is refused', () =>
      given([])
        .when({ type: 'RequestApiKey', data: { ...terms, by: checker, now: T0 } })
        .thenRefused('ROLE_REQUIRED'));

    it('when a maker requests a key for another party, then it is refused', () =>
      given([])
        .when({ type: 'RequestApiKey', data: { ...terms, by: foreignChecker, now: T0 } })
        .thenRefused('OTHER_PARTY'));

    it('when a platform administrator without a party requests a key, then it is refused', () =>
      given([])
        .when({ type: 'RequestApiKey', data: { ...terms, by: { ...admin, roles: ['maker'] }, now: T0 } })
        .thenRefused('OTHER_PARTY'));

    it('when the key id is already used, then the request is refused', () =>
      given([requested])
        .when({ type: 'RequestApiKey', data: { ...terms, by: maker, now: T1 } })
        .thenRefused('ALREADY_EXISTS'));
  });

  describe('approving a key', () => {
    const approve = (by: ActingUser, now = T1) => ({
      type: 'ApproveApiKey' as const,
      data: { keyID, by, secretHash: 'ab'.repeat(32), now },
    });

    it('when a different checker of the party approves, then the key is active and expires after its days', () =>
      given([requested])
        .when(approve(checker))
        .then([
          {
            type: 'ApiKeyApproved',
            data: {
              keyID,
              approvedBy: 'u-checker',
              approvedAt: T1,
              expiresAt: '2026-02-01T00:00:00.000Z',
              secretHash: 'ab'.repeat(32),
            },
          },
        ]));

    it('when the maker approves their own request, then it is refused even with the checker role', () =>
      given([{ ...requested, data: { ...requested.data, requestedBy: makerChecker.userID } }])
        .when(approve(makerChecker))
        .thenRefused('SAME_USER'));

    it('when a user without the checker role approves, then it is refused', () =>
      given([requested])
        .when(approve({ ...maker, userID: 'u-maker-2' }))
        .thenRefused('ROLE_REQUIRED'));

    it('when a checker of another party approves, then it is refused', () =>
      given([requested]).when(approve(foreignChecker)).thenRefused('OTHER_PARTY'));

    it('when the key does not exist, then approval is refused as not found', () =>
      given([]).when(approve(checker)).thenRefused('NOT_FOUND'));

    it('when the key is already active, then a second approval is refused', () =>
      given([requested, approved]).when(approve(checker, T2)).thenRefused('WRONG_STATE'));

    it('when the key was rejected, then it can never be approved', () =>
      given([
        requested,
        { type: 'ApiKeyRejected', data: { keyID, rejectedBy: checker.userID, reason: null, rejectedAt: T1 } },
      ])
        .when(approve(checker, T2))
        .thenRefused('WRONG_STATE'));
  });

  describe('rejecting a key', () => {
    const reject = (by: ActingUser) => ({
      type: 'RejectApiKey' as const,
      data: { keyID, by, reason: 'too broad', now: T1 },
    });

    it('when a different checker rejects a pending key, then it is rejected with the reason', () =>
      given([requested])
        .when(reject(checker))
        .then([
          { type: 'ApiKeyRejected', data: { keyID, rejectedBy: 'u-checker', reason: 'too broad', rejectedAt: T1 } },
        ]));

    it('when the maker rejects their own request, then it is refused', () =>
      given([{ ...requested, data: { ...requested.data, requestedBy: makerChecker.userID } }])
        .when(reject(makerChecker))
        .thenRefused('SAME_USER'));

    it('when a maker without the checker role rejects, then it is refused', () =>
      given([requested]).when(reject(maker)).thenRefused('ROLE_REQUIRED'));

    it('when the key is already active, then rejecting it is refused', () =>
      given([requested, approved]).when(reject(checker)).thenRefused('WRONG_STATE'));
  });

  describe('withdrawing a key request', () => {
    const withdraw = (by: ActingUser, now = T1) => ({
      type: 'WithdrawApiKeyRequest' as const,
      data: { keyID, by, now },
    });
    const withdrawn: ApiKeyEvent = {
      type: 'ApiKeyRequestWithdrawn',
      data: { keyID, withdrawnBy: maker.userID, withdrawnAt: T1 },
    };

    it('when the maker who requested it withdraws a pending request, then it is withdrawn', () =>
      given([requested]).when(withdraw(maker)).then([withdrawn]));

    it('when another maker of the party withdraws it, then it is refused: only its maker may', () =>
      given([requested])
        .when(withdraw({ ...makerChecker }))
        .thenRefused('SAME_USER', /only the maker who requested/));

    it('when a checker of the party withdraws it, then it is refused (a checker rejects instead)', () =>
      given([requested]).when(withdraw(checker)).thenRefused('SAME_USER'));

    it('when a user of another party withdraws it, then it is refused as another party', () =>
      given([requested])
        .when(withdraw({ ...foreignChecker, userID: maker.userID }))
        .thenRefused('OTHER_PARTY'));

    it('when the key is already active, then withdrawing is refused', () =>
      given([requested, approved]).when(withdraw(maker, T2)).thenRefused('WRONG_STATE'));

    it('when the request was already withdrawn or rejected, then withdrawing again is refused', () => {
      given([requested, withdrawn]).when(withdraw(maker, T2)).thenRefused('WRONG_STATE');
      given([
        requested,
        { type: 'ApiKeyRejected', data: { keyID, rejectedBy: checker.userID, reason: null, rejectedAt: T1 } },
      ])
        .when(withdraw(maker, T2))
        .thenRefused('WRONG_STATE');
    });

    it('when the key does not exist, then withdrawing is refused as not found', () =>
      given([]).when(withdraw(maker)).thenRefused('NOT_FOUND'));

    it('given a withdrawn request, then its state is withdrawn and no checker can approve it any more', () => {
      const state = [requested, withdrawn].reduce(apiKeyDecider.evolve, apiKeyDecider.initialState());
      expect(state.status).toBe('withdrawn');
      given([requested, withdrawn])
        .when({ type: 'ApproveApiKey', data: { keyID, by: checker, secretHash: 'ab'.repeat(32), now: T2 } })
        .thenRefused('WRONG_STATE');
    });
  });

  describe('revoking a key', () => {
    const askRevocation = (by: ActingUser, now = T2) => ({
      type: 'RequestApiKeyRevocation' as const,
      data: { keyID, by, reason: 'till stolen', now },
    });
    const approveRevocation = (by: ActingUser) => ({
      type: 'ApproveApiKeyRevocation' as const,
      data: { keyID, by, now: T2 },
    });
    const rejectRevocation = (by: ActingUser) => ({
      type: 'RejectApiKeyRevocation' as const,
      data: { keyID, by, reason: 'false alarm', now: T2 },
    });

    it('when a maker asks to revoke an active key, then a revocation is pending with the reason', () =>
      given([requested, approved]).when(askRevocation(maker)).then([revocationRequested]));

    it('when a checker without the maker role asks for a revocation, then it is refused', () =>
      given([requested, approved]).when(askRevocation(checker)).thenRefused('ROLE_REQUIRED'));

    it('when a maker of another party asks for a revocation, then it is refused', () =>
      given([requested, approved]).when(askRevocation(foreignChecker)).thenRefused('OTHER_PARTY'));

    it('when the key is still pending, then a revocation request is refused', () =>
      given([requested]).when(askRevocation(maker)).thenRefused('WRONG_STATE'));

    it('when the key has expired, then a revocation request is refused as expired', () =>
      given([requested, approved]).when(askRevocation(maker, AFTER_EXPIRY)).thenRefused('KEY_EXPIRED'));

    it('when a revocation is already pending, then another request is refused', () =>
      given([requested, approved, revocationRequested]).when(askRevocation(maker)).thenRefused('WRONG_STATE'));

    it('when a different checker approves the revocation, then the key is revoked', () =>
      given([requested, approved, revocationRequested])
        .when(approveRevocation(checker))
        .then([{ type: 'ApiKeyRevoked', data: { keyID, approvedBy: 'u-checker', revokedAt: T2 } }]));

    it('when the user who asked for the revocation approves it, then it is refused', () =>
      given([
        requested,
        approved,
        { ...revocationRequested, data: { ...revocationRequested.data, requestedBy: makerChecker.userID } },
      ])
        .when(approveRevocation(makerChecker))
        .thenRefused('SAME_USER'));

    it('when no revocation was asked for, then approving one is refused', () =>
      given([requested, approved]).when(approveRevocation(checker)).thenRefused('WRONG_STATE'));

    it('when a checker rejects the revocation, then the key is active again', () => {
      given([requested, approved, revocationRequested])
        .when(rejectRevocation(checker))
        .then([
          {
            type: 'ApiKeyRevocationRejected',
            data: { keyID, rejectedBy: 'u-checker', reason: 'false alarm', rejectedAt: T2 },
          },
        ]);
      const state = [
        requested,
        approved,
        revocationRequested,
        {
          type: 'ApiKeyRevocationRejected',
          data: { keyID, rejectedBy: 'u-checker', reason: 'false alarm', rejectedAt: T2 },
        } as ApiKeyEvent,
      ].reduce(apiKeyDecider.evolve, apiKeyDecider.initialState());
      expect(state.status).toBe('active');
    });

    it('when a checker of another party rejects the revocation, then it is refused', () =>
      given([requested, approved, revocationRequested])
        .when(rejectRevocation(foreignChecker))
        .thenRefused('OTHER_PARTY'));

    it('when the key is revoked, then it can never be revoked, reactivated or approved again', () => {
      const revoked: ApiKeyEvent = {
        type: 'ApiKeyRevoked',
        data: { keyID, approvedBy: checker.userID, revokedAt: T2 },
      };
      const history = [requested, approved, revocationRequested, revoked];
      given(history).when(askRevocation(maker)).thenRefused('WRONG_STATE');
      given(history).when(rejectRevocation(checker)).thenRefused('WRONG_STATE');
      given(history)
        .when({ type: 'ApproveApiKey', data: { keyID, by: checker, secretHash: 'cd'.repeat(32), now: T2 } })
        .thenRefused('WRONG_STATE');
    });
  });

  describe('the departure of the user holding the secret', () => {
    const retire = (userID: string) => ({
      type: 'RetireApiKeyOfDepartedUser' as const,
      data: { keyID, userID, now: T2 },
    });

    it('when its maker departs while the key is active, then it is revoked by the system naming them', () =>
      given([requested, approved])
        .when(retire(maker.userID))
        .then([
          { type: 'ApiKeyRevoked', data: { keyID, approvedBy: 'system', revokedAt: T2, departedUserID: maker.userID } },
        ]));

    it('when its maker departs while a revocation waits, then it is revoked at once', () =>
      given([requested, approved, revocationRequested])
        .when(retire(maker.userID))
        .then([
          { type: 'ApiKeyRevoked', data: { keyID, approvedBy: 'system', revokedAt: T2, departedUserID: maker.userID } },
        ]));

    it('when its maker departs before a checker decided, then the request is withdrawn by the system', () =>
      given([requested])
        .when(retire(maker.userID))
        .then([
          {
            type: 'ApiKeyRequestWithdrawn',
            data: { keyID, withdrawnBy: 'system', withdrawnAt: T2, departedUserID: maker.userID },
          },
        ]));

    it('given a rotation to another maker, when the original maker departs, then the key keeps working; when the new holder departs, then it is revoked', () => {
      const rotated: ApiKeyEvent[] = [
        {
          type: 'ApiKeyRotationRequested',
          data: { keyID, requestedBy: 'u-maker-2', reason: 'maker leaving', requestedAt: T2 },
        },
        {
          type: 'ApiKeyRotated',
          data: {
            keyID,
            approvedBy: checker.userID,
            rotatedAt: T2,
            secretHash: 'cd'.repeat(32),
            previousValidUntil: T2,
            secretHolder: 'u-maker-2',
          },
        },
      ];
      given([requested, approved, ...rotated])
        .when(retire(maker.userID))
        .then([]);
      given([requested, approved, ...rotated])
        .when(retire('u-maker-2'))
        .then([
          { type: 'ApiKeyRevoked', data: { keyID, approvedBy: 'system', revokedAt: T2, departedUserID: 'u-maker-2' } },
        ]);
    });

    describe('given a rotation to another maker whose overlap still runs', () => {
      const LATER = '2026-01-05T00:00:00.000Z';
      const rotationAsked = (by: string): ApiKeyEvent => ({
        type: 'ApiKeyRotationRequested',
        data: { keyID, requestedBy: by, reason: 'handover', requestedAt: T2 },
      });
      const rotatedTo = (holder: string): ApiKeyEvent => ({
        type: 'ApiKeyRotated',
        data: {
          keyID,
          approvedBy: checker.userID,
          rotatedAt: T2,
          secretHash: 'cd'.repeat(32),
          previousValidUntil: LATER,
          secretHolder: holder,
        },
      });
      const history = [requested, approved, rotationAsked('u-maker-2'), rotatedTo('u-maker-2')];

      it('when the holder of the previous secret departs, then that secret ends at once and the key keeps working', () =>
        given(history)
          .when(retire(maker.userID))
          .then([{ type: 'ApiKeyPreviousSecretEnded', data: { keyID, endedAt: T2, departedUserID: maker.userID } }]));

      it('given the previous secret ended, then only the current hash is accepted and nothing more ends with a second departure', () => {
        const ended: ApiKeyEvent = {
          type: 'ApiKeyPreviousSecretEnded',
          data: { keyID, endedAt: T2, departedUserID: maker.userID },
        };
        const key = [...history, ended].reduce(apiKeyDecider.evolve, apiKeyDecider.initialState());
        if (key.status === 'none') throw new Error('key missing');
        expect(acceptedSecretHashes(key, T2)).toEqual(['cd'.repeat(32)]);
        expect(key).toMatchObject({
          status: 'active',
          previousSecretHash: null,
          previousValidUntil: null,
          secretHolders: [maker.userID, 'u-maker-2'],
        });
        given([...history, ended])
          .when(retire(maker.userID))
          .then([]);
      });

      it('when the maker of a pending rotation departs, then the rotation is withdrawn by the system naming them', () => {
        given([requested, approved, rotationAsked('u-maker-2')])
          .when(retire('u-maker-2'))
          .then([
            {
              type: 'ApiKeyRotationWithdrawn',
              data: { keyID, withdrawnBy: 'system', withdrawnAt: T2, departedUserID: 'u-maker-2' },
            },
          ]);
        // Holding the previous secret and asking for the next rotation: both end.
        given([...history, rotationAsked(maker.userID)])
          .when(retire(maker.userID))
          .then([
            { type: 'ApiKeyPreviousSecretEnded', data: { keyID, endedAt: T2, departedUserID: maker.userID } },
            {
              type: 'ApiKeyRotationWithdrawn',
              data: { keyID, withdrawnBy: 'system', withdrawnAt: T2, departedUserID: maker.userID },
            },
          ]);
      });
    });

    it('when another user departs, or the key already ended, then nothing happens', () => {
      given([requested, approved]).when(retire(checker.userID)).then([]);
      given([
        requested,
        { type: 'ApiKeyRejected', data: { keyID, rejectedBy: checker.userID, reason: null, rejectedAt: T1 } },
      ])
        .when(retire(maker.userID))
        .then([]);
      given([]).when(retire(maker.userID)).then([]);
    });
  });

  describe('expiry, derived from the clock', () => {
    const state = () => [requested, approved].reduce(apiKeyDecider.evolve, apiKeyDecider.initialState());

    it('when the expiry time has not come, then the key is active', () => {
      const key = state();
      if (key.status === 'none') throw new Error('key missing');
      expect(effectiveStatus(key, '2026-01-31T23:59:59.999Z')).toBe('active');
    });

    it('when the expiry time is reached, then the key is expired', () => {
      const key = state();
      if (key.status === 'none') throw new Error('key missing');
      expect(effectiveStatus(key, '2026-02-01T00:00:00.000Z')).toBe('expired');
    });

    it('when a revoked key is folded, then its secret hash is forgotten', () => {
      const revoked = [
        requested,
        approved,
        revocationRequested,
        { type: 'ApiKeyRevoked', data: { keyID, approvedBy: 'u-checker', revokedAt: T2 } } as ApiKeyEvent,
      ].reduce(apiKeyDecider.evolve, apiKeyDecider.initialState());
      expect(revoked).toMatchObject({ status: 'revoked', secretHash: null });
    });
  });

  describe('rotating the secret', () => {
    const NEW_HASH = 'cd'.repeat(32);
    const OLD_HASH = 'ab'.repeat(32);
    const otherMaker: ActingUser = { userID: 'u-maker-2', party: acme, roles: ['maker'] };
    const askRotation = (by: ActingUser, now = T2) => ({
      type: 'RequestApiKeyRotation' as const,
      data: { keyID, by, reason: 'yearly rotation', now },
    });
    const approveRotation = (by: ActingUser, now = T2) => ({
      type: 'ApproveApiKeyRotation' as const,
      data: { keyID, by, secretHash: NEW_HASH, overlapHours: 24, now },
    });
    const rejectRotation = (by: ActingUser) => ({
      type: 'RejectApiKeyRotation' as const,
      data: { keyID, by, reason: 'not now', now: T2 },
    });
    const withdrawRotation = (by: ActingUser) => ({
      type: 'WithdrawApiKeyRotation' as const,
      data: { keyID, by, now: T2 },
    });
    const rotationRequested: ApiKeyEvent = {
      type: 'ApiKeyRotationRequested',
      data: { keyID, requestedBy: otherMaker.userID, reason: 'yearly rotation', requestedAt: T2 },
    };
    const rotated: ApiKeyEvent = {
      type: 'ApiKeyRotated',
      data: {
        keyID,
        approvedBy: 'u-checker',
        rotatedAt: T2,
        secretHash: NEW_HASH,
        previousValidUntil: '2026-01-04T00:00:00.000Z',
        secretHolder: otherMaker.userID,
      },
    };
    const fold = (events: ApiKeyEvent[]) => events.reduce(apiKeyDecider.evolve, apiKeyDecider.initialState());

    it('when a maker of the party asks to rotate an active key, then a rotation is pending with the reason', () =>
      given([requested, approved]).when(askRotation(otherMaker)).then([rotationRequested]));

    it('when a user without the maker role asks for a rotation, then it is refused', () =>
      given([requested, approved]).when(askRotation(checker)).thenRefused('ROLE_REQUIRED'));

    it('when a maker of another party asks for a rotation, then it is refused', () =>
      given([requested, approved]).when(askRotation(foreignChecker)).thenRefused('OTHER_PARTY'));

    it('when a rotation is already pending, then another request is refused', () =>
      given([requested, approved, rotationRequested])
        .when(askRotation(maker))
        .thenRefused('WRONG_STATE', /already pending/));

    it('when the key is pending, expired or revoked, then a rotation request is refused', () => {
      given([requested]).when(askRotation(maker)).thenRefused('WRONG_STATE');
      given([requested, approved]).when(askRotation(maker, AFTER_EXPIRY)).thenRefused('KEY_EXPIRED');
      given([
        requested,
        approved,
        revocationRequested,
        { type: 'ApiKeyRevoked', data: { keyID, approvedBy: 'u-checker', revokedAt: T2 } },
      ])
        .when(askRotation(maker))
        .thenRefused('WRONG_STATE');
    });

    it('when a different checker approves, then the key is rotated: new hash, the requester holds it, the old one works for the overlap', () =>
      given([requested, approved, rotationRequested]).when(approveRotation(checker)).then([rotated]));

    it('when the maker who asked for the rotation approves it, then it is refused', () =>
      given([
        requested,
        approved,
        { ...rotationRequested, data: { ...rotationRequested.data, requestedBy: makerChecker.userID } },
      ])
        .when(approveRotation(makerChecker))
        .thenRefused('SAME_USER'));

    it.each([
      [
        'the holder of the current secret (the original requester)',
        { ...maker, roles: ['maker', 'checker'] } as ActingUser,
        /you hold a secret of API key/,
      ],
    ])('when %s approves a rotation another maker asked for, then it is refused', (_who, by, message) =>
      given([requested, approved, rotationRequested]).when(approveRotation(by)).thenRefused('SAME_USER', message),
    );

    it('given a first rotation in its overlap, when either holder approves the next rotation, then it is refused; after the overlap the original requester still is', () => {
      const second: ApiKeyEvent = {
        type: 'ApiKeyRotationRequested',
        data: { keyID, requestedBy: 'u-maker-3', reason: 'again', requestedAt: T2 },
      };
      const history = [requested, approved, rotationRequested, rotated, second];
      const previousHolder: ActingUser = { ...maker, roles: ['checker'] };
      const currentHolder: ActingUser = { ...otherMaker, roles: ['checker'] };
      given(history)
        .when(approveRotation(previousHolder))
        .thenRefused('SAME_USER', /you hold a secret/);
      given(history)
        .when(approveRotation(currentHolder))
        .thenRefused('SAME_USER', /you hold a secret/);
      given(history)
        .when(approveRotation(previousHolder, '2026-01-04T00:00:00.000Z'))
        .thenRefused('SAME_USER', /you requested API key/);
      expect(() =>
        apiKeyDecider.decide(
          approveRotation(checker),
          history.reduce(apiKeyDecider.evolve, apiKeyDecider.initialState()),
        ),
      ).not.toThrow();
    });

    it("when the holder of the key's secret approves its revocation asked by another maker, then it is refused (one rule for every approval)", () =>
      given([
        requested,
        approved,
        { ...revocationRequested, data: { ...revocationRequested.data, requestedBy: 'u-maker-2' } },
      ])
        .when({ type: 'ApproveApiKeyRevocation', data: { keyID, by: { ...maker, roles: ['checker'] }, now: T2 } })
        .thenRefused('SAME_USER', /you hold a secret/));

    it('when a maker without the checker role approves a rotation, then it is refused', () =>
      given([requested, approved, rotationRequested]).when(approveRotation(maker)).thenRefused('ROLE_REQUIRED'));

    it('when a checker of another party approves a rotation, then it is refused', () =>
      given([requested, approved, rotationRequested]).when(approveRotation(foreignChecker)).thenRefused('OTHER_PARTY'));

    it('when no rotation is pending, then approving or rejecting one is refused', () => {
      given([requested, approved]).when(approveRotation(checker)).thenRefused('WRONG_STATE');
      given([requested, approved]).when(rejectRotation(checker)).thenRefused('WRONG_STATE');
    });

    it('when the key expired while the rotation waited, then approving it is refused', () =>
      given([requested, approved, rotationRequested])
        .when(approveRotation(checker, AFTER_EXPIRY))
        .thenRefused('KEY_EXPIRED'));

    it('when the key was revoked while the rotation waited, then approving it is refused', () =>
      given([
        requested,
        approved,
        rotationRequested,
        revocationRequested,
        { type: 'ApiKeyRevoked', data: { keyID, approvedBy: 'u-checker', revokedAt: T2 } },
      ])
        .when(approveRotation(checker))
        .thenRefused('WRONG_STATE'));

    it('when a checker rejects the rotation, then nothing changes but the request is gone', () => {
      given([requested, approved, rotationRequested])
        .when(rejectRotation(checker))
        .then([
          {
            type: 'ApiKeyRotationRejected',
            data: { keyID, rejectedBy: 'u-checker', reason: 'not now', rejectedAt: T2 },
          },
        ]);
      given([requested, approved, rotationRequested]).when(rejectRotation(otherMaker)).thenRefused('ROLE_REQUIRED');
    });

    it('when the maker who asked withdraws, then the request is gone; anyone else is refused', () => {
      given([requested, approved, rotationRequested])
        .when(withdrawRotation(otherMaker))
        .then([{ type: 'ApiKeyRotationWithdrawn', data: { keyID, withdrawnBy: otherMaker.userID, withdrawnAt: T2 } }]);
      given([requested, approved, rotationRequested]).when(withdrawRotation(maker)).thenRefused('SAME_USER');
      given([requested, approved]).when(withdrawRotation(maker)).thenRefused('WRONG_STATE');
    });

    it('given a rotation, then the state has the new hash, the previous hash until the overlap ends, the requester as holder, and the same expiry', () => {
      const before = fold([requested, approved]);
      const after = fold([requested, approved, rotationRequested, rotated]);
      expect(before).toMatchObject({ secretHolder: maker.userID, rotation: null });
      expect(fold([requested, approved, rotationRequested])).toMatchObject({
        status: 'active',
        rotation: { requestedBy: otherMaker.userID, reason: 'yearly rotation' },
      });
      expect(after).toMatchObject({
        status: 'active',
        secretHash: NEW_HASH,
        previousSecretHash: OLD_HASH,
        previousValidUntil: '2026-01-04T00:00:00.000Z',
        secretHolder: otherMaker.userID,
        rotation: null,
        keyID,
        expiresAt: (before as { expiresAt: string }).expiresAt,
        permissions: terms.permissions,
      });
    });

    it('given a rotation, then the accepted hashes are both during the overlap and only the new one after it', () => {
      const key = fold([requested, approved, rotationRequested, rotated]);
      if (key.status === 'none') throw new Error('key missing');
      expect(acceptedSecretHashes(key, '2026-01-03T23:59:59.999Z')).toEqual([NEW_HASH, OLD_HASH]);
      expect(acceptedSecretHashes(key, '2026-01-04T00:00:00.000Z')).toEqual([NEW_HASH]);
    });

    it('given a rejected or withdrawn rotation, then no rotation is pending and the secret is unchanged', () => {
      for (const ended of [
        { type: 'ApiKeyRotationRejected', data: { keyID, rejectedBy: 'u-checker', reason: null, rejectedAt: T2 } },
        { type: 'ApiKeyRotationWithdrawn', data: { keyID, withdrawnBy: otherMaker.userID, withdrawnAt: T2 } },
      ] as ApiKeyEvent[]) {
        expect(fold([requested, approved, rotationRequested, ended])).toMatchObject({
          rotation: null,
          secretHash: OLD_HASH,
          previousSecretHash: null,
        });
      }
    });

    it('given a revocation after a rotation, then neither secret is kept', () =>
      expect(
        fold([
          requested,
          approved,
          rotationRequested,
          rotated,
          revocationRequested,
          { type: 'ApiKeyRevoked', data: { keyID, approvedBy: 'u-checker', revokedAt: T2 } },
        ]),
      ).toMatchObject({ status: 'revoked', secretHash: null, previousSecretHash: null }));
  });
});

import { describe, expect, it } from 'vitest';
import { apiKeyDecider, type ActingUser } from '../../src/commands/api-keys.ts';
import {
  decideOnOperation,
  KEY_EXPIRED_REASON,
  KEY_REVOCATION_ACTOR,
  KEY_REVOKED_REASON,
  operationState,
  releaseWrites,
  SECRET_ENDED_REASON,
  type OperationDecision,
  type OperationState,
} from '../../src/commands/operations.ts';
import { DomainError, type DomainErrorCode } from '../../src/domain/errors.ts';
import type { ApiKeyEvent, OperationEvent, OperationRequested } from '../../src/domain/events.ts';
import { streams } from '../../src/domain/streams.ts';

/**
 * A pending operation's fate, pure: given the operation's past events and those of the key that created it,
 * when a checker approves or rejects it (or the key-revocation consumer rejects it), then these writes (or
 * this refusal).
 */

const acme = { type: 'merchant', id: 'm-acme' } as const;
const other = { type: 'merchant', id: 'm-other' } as const;
const T0 = '2026-03-10T09:00:00.000Z';
const T1 = '2026-03-10T10:00:00.000Z';
const OP = 'op_0123456789abcdef0123456789abcdef';
const KEY = 'key_AAAAAAAAAAAAAAAA';

const checker: ActingUser = { userID: 'u-checker', party: acme, roles: ['checker'] };
const maker: ActingUser = { userID: 'u-maker', party: acme, roles: ['maker'] };
const foreignChecker: ActingUser = { userID: 'u-foreign', party: other, roles: ['maker', 'checker'] };
const sameIdOtherType: ActingUser = {
  userID: 'u-distributor',
  party: { type: 'distributor', id: 'm-acme' },
  roles: ['checker'],
};
const admin: ActingUser = { userID: 'u-admin', party: null, roles: ['checker'] };
/** Both roles: requested the key in some tests, and so has seen its secret. */
const both: ActingUser = { userID: 'u-both', party: acme, roles: ['maker', 'checker'] };

function requestedData(change: Partial<OperationRequested['data']> = {}): OperationRequested['data'] {
  return {
    operationID: OP,
    party: acme,
    keyID: KEY,
    operationType: 'pay-merchant',
    amount: '100.50',
    fee: '1.25',
    payer: { kind: 'merchant', id: 'm-acme' },
    payee: { kind: 'merchant', id: 'm-shop' },
    payerName: 'Acme',
    payerShortCode: '1234',
    counterparty: { kind: 'merchant', id: 'm-shop', name: 'Shop', shortCode: '4242' },
    memo: 'invoice 7',
    cashOutFulfillmentType: null,
    cashOutFulfillmentID: null,
    volumeDay: '2026-03-10',
    createdAt: T0,
    ...change,
  };
}

const requested = (change: Partial<OperationRequested['data']> = {}): OperationEvent => ({
  type: 'OperationRequested',
  data: requestedData(change),
});
/** Requested with this actor in the metadata, as the store hands the event to a fold. */
const requestedAs = (
  actor: string,
  change: Partial<OperationRequested['data']> = {},
): OperationRequested & { metadata: { actor: string } } => ({
  type: 'OperationRequested',
  data: requestedData(change),
  metadata: { actor },
});
const approved: OperationEvent = {
  type: 'OperationApproved',
  data: { operationID: OP, approvedBy: 'u-checker', approvedAt: T1 },
};
const rejected: OperationEvent = {
  type: 'OperationRejected',
  data: { operationID: OP, rejectedBy: 'u-checker', reason: 'wrong payee', rejectedAt: T1 },
};
const submitted: OperationEvent = {
  type: 'OperationSubmitted',
  data: { operationID: OP, sequenceNumber: 7, submittedAt: T1 },
};
const completed: OperationEvent = {
  type: 'OperationCompleted',
  data: { operationID: OP, blockchainID: 'tx_1', walletOperationID: 'wo_1', sequenceNumber: 7, completedAt: T1 },
};
const failed: OperationEvent = {
  type: 'OperationFailed',
  data: { operationID: OP, lastError: 'ledger down', failedAt: T1 },
};

const approve = (by: ActingUser): OperationDecision => ({
  type: 'ApproveOperation',
  data: { operationID: OP, by, now: T1 },
});
const reject = (by: ActingUser, reason = 'not ours'): OperationDecision => ({
  type: 'RejectOperation',
  data: { operationID: OP, by, reason, now: T1 },
});

const rejectForRevokedKey: OperationDecision = {
  type: 'RejectOperationOfRevokedKey',
  data: { operationID: OP, now: T1 },
};
/** The key of these tests expires at KEY_EXPIRY; a decision at or after it sees the key expired. */
const KEY_EXPIRY = '2027-03-10T09:00:00.000Z';
const AFTER_EXPIRY = '2027-03-10T09:00:00.001Z';
const approveAt = (by: ActingUser, now: string): OperationDecision => ({
  type: 'ApproveOperation',
  data: { operationID: OP, by, now },
});
const rejectForExpiredKeyAt = (now: string): OperationDecision => ({
  type: 'RejectOperationOfExpiredKey',
  data: { operationID: OP, now },
});

// The key's lifecycle, as its stream holds it.
const keyRequested = (requestedBy: string): ApiKeyEvent => ({
  type: 'ApiKeyRequested',
  data: {
    keyID: KEY,
    party: acme,
    label: 'till',
    permissions: ['Perform Operations'],
    maxTransactionAmount: null,
    maxDailyVolume: null,
    allowedIPs: [],
    expiresInDays: 365,
    requestedBy,
    requestedAt: T0,
  },
});
const keyApproved: ApiKeyEvent = {
  type: 'ApiKeyApproved',
  data: {
    keyID: KEY,
    approvedBy: 'u-checker',
    approvedAt: T0,
    expiresAt: '2027-03-10T09:00:00.000Z',
    secretHash: 'ab'.repeat(32),
  },
};
const revocationRequested: ApiKeyEvent = {
  type: 'ApiKeyRevocationRequested',
  data: { keyID: KEY, requestedBy: 'u-maker', reason: 'leaked', requestedAt: T0 },
};
const keyRevoked: ApiKeyEvent = { type: 'ApiKeyRevoked', data: { keyID: KEY, approvedBy: 'u-checker', revokedAt: T0 } };
/** The key the operations of these tests were created with: requested by the maker, approved by the checker. */
const activeKey = [keyRequested('u-maker'), keyApproved];
const revokedKey = [...activeKey, revocationRequested, keyRevoked];
/** A rotation of the key asked by `maker` and approved by u-checker: the new secret is the maker's, the old one works 24 h more. */
const rotatedTo = (maker: string): ApiKeyEvent[] => [
  { type: 'ApiKeyRotationRequested', data: { keyID: KEY, requestedBy: maker, reason: 'handover', requestedAt: T0 } },
  {
    type: 'ApiKeyRotated',
    data: {
      keyID: KEY,
      approvedBy: 'u-checker',
      rotatedAt: T0,
      secretHash: `${maker}`.padEnd(64, '0'),
      previousValidUntil: '2026-03-11T09:00:00.000Z',
      secretHolder: maker,
    },
  },
];
/** A key that the user with both roles requested. */
const keyOfBoth = [keyRequested('u-both'), keyApproved];

function given(events: OperationEvent[], options: { key?: ApiKeyEvent[]; assetScale?: number } = {}) {
  const operation = events.reduce(operationState.evolve, operationState.initialState());
  const key = (options.key ?? activeKey).reduce(apiKeyDecider.evolve, apiKeyDecider.initialState());
  const decide = (command: OperationDecision) =>
    decideOnOperation(command, { operation, key }, options.assetScale ?? 2);
  return {
    when: (command: OperationDecision) => ({
      then: () => decide(command),
      thenRefused: (code: DomainErrorCode, message?: RegExp) => {
        let caught: unknown;
        try {
          decide(command);
        } catch (error) {
          caught = error;
        }
        expect(caught, 'the decision was accepted, not refused').toBeInstanceOf(DomainError);
        expect((caught as DomainError).code).toBe(code);
        if (message) expect((caught as DomainError).message).toMatch(message);
      },
    }),
  };
}

describe('operation state', () => {
  const fold = (events: OperationEvent[]): OperationState =>
    events.reduce(operationState.evolve, operationState.initialState());

  it('when nothing happened, then the operation does not exist', () => {
    expect(fold([])).toEqual({ status: 'none' });
  });

  it('when it was requested, then it is pending with its data and no decider', () => {
    expect(fold([requested()])).toMatchObject({ status: 'pending', operation: requestedData(), decidedBy: null });
  });

  it('when it was approved, then it is approved by the checker and keeps its data', () => {
    expect(fold([requested(), approved])).toMatchObject({
      status: 'approved',
      operation: requestedData(),
      decidedBy: 'u-checker',
    });
  });

  it('when it was rejected, then it is rejected by the checker and keeps its data', () => {
    expect(fold([requested(), rejected])).toMatchObject({
      status: 'rejected',
      operation: requestedData(),
      decidedBy: 'u-checker',
    });
  });

  it('when an approval or a rejection arrives for an operation never requested, then it still does not exist', () => {
    expect(fold([approved])).toEqual({ status: 'none' });
    expect(fold([rejected])).toEqual({ status: 'none' });
  });

  it('when the same events are folded twice, then the states are equal', () => {
    expect(fold([requested(), approved])).toEqual(fold([requested(), approved]));
  });

  it('when a console user requested it (actor user:<id>), then they are its requester; when a key or an operator did, then no user is', () => {
    expect(fold([requestedAs('user:u-maker', { keyID: null })])).toMatchObject({ requestedBy: 'u-maker' });
    expect(fold([requestedAs(`apikey:${KEY}`)])).toMatchObject({ requestedBy: null });
    expect(fold([requestedAs('operator:ops', { party: null, keyID: null })])).toMatchObject({ requestedBy: null });
    expect(fold([requested()])).toMatchObject({ requestedBy: null });
  });
});

describe('deciding on an operation', () => {
  describe('approving', () => {
    it("when a checker of the operation's party approves a pending operation, then OperationApproved is written to its stream only", () => {
      const { writes, result } = given([requested()]).when(approve(checker)).then();
      expect(writes).toEqual([
        {
          stream: streams.operation(OP),
          events: [{ type: 'OperationApproved', data: { operationID: OP, approvedBy: 'u-checker', approvedAt: T1 } }],
        },
      ]);
      // No explicit revision: the pipeline expects the revision the decision read.
      expect(writes[0]!.expectedRevision).toBeUndefined();
      expect(result).toEqual({ operationID: OP, state: 'approved' });
    });

    it('when a user with both roles approves, then it is approved', () =>
      expect(
        given([requested()])
          .when(approve({ ...checker, roles: ['maker', 'checker'] }))
          .then().result.state,
      ).toBe('approved'));

    it('when the operation does not exist, then it is refused as not found', () =>
      given([]).when(approve(checker)).thenRefused('NOT_FOUND'));

    it('when a checker of another party approves, then it is refused', () =>
      given([requested()]).when(approve(foreignChecker)).thenRefused('OTHER_PARTY'));

    it("when a checker of a distributor with the same ID approves a merchant's operation, then it is refused", () =>
      given([requested()]).when(approve(sameIdOtherType)).thenRefused('OTHER_PARTY'));

    it('when a platform administrator without a party approves, then it is refused', () =>
      given([requested()]).when(approve(admin)).thenRefused('OTHER_PARTY'));

    it('when a user of the party without the checker role approves, then it is refused', () =>
      given([requested()]).when(approve(maker)).thenRefused('ROLE_REQUIRED'));

    it('when a user of another party without the checker role approves, then the party is reported (nothing about the operation is revealed)', () =>
      given([requested()])
        .when(approve({ ...foreignChecker, roles: ['maker'] }))
        .thenRefused('OTHER_PARTY'));

    it('when the operation is already approved, then a second approval is refused', () =>
      given([requested(), approved]).when(approve(checker)).thenRefused('WRONG_STATE'));

    it('when the operation was rejected, then it cannot be approved', () =>
      given([requested(), rejected]).when(approve(checker)).thenRefused('WRONG_STATE'));

    it.each([
      ['submitted', [approved, submitted]],
      ['completed', [approved, submitted, completed]],
      ['failed', [approved, failed]],
    ] as const)('when the operation is %s, then it can be neither approved nor rejected', (_status, after) => {
      given([requested(), ...after])
        .when(approve(checker))
        .thenRefused('WRONG_STATE');
      given([requested(), ...after])
        .when(reject(checker))
        .thenRefused('WRONG_STATE');
    });

    it("when the operation came from another channel (no party), then no party's checker can approve it", () =>
      given([requested({ party: null, keyID: null })])
        .when(approve(checker))
        .thenRefused('OTHER_PARTY'));
  });

  describe('segregation of duties', () => {
    it("when the user who requested the key that created it approves, then it is refused: only they have seen the key's secret", () =>
      given([requested({ secretGeneration: 1 })], { key: keyOfBoth })
        .when(approve(both))
        .thenRefused('SAME_USER', /you were handed the secret of API key key_\w+ that created it/));

    it('when an operation recorded no secret generation (created before they were), then no holder the key has had may approve it', () => {
      given([requested()], { key: keyOfBoth })
        .when(approve(both))
        .thenRefused('SAME_USER', /you were handed the secret/);
      given([requested()], { key: [...activeKey, ...rotatedTo('u-both')] })
        .when(approve(both))
        .thenRefused('SAME_USER');
    });

    describe("after a rotation (the new secret goes to the rotation's maker)", () => {
      /** u-maker requested the key; u-both asked to rotate it, and u-checker approved: u-both holds the new secret. */
      const rotated = [...activeKey, ...rotatedTo('u-both')];
      const afterOverlap = '2026-03-12T10:00:00.000Z';
      const other: ActingUser = { userID: 'u-other', party: acme, roles: ['checker'] };

      it.each([
        ['the new holder, an operation made with the new secret', both, 2, T1, /you were handed the secret of API key/],
        [
          'the new holder, an operation made with the old secret during the overlap',
          both,
          1,
          T1,
          /you hold a secret of API key \w+ that still works/,
        ],
        [
          'the new holder, an operation made with the old secret after the overlap',
          both,
          1,
          afterOverlap,
          /you hold a secret/,
        ],
        [
          'the original requester, an operation made with the new secret during the overlap',
          { ...maker, roles: ['maker', 'checker'] },
          2,
          T1,
          /you hold a secret/,
        ],
        [
          'the original requester, an operation made with the old secret after the overlap',
          { ...maker, roles: ['maker', 'checker'] },
          1,
          afterOverlap,
          /you were handed the secret/,
        ],
        [
          'the original requester, an operation made with the new secret after the overlap',
          { ...maker, roles: ['maker', 'checker'] },
          2,
          afterOverlap,
          /you requested API key/,
        ],
      ] as const)('when %s, then it is refused', (_case, by, generation, now, message) =>
        given([requested({ secretGeneration: generation })], { key: rotated })
          .when(approveAt(by as ActingUser, now))
          .thenRefused('SAME_USER', message),
      );

      it('when a checker who never held a secret of the key approves, then it is approved, whichever secret made it', () => {
        expect(
          given([requested({ secretGeneration: 2 })], { key: rotated })
            .when(approve(other))
            .then().result.state,
        ).toBe('approved');
        expect(
          given([requested({ secretGeneration: 1 })], { key: rotated })
            .when(approve(other))
            .then().result.state,
        ).toBe('approved');
      });

      it('when the checker who approved the rotation approves an operation of the new secret, then it is approved (they never saw it)', () =>
        expect(
          given([requested({ secretGeneration: 2 })], { key: rotated })
            .when(approve(checker))
            .then().result.state,
        ).toBe('approved'));

      it("when the previous secret ended at its holder's departure, then its holder is no longer one who holds a working secret", () => {
        // A later rotation by u-other leaves u-both the previous holder; their departure ends that secret.
        const again = [
          ...rotated,
          ...rotatedTo('u-other'),
          {
            type: 'ApiKeyPreviousSecretEnded',
            data: { keyID: KEY, endedAt: T1, departedUserID: 'u-both' },
          } as ApiKeyEvent,
        ];
        const bothChecker: ActingUser = { ...both };
        given([requested({ secretGeneration: 3 })], { key: [...rotated, ...rotatedTo('u-other')] })
          .when(approve(bothChecker))
          .thenRefused('SAME_USER', /you hold a secret/);
        expect(
          given([requested({ secretGeneration: 3 })], { key: again })
            .when(approve(bothChecker))
            .then().result.state,
        ).toBe('approved');
      });
    });

    it('when another checker approves an operation of that key, then it is approved', () =>
      expect(given([requested()], { key: keyOfBoth }).when(approve(checker)).then().result.state).toBe('approved'));

    it('when the checker who approved the key approves its operation, then it is approved (they never saw the secret)', () =>
      expect(given([requested()], { key: activeKey }).when(approve(checker)).then().result.state).toBe('approved'));

    it('when the user who requested the key rejects its operation, then it is rejected: a rejection moves no money', () =>
      expect(given([requested()], { key: keyOfBoth }).when(reject(both)).then().result.state).toBe('rejected'));

    it('when a user requested the operation through a channel without a key, then they cannot approve it, and another checker can', () => {
      const byChecker = requestedAs('user:u-checker', { keyID: null, volumeDay: null });
      given([byChecker])
        .when(approve(checker))
        .thenRefused('SAME_USER', /you requested it/);
      expect(given([byChecker]).when(approve(both)).then().result.state).toBe('approved');
    });

    it('when the key has been revoked, then the operation cannot be approved', () =>
      given([requested()], { key: revokedKey })
        .when(approve(checker))
        .thenRefused('WRONG_STATE', /has been revoked/));

    it("when the key's revocation is only requested (the key still works), then the operation can be approved", () =>
      expect(
        given([requested()], { key: [...activeKey, revocationRequested] })
          .when(approve(checker))
          .then().result.state,
      ).toBe('approved'));

    it('when the key has expired by the time of the approval, then the operation cannot be approved (KEY_EXPIRED)', () => {
      given([requested()], { key: activeKey })
        .when(approveAt(checker, KEY_EXPIRY))
        .thenRefused('KEY_EXPIRED', /API key key_A+ that created it expired at 2027-03-10T09:00:00.000Z/);
      given([requested()], { key: [...activeKey, revocationRequested] })
        .when(approveAt(checker, AFTER_EXPIRY))
        .thenRefused('KEY_EXPIRED');
    });

    it('when the approval comes just before the key expires, then it is approved', () =>
      expect(
        given([requested()], { key: activeKey }).when(approveAt(checker, '2027-03-10T08:59:59.999Z')).then().result
          .state,
      ).toBe('approved'));

    it('when the key has expired, then a checker can still reject the operation', () =>
      expect(
        given([requested()], { key: activeKey })
          .when({ type: 'RejectOperation', data: { operationID: OP, by: checker, reason: 'late', now: AFTER_EXPIRY } })
          .then().result.state,
      ).toBe('rejected'));

    it('when the key has been revoked, then a checker can still reject the operation', () =>
      expect(given([requested()], { key: revokedKey }).when(reject(checker)).then().result.state).toBe('rejected'));

    it("when the decision is not given the state of the operation's key, then it fails as a bug, not as a refusal", () => {
      expect(() => given([requested()], { key: [] }).when(approve(checker)).then()).toThrow(
        /needs the state of API key/,
      );
      expect(() => given([requested()], { key: [] }).when(approve(checker)).then()).not.toThrow(DomainError);
    });
  });

  describe('rejecting for a revoked key (the key-revocation consumer)', () => {
    it('when the operation is pending and its key revoked, then it is rejected by system:key-revocation with "API key revoked", and its hold and volume are released', () => {
      const { writes, result } = given([requested()], { key: revokedKey }).when(rejectForRevokedKey).then();
      expect(writes).toEqual([
        {
          stream: streams.operation(OP),
          events: [
            {
              type: 'OperationRejected',
              data: { operationID: OP, rejectedBy: KEY_REVOCATION_ACTOR, reason: KEY_REVOKED_REASON, rejectedAt: T1 },
            },
          ],
        },
        ...releaseWrites(requestedData(), 'rejected', 2),
      ]);
      expect(KEY_REVOCATION_ACTOR).toBe('system:key-revocation');
      expect(KEY_REVOKED_REASON).toBe('API key revoked');
      expect(result).toEqual({ operationID: OP, state: 'rejected' });
    });

    it.each([
      ['active', activeKey],
      ['waiting for its revocation', [...activeKey, revocationRequested]],
    ] as const)('when the key is %s, then nothing is written and the operation stays pending', (_status, key) => {
      expect(
        given([requested()], { key: [...key] })
          .when(rejectForRevokedKey)
          .then(),
      ).toEqual({ writes: [], result: { operationID: OP, state: 'pending' } });
    });

    it.each([
      ['approved', [approved]],
      ['rejected', [rejected]],
      ['failed', [approved, failed]],
    ] as const)(
      'when the operation is already %s, then nothing is written (holds are never released twice)',
      (status, after) => {
        expect(
          given([requested(), ...after], { key: revokedKey })
            .when(rejectForRevokedKey)
            .then(),
        ).toEqual({ writes: [], result: { operationID: OP, state: status } });
      },
    );

    it('when the operation does not exist, then nothing is written', () =>
      expect(given([], { key: revokedKey }).when(rejectForRevokedKey).then()).toEqual({
        writes: [],
        result: { operationID: OP, state: 'none' },
      }));

    it('when the operation has no key (another channel), then nothing is written', () =>
      expect(
        given([requested({ keyID: null })], { key: revokedKey })
          .when(rejectForRevokedKey)
          .then().writes,
      ).toEqual([]));
  });

  describe("rejecting for a secret ended at its holder's departure (the key-revocation consumer)", () => {
    // u-maker requested the key; u-both rotated it; u-maker left during the overlap: generation 1 ended.
    const ended = [
      ...activeKey,
      ...rotatedTo('u-both'),
      {
        type: 'ApiKeyPreviousSecretEnded',
        data: { keyID: KEY, endedAt: T1, departedUserID: 'u-maker' },
      } as ApiKeyEvent,
    ];

    it('when the operation was made with the ended secret, then it is rejected with the reason, and no checker may approve it', () => {
      const { writes } = given([requested({ secretGeneration: 1 })], { key: ended })
        .when(rejectForRevokedKey)
        .then();
      expect(writes[0]).toEqual({
        stream: streams.operation(OP),
        events: [
          {
            type: 'OperationRejected',
            data: { operationID: OP, rejectedBy: KEY_REVOCATION_ACTOR, reason: SECRET_ENDED_REASON, rejectedAt: T1 },
          },
        ],
      });
      given([requested({ secretGeneration: 1 })], { key: ended })
        .when(approve(checker))
        .thenRefused('WRONG_STATE', /ended with its holder’s departure/);
    });

    it('when the operation was made with the current secret, or recorded no secret, then it stays pending', () => {
      expect(
        given([requested({ secretGeneration: 2 })], { key: ended })
          .when(rejectForRevokedKey)
          .then().writes,
      ).toEqual([]);
      expect(given([requested()], { key: ended }).when(rejectForRevokedKey).then().writes).toEqual([]);
      expect(
        given([requested({ secretGeneration: 2 })], { key: ended })
          .when(approve(checker))
          .then().result.state,
      ).toBe('approved');
    });
  });

  describe("rejecting for an expired key (the key-revocation consumer's sweep)", () => {
    it('when the operation is pending and its key expired, then it is rejected by system:key-revocation with "API key expired", and its hold and volume are released', () => {
      const { writes, result } = given([requested()], { key: activeKey })
        .when(rejectForExpiredKeyAt(AFTER_EXPIRY))
        .then();
      expect(writes).toEqual([
        {
          stream: streams.operation(OP),
          events: [
            {
              type: 'OperationRejected',
              data: {
                operationID: OP,
                rejectedBy: KEY_REVOCATION_ACTOR,
                reason: KEY_EXPIRED_REASON,
                rejectedAt: AFTER_EXPIRY,
              },
            },
          ],
        },
        ...releaseWrites(requestedData(), 'rejected', 2),
      ]);
      expect(KEY_EXPIRED_REASON).toBe('API key expired');
      expect(result).toEqual({ operationID: OP, state: 'rejected' });
    });

    it('when the key waits for its revocation and has expired, then the operation is rejected too', () =>
      expect(
        given([requested()], { key: [...activeKey, revocationRequested] })
          .when(rejectForExpiredKeyAt(AFTER_EXPIRY))
          .then().result.state,
      ).toBe('rejected'));

    it('when the key has not expired yet, then nothing is written and the operation stays pending', () =>
      expect(
        given([requested()], { key: activeKey }).when(rejectForExpiredKeyAt('2027-03-10T08:59:59.999Z')).then(),
      ).toEqual({ writes: [], result: { operationID: OP, state: 'pending' } }));

    it('when the key was revoked (the revocation rejects its operations), then nothing is written', () =>
      expect(given([requested()], { key: revokedKey }).when(rejectForExpiredKeyAt(AFTER_EXPIRY)).then().writes).toEqual(
        [],
      ));

    it.each([
      ['approved', [approved]],
      ['rejected', [rejected]],
    ] as const)(
      'when the operation is already %s (another process swept first), then nothing is written (holds are never released twice)',
      (status, after) => {
        expect(
          given([requested(), ...after], { key: activeKey })
            .when(rejectForExpiredKeyAt(AFTER_EXPIRY))
            .then(),
        ).toEqual({ writes: [], result: { operationID: OP, state: status } });
      },
    );

    it('when the operation does not exist, or has no key (another channel), then nothing is written', () => {
      expect(given([], { key: activeKey }).when(rejectForExpiredKeyAt(AFTER_EXPIRY)).then()).toEqual({
        writes: [],
        result: { operationID: OP, state: 'none' },
      });
      expect(
        given([requested({ keyID: null })], { key: activeKey })
          .when(rejectForExpiredKeyAt(AFTER_EXPIRY))
          .then().writes,
      ).toEqual([]);
    });
  });

  describe('rejecting', () => {
    it('when a checker rejects a pending operation, then OperationRejected is written with HoldReleased (amount + fee) and VolumeReleased, the releases at any revision', () => {
      const { writes, result } = given([requested()]).when(reject(checker, 'wrong payee')).then();
      expect(writes).toEqual([
        {
          stream: streams.operation(OP),
          events: [
            {
              type: 'OperationRejected',
              data: { operationID: OP, rejectedBy: 'u-checker', reason: 'wrong payee', rejectedAt: T1 },
            },
          ],
        },
        {
          stream: streams.wallet({ kind: 'merchant', id: 'm-acme' }),
          events: [
            {
              type: 'HoldReleased',
              data: {
                wallet: { kind: 'merchant', id: 'm-acme' },
                operationID: OP,
                amount: '101.75',
                reason: 'rejected',
              },
            },
          ],
          expectedRevision: 'any',
        },
        {
          stream: streams.keyVolume(KEY, '2026-03-10'),
          events: [
            { type: 'VolumeReleased', data: { keyID: KEY, day: '2026-03-10', operationID: OP, amount: '100.50' } },
          ],
          expectedRevision: 'any',
        },
      ]);
      expect(writes[0]!.expectedRevision).toBeUndefined();
      expect(result).toEqual({ operationID: OP, state: 'rejected' });
    });

    it('when the operation has no volume day (its key had no daily limit), then no VolumeReleased is written', () => {
      const { writes } = given([requested({ volumeDay: null })])
        .when(reject(checker))
        .then();
      expect(writes.map((w) => w.stream)).toEqual([
        streams.operation(OP),
        streams.wallet({ kind: 'merchant', id: 'm-acme' }),
      ]);
      expect(writes.flatMap((w) => w.events).map((e) => e.type)).toEqual(['OperationRejected', 'HoldReleased']);
    });

    it("when the payer is an individual (a cash-out-fulfillment), then the hold is released on the individual's wallet", () => {
      const individual = { kind: 'individual', id: '+2348123456781' } as const;
      const { writes } = given([
        requested({ operationType: 'cash-out-fulfillment', payer: individual, fee: '0.00', volumeDay: null }),
      ])
        .when(reject(checker))
        .then();
      expect(writes[1]).toEqual({
        stream: streams.wallet(individual),
        events: [
          { type: 'HoldReleased', data: { wallet: individual, operationID: OP, amount: '100.50', reason: 'rejected' } },
        ],
        expectedRevision: 'any',
      });
    });

    it('when the asset scale is 3, then the released hold is formatted at 3 places', () => {
      const { writes } = given([requested()], { assetScale: 3 }).when(reject(checker)).then();
      expect(writes[1]!.events[0]!.data).toMatchObject({ amount: '101.750' });
    });

    it('when the operation does not exist, then rejecting is refused as not found', () =>
      given([]).when(reject(checker)).thenRefused('NOT_FOUND'));

    it('when a checker of another party rejects, then it is refused', () =>
      given([requested()]).when(reject(foreignChecker)).thenRefused('OTHER_PARTY'));

    it('when a maker rejects, then it is refused', () =>
      given([requested()]).when(reject(maker)).thenRefused('ROLE_REQUIRED'));

    it('when the operation is approved, then it cannot be rejected', () =>
      given([requested(), approved]).when(reject(checker)).thenRefused('WRONG_STATE'));

    it('when the operation is already rejected, then a second rejection is refused (holds are not released twice)', () =>
      given([requested(), rejected]).when(reject(checker)).thenRefused('WRONG_STATE'));
  });

  describe('release writes', () => {
    it('when an operation failed, then the same releases are written with the reason failed', () => {
      const writes = releaseWrites(requestedData(), 'failed', 2);
      expect(writes.map((w) => w.expectedRevision)).toEqual(['any', 'any']);
      expect(writes[0]!.events[0]).toEqual({
        type: 'HoldReleased',
        data: { wallet: { kind: 'merchant', id: 'm-acme' }, operationID: OP, amount: '101.75', reason: 'failed' },
      });
      expect(writes[1]!.events[0]!.type).toBe('VolumeReleased');
    });

    it('when the operation has no key (another channel), then only the hold is released', () => {
      expect(releaseWrites(requestedData({ keyID: null }), 'failed', 2).map((w) => w.events[0]!.type)).toEqual([
        'HoldReleased',
      ]);
    });
  });
});

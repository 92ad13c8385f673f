import { describe, expect, it } from 'vitest';
import type { ActingUser } from '../../src/commands/api-keys.ts';
import { fold } from '../../src/commands/decider.ts';
import { signingSecrets, webhookEndpointDecider } from '../../src/commands/webhook-endpoints.ts';
import type { SealedWebhookSecret, WebhookEndpointEvent, WebhookEndpointRequested } from '../../src/domain/events.ts';
import { deciderSpec } from '../support/decider-spec.ts';

const given = deciderSpec(webhookEndpointDecider);
const acme = { type: 'merchant', id: 'm-acme' } as const;
const other = { type: 'distributor', id: 'd-other' } as const;

const maker: ActingUser = { userID: 'u-maker', party: acme, roles: ['maker'] };
const checker: ActingUser = { userID: 'u-checker', party: acme, roles: ['checker'] };
const makerChecker: ActingUser = { userID: 'u-both', party: acme, roles: ['maker', 'checker'] };
const foreign: ActingUser = { userID: 'u-foreign', party: other, roles: ['maker', 'checker'] };
const nobody: ActingUser = { userID: 'u-none', party: acme, roles: [] };

const T0 = '2026-01-01T00:00:00.000Z';
const T1 = '2026-01-02T00:00:00.000Z';
const T2 = '2026-01-03T00:00:00.000Z';

const endpointID = 'whe_AAAAAAAAAAAAAAAA';
const terms = {
  endpointID,
  party: acme,
  url: 'https://shop.example/hooks',
  eventTypes: ['operation.completed' as const, 'payment.received' as const],
};
const sealed: SealedWebhookSecret = { sealedWith: '0123456789abcdef', iv: 'aXY=', tag: 'dGFn', data: 'ZGF0YQ==' };

const requested: WebhookEndpointRequested = {
  type: 'WebhookEndpointRequested',
  data: { ...terms, requestedBy: maker.userID, requestedAt: T0 },
};
const approved: WebhookEndpointEvent = {
  type: 'WebhookEndpointApproved',
  data: {
    endpointID,
    approvedBy: checker.userID,
    approvedAt: T1,
    secret: sealed,
    signatureScheme: 'standard-webhooks',
  },
};
/** An approval written before signature schemes were recorded: the endpoint signs the legacy (stripe-v1) way. */
const approvedLegacy: WebhookEndpointEvent = {
  type: 'WebhookEndpointApproved',
  data: { endpointID, approvedBy: checker.userID, approvedAt: T1, secret: sealed },
};
const rejected: WebhookEndpointEvent = {
  type: 'WebhookEndpointRejected',
  data: { endpointID, rejectedBy: checker.userID, reason: 'unknown host', rejectedAt: T1 },
};
const disabled: WebhookEndpointEvent = {
  type: 'WebhookEndpointDisabled',
  data: { endpointID, disabledBy: maker.userID, reason: 'shop closed', disabledAt: T2 },
};

const approve = (by: ActingUser) => ({
  type: 'ApproveWebhookEndpoint' as const,
  data: { endpointID, by, secret: sealed, now: T1 },
});
const reject = (by: ActingUser) => ({
  type: 'RejectWebhookEndpoint' as const,
  data: { endpointID, by, reason: 'unknown host', now: T1 },
});
const disable = (by: ActingUser | 'system') => ({
  type: 'DisableWebhookEndpoint' as const,
  data: { endpointID, by, reason: 'shop closed', now: T2 },
});

describe('webhook endpoint lifecycle', () => {
  describe('registering an endpoint', () => {
    it('when a maker registers an endpoint for their party, then it is pending with the url, the event types and the maker', () =>
      given([])
        .when({ type: 'RequestWebhookEndpoint', data: { ...terms, by: maker, now: T0 } })
        .then([requested]));

    it('when a user without the maker role registers an endpoint, then it is refused', () =>
      given([])
        .when({ type: 'RequestWebhookEndpoint', data: { ...terms, by: checker, now: T0 } })
        .thenRefused('ROLE_REQUIRED'));

    it('when a maker registers an endpoint for another party, then it is refused', () =>
      given([])
        .when({ type: 'RequestWebhookEndpoint', data: { ...terms, by: foreign, now: T0 } })
        .thenRefused('OTHER_PARTY'));

    it('when the endpoint id is already used, then the registration is refused', () =>
      given([requested])
        .when({ type: 'RequestWebhookEndpoint', data: { ...terms, by: maker, now: T1 } })
        .thenRefused('ALREADY_EXISTS'));
  });

  describe('approving an endpoint', () => {
    it('when a different checker of the party approves, then it is active with the sealed secret, signed the Standard Webhooks way', () =>
      given([requested]).when(approve(checker)).then([approved]));

    it('given an approval that names no scheme (written before schemes), then the endpoint signs the legacy stripe-v1 way', () => {
      const state = fold(webhookEndpointDecider, webhookEndpointDecider.initialState(), [requested, approvedLegacy]);
      expect(state).toMatchObject({ status: 'active', signatureScheme: 'stripe-v1', previousSignatureScheme: null });
      expect(fold(webhookEndpointDecider, webhookEndpointDecider.initialState(), [requested, approved])).toMatchObject({
        signatureScheme: 'standard-webhooks',
      });
    });

    it('when the maker approves their own request, then it is refused even with the checker role', () =>
      given([{ ...requested, data: { ...requested.data, requestedBy: makerChecker.userID } }])
        .when(approve(makerChecker))
        .thenRefused('SAME_USER'));

    it('when a user without the checker role approves, then it is refused', () =>
      given([requested])
        .when(approve({ ...maker, userID: 'u-maker-2' }))
        .thenRefused('ROLE_REQUIRED'));

    it('when a checker of another party approves, then it is refused', () =>
      given([requested]).when(approve(foreign)).thenRefused('OTHER_PARTY'));

    it('when the endpoint does not exist, then approval is refused as not found', () =>
      given([]).when(approve(checker)).thenRefused('NOT_FOUND'));

    it('when the endpoint is already active, then a second approval is refused', () =>
      given([requested, approved]).when(approve(checker)).thenRefused('WRONG_STATE'));

    it('when the endpoint was rejected, then it can never be approved', () =>
      given([requested, rejected]).when(approve(checker)).thenRefused('WRONG_STATE'));
  });

  describe('rejecting an endpoint', () => {
    it('when a different checker rejects a pending endpoint, then it is rejected with the reason', () =>
      given([requested]).when(reject(checker)).then([rejected]));

    it('when the maker rejects their own request, then it is refused', () =>
      given([{ ...requested, data: { ...requested.data, requestedBy: makerChecker.userID } }])
        .when(reject(makerChecker))
        .thenRefused('SAME_USER'));

    it('when the endpoint is active, then it cannot be rejected (it is disabled instead)', () =>
      given([requested, approved]).when(reject(checker)).thenRefused('WRONG_STATE'));

    it('when the endpoint does not exist, then rejection is refused as not found', () =>
      given([]).when(reject(checker)).thenRefused('NOT_FOUND'));
  });

  describe('disabling an endpoint', () => {
    it('when a maker of the party disables an active endpoint, then it is disabled at once, without a checker', () =>
      given([requested, approved]).when(disable(maker)).then([disabled]));

    it('when a checker of the party disables it, then it is disabled too', () =>
      given([requested, approved])
        .when(disable(checker))
        .then([{ ...disabled, data: { ...disabled.data, disabledBy: checker.userID } } as WebhookEndpointEvent]));

    it('when the system disables it after a day of failures, then the event says system', () =>
      given([requested, approved])
        .when(disable('system'))
        .then([{ ...disabled, data: { ...disabled.data, disabledBy: 'system' } } as WebhookEndpointEvent]));

    it('when a user of another party disables it, then it is refused', () =>
      given([requested, approved]).when(disable(foreign)).thenRefused('OTHER_PARTY'));

    it('when a user with neither role disables it, then it is refused', () =>
      given([requested, approved]).when(disable(nobody)).thenRefused('ROLE_REQUIRED'));

    it('when the endpoint is still pending, then it cannot be disabled (it is rejected instead)', () =>
      given([requested]).when(disable(maker)).thenRefused('WRONG_STATE'));

    it('when the endpoint is already disabled, then disabling again is refused', () =>
      given([requested, approved, disabled]).when(disable('system')).thenRefused('WRONG_STATE'));

    it('when the endpoint does not exist, then disabling is refused as not found', () =>
      given([]).when(disable(maker)).thenRefused('NOT_FOUND'));
  });

  describe('evolving the state', () => {
    const state = (events: WebhookEndpointEvent[]) =>
      fold(webhookEndpointDecider, webhookEndpointDecider.initialState(), events);

    it('given a registration, then the state is pending with no secret', () =>
      expect(state([requested])).toEqual({
        ...terms,
        status: 'pending',
        requestedBy: maker.userID,
        requestedAt: T0,
        decidedBy: null,
        decidedAt: null,
        reason: null,
        disabledBy: null,
        disabledAt: null,
        rotation: null,
        rotatedAt: null,
        signatureScheme: null,
        previousSignatureScheme: null,
        previousValidUntil: null,
        secret: null,
        previousSecret: null,
        secretHolder: maker.userID,
        secretHolders: [],
      }));

    it('given an approval, then the state is active with the approver and the sealed secret', () =>
      expect(state([requested, approved])).toMatchObject({
        status: 'active',
        decidedBy: checker.userID,
        decidedAt: T1,
        secret: sealed,
      }));

    it('given a rejection, then the state is rejected', () =>
      expect(state([requested, rejected])).toMatchObject({ status: 'rejected', secret: null }));

    it('given a disabling, then the state is disabled and says by whom', () =>
      expect(state([requested, approved, disabled])).toMatchObject({ status: 'disabled', disabledBy: maker.userID }));

    it('given an event before any registration, then the state stays none', () =>
      expect(state([approved])).toEqual({ status: 'none' }));
  });
  describe('the departure of the maker who holds its secret', () => {
    const retire = (userID: string) => ({
      type: 'RetireWebhookEndpointOfDepartedUser' as const,
      data: { endpointID, userID, reason: 'maker left', now: T2 },
    });

    it('when its maker departs while it is active, then the system disables it naming them', () =>
      given([requested, approved])
        .when(retire(maker.userID))
        .then([
          {
            type: 'WebhookEndpointDisabled',
            data: {
              endpointID,
              disabledBy: 'system',
              reason: 'maker left',
              disabledAt: T2,
              departedUserID: maker.userID,
            },
          },
        ]));

    it('when its maker departs before a checker decided, then the system rejects it', () =>
      given([requested])
        .when(retire(maker.userID))
        .then([
          {
            type: 'WebhookEndpointRejected',
            data: {
              endpointID,
              rejectedBy: 'system',
              reason: 'maker left',
              rejectedAt: T2,
              departedUserID: maker.userID,
            },
          },
        ]));

    it('when another user departs, or it is already disabled, then nothing happens', () => {
      given([requested, approved]).when(retire(checker.userID)).then([]);
      given([requested, approved, disabled]).when(retire(maker.userID)).then([]);
    });
  });

  describe('rotating the signing secret', () => {
    const newSealed: SealedWebhookSecret = {
      sealedWith: '0123456789abcdef',
      iv: 'bmV3',
      tag: 'bmV3dGFn',
      data: 'bmV3ZGF0YQ==',
    };
    const otherMaker: ActingUser = { userID: 'u-maker-2', party: acme, roles: ['maker'] };
    const ask = (by: ActingUser) => ({
      type: 'RequestWebhookSecretRotation' as const,
      data: { endpointID, by, reason: 'secret leaked in a log', now: T2 },
    });
    const approveRotation = (by: ActingUser) => ({
      type: 'ApproveWebhookSecretRotation' as const,
      data: { endpointID, by, secret: newSealed, overlapHours: 2, now: T2 },
    });
    const rejectRotation = (by: ActingUser) => ({
      type: 'RejectWebhookSecretRotation' as const,
      data: { endpointID, by, reason: null, now: T2 },
    });
    const withdraw = (by: ActingUser) => ({
      type: 'WithdrawWebhookSecretRotation' as const,
      data: { endpointID, by, now: T2 },
    });
    const rotationRequested: WebhookEndpointEvent = {
      type: 'WebhookSecretRotationRequested',
      data: { endpointID, requestedBy: otherMaker.userID, reason: 'secret leaked in a log', requestedAt: T2 },
    };
    const rotated: WebhookEndpointEvent = {
      type: 'WebhookSecretRotated',
      data: {
        endpointID,
        approvedBy: checker.userID,
        rotatedAt: T2,
        secret: newSealed,
        previousValidUntil: '2026-01-03T02:00:00.000Z',
        secretHolder: otherMaker.userID,
        signatureScheme: 'standard-webhooks',
      },
    };
    const state = (events: WebhookEndpointEvent[]) =>
      fold(webhookEndpointDecider, webhookEndpointDecider.initialState(), events);

    it("when a maker of the party asks to rotate an active endpoint's secret, then a rotation is pending", () =>
      given([requested, approved]).when(ask(otherMaker)).then([rotationRequested]));

    it('when a checker without the maker role, a maker of another party, or anyone on a pending or disabled endpoint asks, then it is refused', () => {
      given([requested, approved]).when(ask(checker)).thenRefused('ROLE_REQUIRED');
      given([requested, approved]).when(ask(foreign)).thenRefused('OTHER_PARTY');
      given([requested]).when(ask(maker)).thenRefused('WRONG_STATE');
      given([requested, approved, disabled]).when(ask(maker)).thenRefused('WRONG_STATE');
    });

    it('when a rotation is already pending, then another request is refused', () =>
      given([requested, approved, rotationRequested]).when(ask(maker)).thenRefused('WRONG_STATE'));

    it('when a different checker approves, then the secret is rotated, held for the requester, the old one signing until the overlap ends', () =>
      given([requested, approved, rotationRequested]).when(approveRotation(checker)).then([rotated]));

    it('when the requester approves their own rotation, then it is refused', () =>
      given([
        requested,
        approved,
        { ...rotationRequested, data: { ...rotationRequested.data, requestedBy: makerChecker.userID } },
      ])
        .when(approveRotation(makerChecker))
        .thenRefused('SAME_USER'));

    it('when a maker, a checker of another party, or nobody pending approves, then it is refused', () => {
      given([requested, approved, rotationRequested]).when(approveRotation(maker)).thenRefused('ROLE_REQUIRED');
      given([requested, approved, rotationRequested]).when(approveRotation(foreign)).thenRefused('OTHER_PARTY');
      given([requested, approved]).when(approveRotation(checker)).thenRefused('WRONG_STATE');
    });

    it('when the endpoint was disabled while the rotation waited, then approving it is refused', () =>
      given([requested, approved, rotationRequested, disabled])
        .when(approveRotation(checker))
        .thenRefused('WRONG_STATE'));

    it('when a checker rejects or the requester withdraws, then the request ends; others are refused', () => {
      given([requested, approved, rotationRequested])
        .when(rejectRotation(checker))
        .then([
          {
            type: 'WebhookSecretRotationRejected',
            data: { endpointID, rejectedBy: checker.userID, reason: null, rejectedAt: T2 },
          },
        ]);
      given([requested, approved, rotationRequested]).when(rejectRotation(otherMaker)).thenRefused('ROLE_REQUIRED');
      given([requested, approved, rotationRequested])
        .when(withdraw(otherMaker))
        .then([
          {
            type: 'WebhookSecretRotationWithdrawn',
            data: { endpointID, withdrawnBy: otherMaker.userID, withdrawnAt: T2 },
          },
        ]);
      given([requested, approved, rotationRequested]).when(withdraw(maker)).thenRefused('SAME_USER');
      given([requested, approved]).when(withdraw(maker)).thenRefused('WRONG_STATE');
    });

    it('given a rotation, then the state has the new secret, the previous one until the overlap ends and the requester as holder', () => {
      expect(state([requested, approved])).toMatchObject({ secretHolder: maker.userID, rotation: null });
      expect(state([requested, approved, rotationRequested])).toMatchObject({
        rotation: { requestedBy: otherMaker.userID, reason: 'secret leaked in a log', requestedAt: T2 },
      });
      const after = state([requested, approved, rotationRequested, rotated]);
      expect(after).toMatchObject({
        status: 'active',
        secret: newSealed,
        previousSecret: sealed,
        previousValidUntil: '2026-01-03T02:00:00.000Z',
        secretHolder: otherMaker.userID,
        rotation: null,
      });
      if (after.status === 'none') throw new Error('endpoint missing');
      expect(signingSecrets(after, '2026-01-03T01:59:59.999Z')).toEqual({
        scheme: 'standard-webhooks',
        secrets: [newSealed, sealed],
      });
      expect(signingSecrets(after, '2026-01-03T02:00:00.000Z')).toEqual({
        scheme: 'standard-webhooks',
        secrets: [newSealed],
      });
    });

    it('when a rotation of a legacy endpoint is approved, then the rotation records Standard Webhooks', () =>
      given([requested, approvedLegacy, rotationRequested]).when(approveRotation(checker)).then([rotated]));

    it('given a legacy endpoint rotated, then it signs the legacy way with both secrets until the overlap ends, then the Standard Webhooks way with the new one', () => {
      const after = state([requested, approvedLegacy, rotationRequested, rotated]);
      expect(after).toMatchObject({ signatureScheme: 'standard-webhooks', previousSignatureScheme: 'stripe-v1' });
      if (after.status === 'none') throw new Error('endpoint missing');
      expect(signingSecrets(after, '2026-01-03T01:59:59.999Z')).toEqual({
        scheme: 'stripe-v1',
        secrets: [newSealed, sealed],
      });
      expect(signingSecrets(after, '2026-01-03T02:00:00.000Z')).toEqual({
        scheme: 'standard-webhooks',
        secrets: [newSealed],
      });
    });

    it('given a rotation written before schemes were recorded, then the new secret signs the legacy way', () => {
      const { signatureScheme: _, ...legacyData } = rotated.data as Extract<
        WebhookEndpointEvent,
        { type: 'WebhookSecretRotated' }
      >['data'];
      const after = state([
        requested,
        approvedLegacy,
        rotationRequested,
        { type: 'WebhookSecretRotated', data: legacyData },
      ]);
      if (after.status === 'none') throw new Error('endpoint missing');
      expect(signingSecrets(after, '2026-01-03T01:00:00.000Z')).toEqual({
        scheme: 'stripe-v1',
        secrets: [newSealed, sealed],
      });
      expect(signingSecrets(after, '2026-01-03T03:00:00.000Z')).toEqual({ scheme: 'stripe-v1', secrets: [newSealed] });
    });

    describe('who holds which secret (src/domain/segregation.ts)', () => {
      const history = [requested, approved, rotationRequested, rotated];
      const second: WebhookEndpointEvent = {
        type: 'WebhookSecretRotationRequested',
        data: { endpointID, requestedBy: 'u-maker-3', reason: 'again', requestedAt: T2 },
      };

      it('when the holder of the current or the still-signing previous secret approves the next rotation, then it is refused', () => {
        given([...history, second])
          .when(approveRotation({ ...otherMaker, roles: ['checker'] }))
          .thenRefused('SAME_USER', /you hold a secret of webhook endpoint/);
        given([...history, second])
          .when(approveRotation({ ...maker, roles: ['checker'] }))
          .thenRefused('SAME_USER', /you hold a secret/);
        given([requested, approved, rotationRequested])
          .when(approveRotation({ ...maker, roles: ['checker'] }))
          .thenRefused('SAME_USER', /you hold a secret/);
      });

      it('when the holder of the previous secret departs during the overlap, then it stops signing at once; a rotation they asked for is withdrawn', () => {
        const retire = (userID: string) => ({
          type: 'RetireWebhookEndpointOfDepartedUser' as const,
          data: { endpointID, userID, reason: 'maker left', now: '2026-01-03T01:00:00.000Z' },
        });
        const ended: WebhookEndpointEvent = {
          type: 'WebhookEndpointPreviousSecretEnded',
          data: { endpointID, endedAt: '2026-01-03T01:00:00.000Z', departedUserID: maker.userID },
        };
        given(history).when(retire(maker.userID)).then([ended]);
        const after = state([...history, ended]);
        if (after.status === 'none') throw new Error('endpoint missing');
        expect(signingSecrets(after, '2026-01-03T01:00:00.000Z')).toEqual({
          scheme: 'standard-webhooks',
          secrets: [newSealed],
        });
        expect(after).toMatchObject({
          status: 'active',
          secretHolder: otherMaker.userID,
          secretHolders: [maker.userID, otherMaker.userID],
        });
        given([requested, approved, rotationRequested])
          .when(retire(otherMaker.userID))
          .then([
            {
              type: 'WebhookSecretRotationWithdrawn',
              data: {
                endpointID,
                withdrawnBy: 'system',
                withdrawnAt: '2026-01-03T01:00:00.000Z',
                departedUserID: otherMaker.userID,
              },
            },
          ]);
      });
    });

    it('given a rejected or withdrawn rotation, then none is pending and the secret is unchanged', () => {
      expect(
        state([
          requested,
          approved,
          rotationRequested,
          {
            type: 'WebhookSecretRotationRejected',
            data: { endpointID, rejectedBy: checker.userID, reason: null, rejectedAt: T2 },
          },
        ]),
      ).toMatchObject({ rotation: null, secret: sealed, previousSecret: null });
      expect(
        state([
          requested,
          approved,
          rotationRequested,
          {
            type: 'WebhookSecretRotationWithdrawn',
            data: { endpointID, withdrawnBy: otherMaker.userID, withdrawnAt: T2 },
          },
        ]),
      ).toMatchObject({ rotation: null, secret: sealed });
    });
  });
});

import { describe, expect, it } from 'vitest';
import { webhookEndpointDecider } from '../../src/commands/webhook-endpoints.ts';
import type { WebhookEndpointEvent } from '../../src/domain/events.ts';
import {
  WEBHOOK_ENDPOINTS_PROJECTION,
  webhookEndpointsProjection,
  type WebhookEndpointDoc,
} from '../../src/projections/webhook-endpoints.ts';
import { projectionSpec, stored } from '../support/projection-spec.ts';

/** The webhook-endpoints read model: one document per endpoint, what `webhook list` shows; never the secret. */
const spec = projectionSpec(webhookEndpointsProjection());
const ID = 'whe_AAAAAAAAAAAAAAAA';
const T0 = '2026-01-01T00:00:00.000Z';
const T1 = '2026-01-02T00:00:00.000Z';

const requested: WebhookEndpointEvent = {
  type: 'WebhookEndpointRequested',
  data: {
    endpointID: ID,
    party: { type: 'merchant', id: 'm-1' },
    url: 'https://shop.example/h',
    eventTypes: ['payment.received'],
    requestedBy: 'u-maker',
    requestedAt: T0,
  },
};
const approved: WebhookEndpointEvent = {
  type: 'WebhookEndpointApproved',
  data: {
    endpointID: ID,
    approvedBy: 'u-checker',
    approvedAt: T1,
    secret: { sealedWith: 'f'.repeat(16), iv: 'aXY=', tag: 'dGFn', data: 'c2VjcmV0' },
    signatureScheme: 'standard-webhooks',
  },
};
/** Written before signature schemes were recorded. */
const { signatureScheme: _, ...legacyData } = approved.data as Extract<
  WebhookEndpointEvent,
  { type: 'WebhookEndpointApproved' }
>['data'];
const approvedLegacy: WebhookEndpointEvent = { type: 'WebhookEndpointApproved', data: legacyData };
const rejected: WebhookEndpointEvent = {
  type: 'WebhookEndpointRejected',
  data: { endpointID: ID, rejectedBy: 'u-checker', reason: 'unknown host', rejectedAt: T1 },
};
const disabled: WebhookEndpointEvent = {
  type: 'WebhookEndpointDisabled',
  data: { endpointID: ID, disabledBy: 'system', reason: 'deliveries failed for a day', disabledAt: T1 },
};

const pending = (position: number): WebhookEndpointDoc => ({
  id: ID,
  partyType: 'merchant',
  partyID: 'm-1',
  url: 'https://shop.example/h',
  eventTypes: ['payment.received'],
  status: 'pending',
  requestedBy: 'u-maker',
  requestedAt: T0,
  decidedBy: null,
  decidedAt: null,
  reason: null,
  disabledBy: null,
  disabledAt: null,
  position,
});

describe('webhook-endpoints projection', () => {
  it('when an endpoint is registered, then it is pending with its party, url and event types', () => {
    spec
      .given()
      .when(requested)
      .then({ [ID]: pending(1) });
  });

  it('when it is approved, then it is active with the checker and its signature scheme, and the sealed secret is not copied', () => {
    const { docs } = spec.given(requested).when(approved);
    expect(docs).toEqual({
      [ID]: {
        ...pending(2),
        status: 'active',
        decidedBy: 'u-checker',
        decidedAt: T1,
        signatureScheme: 'standard-webhooks',
      },
    });
    expect(JSON.stringify(docs)).not.toContain('c2VjcmV0');
  });

  it('when an approval written before schemes were recorded is applied, then the endpoint signs the legacy stripe-v1 way', () => {
    spec
      .given(requested)
      .when(approvedLegacy)
      .then({
        [ID]: { ...pending(2), status: 'active', decidedBy: 'u-checker', decidedAt: T1, signatureScheme: 'stripe-v1' },
      });
  });

  it('when it is rejected, then it is rejected with the checker and the reason', () => {
    spec
      .given(requested)
      .when(rejected)
      .then({
        [ID]: { ...pending(2), status: 'rejected', decidedBy: 'u-checker', decidedAt: T1, reason: 'unknown host' },
      });
  });

  it('when it is disabled, then it says by whom, when and why', () => {
    spec
      .given(requested, approved)
      .when(disabled)
      .then({
        [ID]: {
          ...pending(3),
          status: 'disabled',
          decidedBy: 'u-checker',
          decidedAt: T1,
          signatureScheme: 'standard-webhooks',
          disabledBy: 'system',
          disabledAt: T1,
          reason: 'deliveries failed for a day',
        },
      });
  });

  it('when a decision arrives without its registration, then there is no document', () => {
    spec.given().when(approved).then({});
  });

  it('when the same events are applied twice, then the documents are the same (replay)', () => {
    const events = stored([requested, approved, disabled]);
    const once = spec.fold(events);
    expect(spec.fold(events, once)).toEqual(once);
  });

  describe('secret rotation', () => {
    const T2 = '2026-01-03T00:00:00.000Z';
    const active = (position: number): WebhookEndpointDoc => ({
      ...pending(position),
      status: 'active',
      decidedBy: 'u-checker',
      decidedAt: T1,
      signatureScheme: 'standard-webhooks',
    });
    const asked: WebhookEndpointEvent = {
      type: 'WebhookSecretRotationRequested',
      data: { endpointID: ID, requestedBy: 'u-maker', reason: 'leaked', requestedAt: T2 },
    };
    const rotated: WebhookEndpointEvent = {
      type: 'WebhookSecretRotated',
      data: {
        endpointID: ID,
        approvedBy: 'u-checker',
        rotatedAt: T2,
        secret: { sealedWith: 'f'.repeat(16), iv: 'aXY=', tag: 'dGFn', data: 'bmV3c2VjcmV0' },
        previousValidUntil: '2026-01-04T00:00:00.000Z',
        secretHolder: 'u-maker',
        signatureScheme: 'standard-webhooks',
      },
    };

    it('when a rotation is requested, then the document says by whom and why', () => {
      spec
        .given(requested, approved)
        .when(asked)
        .then({ [ID]: { ...active(3), rotationRequestedBy: 'u-maker', rotationReason: 'leaked' } });
    });

    it('when the endpoint is disabled while a rotation waits, then no rotation waits (it can no longer be decided)', () => {
      spec
        .given(requested, approved, asked)
        .when(disabled)
        .then({
          [ID]: {
            ...active(4),
            status: 'disabled',
            disabledBy: 'system',
            disabledAt: T1,
            reason: 'deliveries failed for a day',
          },
        });
    });

    it('given any history, then the document is the decider’s state without its keys (one lifecycle fold)', () => {
      const ended: WebhookEndpointEvent = {
        type: 'WebhookEndpointPreviousSecretEnded',
        data: { endpointID: ID, endedAt: '2026-01-03T05:00:00.000Z', departedUserID: 'u-old' },
      };
      const history = [requested, approved, asked, rotated, ended, asked, disabled];
      for (let n = 1; n <= history.length; n++) {
        const events = history.slice(0, n);
        const doc = spec.fold(stored(events))[ID]!;
        const state = events.reduce(webhookEndpointDecider.evolve, webhookEndpointDecider.initialState());
        if (state.status === 'none') throw new Error('no endpoint');
        expect({
          status: doc.status,
          decidedBy: doc.decidedBy,
          disabledBy: doc.disabledBy,
          rotationRequestedBy: doc.rotationRequestedBy ?? null,
          rotatedAt: doc.rotatedAt ?? null,
          previousValidUntil: doc.previousSecretValidUntil ?? null,
          signatureScheme: doc.signatureScheme ?? null,
        }).toEqual({
          status: state.status,
          decidedBy: state.decidedBy,
          disabledBy: state.disabledBy,
          rotationRequestedBy: state.rotation?.requestedBy ?? null,
          rotatedAt: state.rotatedAt,
          previousValidUntil: state.previousValidUntil,
          signatureScheme: state.signatureScheme,
        });
      }
    });

    it('when it is rejected or withdrawn, then no rotation waits', () => {
      spec
        .given(requested, approved, asked)
        .when({
          type: 'WebhookSecretRotationRejected',
          data: { endpointID: ID, rejectedBy: 'u-checker', reason: null, rejectedAt: T2 },
        })
        .then({ [ID]: active(4) });
      spec
        .given(requested, approved, asked)
        .when({
          type: 'WebhookSecretRotationWithdrawn',
          data: { endpointID: ID, withdrawnBy: 'u-maker', withdrawnAt: T2 },
        })
        .then({ [ID]: active(4) });
    });

    it('when it is approved, then the document says when and until when the previous secret signs, and never holds the secret', () => {
      const { docs } = spec.given(requested, approved, asked).when(rotated);
      expect(docs).toEqual({
        [ID]: {
          ...active(4),
          rotatedAt: T2,
          previousSecretValidUntil: '2026-01-04T00:00:00.000Z',
          signatureScheme: 'standard-webhooks',
          previousSignatureScheme: 'standard-webhooks',
        },
      });
      expect(JSON.stringify(docs)).not.toContain('bmV3c2VjcmV0');
    });

    it("when the previous secret ends at its holder's departure, then the document says it stopped signing then", () => {
      const ended: WebhookEndpointEvent = {
        type: 'WebhookEndpointPreviousSecretEnded',
        data: { endpointID: ID, endedAt: '2026-01-03T05:00:00.000Z', departedUserID: 'u-old' },
      };
      spec
        .given(requested, approved, asked, rotated)
        .when(ended)
        .then({
          [ID]: {
            ...active(5),
            rotatedAt: T2,
            previousSecretValidUntil: '2026-01-03T05:00:00.000Z',
            signatureScheme: 'standard-webhooks',
            previousSignatureScheme: 'standard-webhooks',
          },
        });
    });

    it("when a legacy endpoint's rotation is approved, then the document says it moves from stripe-v1 to Standard Webhooks", () => {
      const { docs } = spec.given(requested, approvedLegacy, asked).when(rotated);
      expect(docs[ID]).toMatchObject({
        signatureScheme: 'standard-webhooks',
        previousSignatureScheme: 'stripe-v1',
        previousSecretValidUntil: '2026-01-04T00:00:00.000Z',
      });
    });
  });

  it('then its name is webhook-endpoints', () => expect(WEBHOOK_ENDPOINTS_PROJECTION).toBe('webhook-endpoints'));
});

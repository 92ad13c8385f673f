import type { WebhookEndpointEvent, WebhookEventType, WebhookSignatureScheme } from '../domain/events.ts';
import type { PartyRef } from '../domain/parties.ts';
import type { CollectionDefinition, ReadStore } from '../ports/read-store.ts';
import type { ProjectedEvent, Projection } from './projection.ts';
import { foldInMemory } from './fold.ts';

/**
 * Webhook endpoints, one document each, as `webhook list` (and later the console) shows them. The signing
 * secret is not here: it stays sealed in the approval event on the write side, and only the delivery
 * consumer opens it.
 */
export type WebhookEndpointDoc = {
  /** The endpoint id. */
  id: string;
  partyType: PartyRef['type'];
  partyID: string;
  url: string;
  eventTypes: WebhookEventType[];
  status: 'pending' | 'active' | 'rejected' | 'disabled';
  requestedBy: string;
  requestedAt: string;
  /** The checker who approved or rejected it. */
  decidedBy: string | null;
  decidedAt: string | null;
  /** The rejection's or the disabling's reason. */
  reason: string | null;
  /** A user id, or `system` after a day of failed deliveries. */
  disabledBy: string | null;
  disabledAt: string | null;
  /** A secret rotation waiting for a checker (absent: none ever asked for). */
  rotationRequestedBy?: string | null;
  rotationReason?: string | null;
  /** The last rotation, and until when deliveries are signed with the previous secret too. */
  rotatedAt?: string | null;
  previousSecretValidUntil?: string | null;
  /**
   * How deliveries are signed with the current secret (absent until approved); an approval that names none:
   * `stripe-v1`.
   */
  signatureScheme?: WebhookSignatureScheme;
  /**
   * The previous secret's scheme, after a rotation: when it differs, deliveries keep it until
   * `previousSecretValidUntil`.
   */
  previousSignatureScheme?: WebhookSignatureScheme;
  position: number;
};

export const WEBHOOK_ENDPOINTS_PROJECTION = 'webhook-endpoints';
export const WEBHOOK_ENDPOINTS_COLLECTION: CollectionDefinition = {
  name: 'webhook_endpoints',
  indexes: [['partyType', 'partyID', 'requestedAt']],
};

const EVENT_TYPES = [
  'WebhookEndpointRequested',
  'WebhookEndpointApproved',
  'WebhookEndpointRejected',
  'WebhookEndpointDisabled',
  'WebhookSecretRotationRequested',
  'WebhookSecretRotationRejected',
  'WebhookSecretRotationWithdrawn',
  'WebhookSecretRotated',
  'WebhookEndpointPreviousSecretEnded',
] as const;
const isEndpointEvent = (event: ProjectedEvent): event is ProjectedEvent & WebhookEndpointEvent =>
  (EVENT_TYPES as readonly string[]).includes(event.type);

export function webhookEndpointsProjection(): Projection<WebhookEndpointDoc> {
  return {
    name: WEBHOOK_ENDPOINTS_PROJECTION,
    collection: WEBHOOK_ENDPOINTS_COLLECTION,
    eventTypes: EVENT_TYPES,
    documentIds: (event) => (isEndpointEvent(event) ? [event.data.endpointID] : []),
    evolve(doc, event, id) {
      if (!isEndpointEvent(event)) return doc;
      if (event.type === 'WebhookEndpointRequested') {
        const { party, url, eventTypes, requestedBy, requestedAt } = event.data;
        return {
          id,
          partyType: party.type,
          partyID: party.id,
          url,
          eventTypes,
          status: 'pending',
          requestedBy,
          requestedAt,
          decidedBy: null,
          decidedAt: null,
          reason: null,
          disabledBy: null,
          disabledAt: null,
          position: event.position,
        };
      }
      if (doc === null) return null; // a stream always starts with the request
      switch (event.type) {
        case 'WebhookEndpointApproved':
          return {
            ...doc,
            status: 'active',
            decidedBy: event.data.approvedBy,
            decidedAt: event.data.approvedAt,
            signatureScheme: event.data.signatureScheme ?? 'stripe-v1',
          };
        case 'WebhookEndpointRejected':
          return {
            ...doc,
            status: 'rejected',
            decidedBy: event.data.rejectedBy,
            decidedAt: event.data.rejectedAt,
            reason: event.data.reason,
          };
        case 'WebhookEndpointDisabled':
          return {
            ...doc,
            status: 'disabled',
            disabledBy: event.data.disabledBy,
            disabledAt: event.data.disabledAt,
            reason: event.data.reason,
          };
        case 'WebhookSecretRotationRequested':
          return { ...doc, rotationRequestedBy: event.data.requestedBy, rotationReason: event.data.reason };
        case 'WebhookSecretRotationRejected':
        case 'WebhookSecretRotationWithdrawn':
          return { ...doc, rotationRequestedBy: null, rotationReason: null };
        case 'WebhookSecretRotated':
          return {
            ...doc,
            rotationRequestedBy: null,
            rotationReason: null,
            rotatedAt: event.data.rotatedAt,
            previousSecretValidUntil: event.data.previousValidUntil,
            signatureScheme: event.data.signatureScheme ?? 'stripe-v1',
            previousSignatureScheme: doc.signatureScheme ?? 'stripe-v1',
          };
        case 'WebhookEndpointPreviousSecretEnded':
          // Its holder left: the previous secret stopped signing then, before its overlap's end.
          return { ...doc, previousSecretValidUntil: event.data.endedAt };
      }
    },
  };
}

/** A party's endpoints, newest registration first (a party has few). */
export function webhookEndpointsOfParty(readStore: ReadStore, party: PartyRef): Promise<WebhookEndpointDoc[]> {
  return readStore.find<WebhookEndpointDoc>(WEBHOOK_ENDPOINTS_COLLECTION.name, {
    where: { partyType: party.type, partyID: party.id },
    sort: [
      ['requestedAt', 'desc'],
      ['id', 'asc'],
    ],
  });
}

/**
 * The same documents folded in memory from the endpoints' events (the operator CLI, which may run without a
 * server keeping the read model current): what the runner would store, in the order of `webhookEndpointsOfParty`.
 */
export function foldWebhookEndpoints(events: Iterable<ProjectedEvent>): WebhookEndpointDoc[] {
  const docs = [...foldInMemory(webhookEndpointsProjection(), events).values()].filter((doc) => doc !== null);
  return docs.sort((a, b) =>
    a.requestedAt === b.requestedAt ? (a.id < b.id ? -1 : 1) : a.requestedAt < b.requestedAt ? 1 : -1,
  );
}

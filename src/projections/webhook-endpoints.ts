import type { WebhookEndpointEvent, WebhookEventType, WebhookSignatureScheme } from '../domain/events.ts';
import type { PartyRef } from '../domain/parties.ts';
import type { CollectionDefinition } from '../ports/read-store.ts';
import type { ProjectedEvent, Projection } from './projection.ts';
import { foldInMemory } from './fold.ts';
import { evolveEndpoint, withoutKeys, type EndpointLifecycle } from '../commands/webhook-endpoint-lifecycle.ts';

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
  /** A secret rotation waiting for a checker (absent, or null in a document stored before: none waits). */
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
    evolve(doc, event) {
      if (!isEndpointEvent(event)) return doc;
      const next = evolveEndpoint(doc === null ? null : lifecycleOf(doc), event);
      return next === null ? null : docOf(next, event.position);
    },
  };
}

/** The document of a lifecycle: the endpoint as it stands, without the write side's keys. */
function docOf(endpoint: EndpointLifecycle, position: number): WebhookEndpointDoc {
  const { rotation, rotatedAt, signatureScheme, previousSignatureScheme, previousValidUntil } = endpoint;
  return {
    id: endpoint.endpointID,
    partyType: endpoint.party.type,
    partyID: endpoint.party.id,
    url: endpoint.url,
    eventTypes: endpoint.eventTypes,
    status: endpoint.status,
    requestedBy: endpoint.requestedBy,
    requestedAt: endpoint.requestedAt,
    decidedBy: endpoint.decidedBy,
    decidedAt: endpoint.decidedAt,
    reason: endpoint.reason,
    disabledBy: endpoint.disabledBy,
    disabledAt: endpoint.disabledAt,
    ...(rotation === null ? {} : { rotationRequestedBy: rotation.requestedBy, rotationReason: rotation.reason }),
    ...(rotatedAt === null ? {} : { rotatedAt }),
    ...(previousValidUntil === null ? {} : { previousSecretValidUntil: previousValidUntil }),
    ...(signatureScheme === null ? {} : { signatureScheme }),
    ...(previousSignatureScheme === null ? {} : { previousSignatureScheme }),
    position,
  };
}

/** The lifecycle a document stands for, folded on with no keys (a read model never holds a secret). */
function lifecycleOf(doc: WebhookEndpointDoc): EndpointLifecycle {
  return {
    endpointID: doc.id,
    party: { type: doc.partyType, id: doc.partyID },
    url: doc.url,
    eventTypes: doc.eventTypes,
    status: doc.status,
    requestedBy: doc.requestedBy,
    requestedAt: doc.requestedAt,
    decidedBy: doc.decidedBy,
    decidedAt: doc.decidedAt,
    reason: doc.reason,
    disabledBy: doc.disabledBy,
    disabledAt: doc.disabledAt,
    rotation:
      doc.rotationRequestedBy == null
        ? null
        : {
            requestedBy: doc.rotationRequestedBy,
            reason: doc.rotationReason ?? '',
            // Not kept in the document, and no field of it is made from it.
            requestedAt: doc.requestedAt,
          },
    rotatedAt: doc.rotatedAt ?? null,
    signatureScheme: doc.signatureScheme ?? null,
    previousSignatureScheme: doc.previousSignatureScheme ?? null,
    previousValidUntil: doc.previousSecretValidUntil ?? null,
    ...withoutKeys(doc.requestedBy),
  };
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

import type { WebhookEventType } from '../domain/events.ts';
import type { PartyRef } from '../domain/parties.ts';
import type { WebhookEndpointDoc } from '../projections/webhook-endpoints.ts';
import { DomainError } from '../domain/errors.ts';
import type { CollectionDefinition, ReadStore, Write } from '../ports/read-store.ts';

/**
 * The webhook outbox and its delivery log, in the read store. These are not read models (a rebuild never
 * touches them: nothing in the event history says what a receiver answered); they are the delivery
 * consumer's own working state, like the executor's checkpoint:
 *  - `webhook_routes`: the endpoints as the outbox saw them at its checkpoint (which events go where);
 *  - `webhook_deliveries`: one document per (endpoint, event), with the body sent at every attempt;
 *  - `webhook_attempts`: one document per attempt, what the receiver answered.
 * The outbox writes routes, deliveries and its checkpoint in one commit, so an event is queued for every
 * endpoint exactly once however often the outbox restarts.
 */
/** What routing needs of an endpoint (its read-model document, without who decided what). */
export type RouteDoc = Pick<
  WebhookEndpointDoc,
  'id' | 'partyType' | 'partyID' | 'url' | 'eventTypes' | 'status' | 'rotatedAt'
>;

export type DeliveryStatus =
  /** Waiting for its (next) attempt. */
  | 'pending'
  /** The receiver answered 2xx. */
  | 'delivered'
  /** Given up after a day of failed attempts; the endpoint was disabled with it. */
  | 'failed';

export type DeliveryDoc = {
  /** `<endpointID>:<eventID>`. */
  id: string;
  endpointID: string;
  partyType: PartyRef['type'];
  partyID: string;
  /** The webhook event id (`evt_…`), the same at every attempt and for every endpoint: receivers de-duplicate on it. */
  eventID: string;
  eventType: WebhookEventType;
  /** The log position of the event it reports: the endpoint's delivery order. */
  position: number;
  /** When the event happened (ISO 8601). */
  createdAt: string;
  /** The JSON body, byte for byte the same at every attempt (only the signature's timestamp changes). */
  body: string;
  status: DeliveryStatus;
  /** Attempts so far, redeliveries included. */
  attempts: number;
  /** Epoch ms: not attempted before this (retries back off). */
  nextAttemptAt: number;
  /**
   * Epoch ms of the first failed attempt of the current streak; null when the last attempt succeeded or none failed
   * yet.
   */
  failingSince: number | null;
  lastAttemptAt: string | null;
  lastStatusCode: number | null;
  lastError: string | null;
  deliveredAt: string | null;
  /** The last maker who asked for a redelivery, and when. */
  redeliveredBy: string | null;
  redeliveredAt: string | null;
  /** The trace context of the event it reports (its metadata), when it had one: each attempt's span continues it. */
  traceparent?: string;
};

export type AttemptDoc = {
  /** `<deliveryID>:<attempt>`. */
  id: string;
  deliveryID: string;
  endpointID: string;
  eventID: string;
  eventType: WebhookEventType;
  /** 1 for the first attempt. */
  attempt: number;
  /** When the attempt started (ISO 8601). */
  at: string;
  ok: boolean;
  statusCode: number | null;
  durationMs: number;
  /** The first KiB of what the receiver answered. */
  responseBody: string | null;
  error: string | null;
};

export const WEBHOOK_ROUTES_COLLECTION: CollectionDefinition = { name: 'webhook_routes', indexes: [['status']] };
export const WEBHOOK_DELIVERIES_COLLECTION: CollectionDefinition = {
  name: 'webhook_deliveries',
  indexes: [
    // The dispatcher: an endpoint's oldest pending delivery.
    ['endpointID', 'status', 'position'],
    // The delivery log, newest first.
    ['endpointID', 'position'],
  ],
};
export const WEBHOOK_ATTEMPTS_COLLECTION: CollectionDefinition = {
  name: 'webhook_attempts',
  indexes: [['deliveryID', 'attempt']],
};
export const WEBHOOK_COLLECTIONS = [
  WEBHOOK_ROUTES_COLLECTION,
  WEBHOOK_DELIVERIES_COLLECTION,
  WEBHOOK_ATTEMPTS_COLLECTION,
];

/** The outbox's checkpoint: every event at or below it has been queued for every endpoint it concerns. */
export const WEBHOOK_OUTBOX_CHECKPOINT = 'webhook-outbox';

export const deliveryID = (endpointID: string, eventID: string) => `${endpointID}:${eventID}`;

/** The endpoints that receive deliveries now. */
export function activeRoutes(readStore: ReadStore): Promise<RouteDoc[]> {
  return readStore.find<RouteDoc>(WEBHOOK_ROUTES_COLLECTION.name, {
    where: { status: 'active' },
    sort: [['id', 'asc']],
  });
}

/** The delivery an endpoint must get next (deliveries go in event order), or null when none waits. */
export async function nextDelivery(readStore: ReadStore, endpointID: string): Promise<DeliveryDoc | null> {
  const [head] = await readStore.find<DeliveryDoc>(WEBHOOK_DELIVERIES_COLLECTION.name, {
    where: { endpointID, status: 'pending' },
    sort: [
      ['position', 'asc'],
      ['id', 'asc'],
    ],
    limit: 1,
  });
  return head ?? null;
}

/**
 * The categories an attempt's error is recorded as (src/webhooks/sender.ts); anything else was recorded before them.
 */
const ERROR_CATEGORY =
  /^(HTTP \d{3}|redirect \(\d{3}\) not followed|timed out|connection failed|TLS handshake failed|host not found|refused: address not allowed|invalid URL|not sent: signing secret unavailable)$/;

/**
 * An attempt's error as makers may see it: its category. Attempts recorded by earlier versions hold the
 * system's message (resolved addresses, "connect ECONNREFUSED 10.0.0.5:8080"), shown as their category.
 */
export function makerError(error: string | null): string | null {
  if (error === null || ERROR_CATEGORY.test(error)) return error;
  if (error.startsWith('timed out')) return 'timed out';
  if (error.startsWith('DNS:') || error.includes('does not resolve')) return 'host not found';
  if (error.includes('resolves to')) return 'refused: address not allowed';
  if (error.includes('signing secret')) return 'not sent: signing secret unavailable';
  return /certificate|TLS|SSL/i.test(error) ? 'TLS handshake failed' : 'connection failed';
}

const shownDelivery = (doc: DeliveryDoc): DeliveryDoc => ({ ...doc, lastError: makerError(doc.lastError) });
const shownAttempt = (doc: AttemptDoc): AttemptDoc => ({ ...doc, error: makerError(doc.error) });

/** An endpoint's deliveries, newest event first, a page at a time (the delivery log: errors as makers may see them). */
export async function deliveriesOfEndpoint(
  readStore: ReadStore,
  endpointID: string,
  page: { limit: number; skip?: number },
): Promise<{ deliveries: DeliveryDoc[]; total: number }> {
  const where = { endpointID };
  const [deliveries, total] = await Promise.all([
    readStore.find<DeliveryDoc>(WEBHOOK_DELIVERIES_COLLECTION.name, {
      where,
      sort: [
        ['position', 'desc'],
        ['id', 'desc'],
      ],
      limit: page.limit,
      skip: page.skip ?? 0,
    }),
    readStore.count(WEBHOOK_DELIVERIES_COLLECTION.name, { where }),
  ]);
  return { deliveries: deliveries.map(shownDelivery), total };
}

export async function getDelivery(readStore: ReadStore, id: string): Promise<DeliveryDoc | null> {
  const doc = await readStore.get<DeliveryDoc>(WEBHOOK_DELIVERIES_COLLECTION.name, id);
  return doc && shownDelivery(doc);
}

/** Every attempt of one delivery, first first (errors as makers may see them). */
export async function attemptsOfDelivery(readStore: ReadStore, id: string): Promise<AttemptDoc[]> {
  return (
    await readStore.find<AttemptDoc>(WEBHOOK_ATTEMPTS_COLLECTION.name, {
      where: { deliveryID: id },
      sort: [['attempt', 'asc']],
    })
  ).map(shownAttempt);
}

/** What a maker's redelivery changes: the delivery waits again, due now, as if new (its attempts are kept). */
function redeliveryPatch(by: string, now: Date): Write & { op: 'patch' } {
  return {
    op: 'patch',
    collection: WEBHOOK_DELIVERIES_COLLECTION.name,
    id: '',
    patch: {
      status: 'pending',
      nextAttemptAt: now.getTime(),
      failingSince: null,
      redeliveredBy: by,
      redeliveredAt: now.toISOString(),
    },
  };
}

/**
 * Queues one delivery of an endpoint again (same event id, same body). Only for an active endpoint: a disabled
 * one receives nothing. The caller has checked that `by` is a maker of the endpoint's party.
 */
export async function redeliverEvent(
  readStore: ReadStore,
  route: RouteDoc,
  eventID: string,
  by: string,
  now: Date,
): Promise<DeliveryDoc> {
  requireActive(route);
  const id = deliveryID(route.id, eventID);
  const delivery = await getDelivery(readStore, id);
  if (delivery === null)
    throw new DomainError('NOT_FOUND', `event ${eventID.slice(0, 40)} was never sent to webhook endpoint ${route.id}`);
  await readStore.commit([{ ...redeliveryPatch(by, now), id }]);
  return { ...delivery, status: 'pending' };
}

const REDELIVERY_PAGE = 500;

/** Queues again every delivery of the endpoint whose event happened at or after `since`; returns how many. */
export async function redeliverSince(
  readStore: ReadStore,
  route: RouteDoc,
  since: Date,
  by: string,
  now: Date,
): Promise<number> {
  requireActive(route);
  const from = since.toISOString();
  let queued = 0;
  // Newest first, page by page, until events older than `since`; `position` orders them as `createdAt` does.
  for (let skip = 0; ; skip += REDELIVERY_PAGE) {
    const { deliveries } = await deliveriesOfEndpoint(readStore, route.id, { limit: REDELIVERY_PAGE, skip });
    const recent = deliveries.filter((delivery) => delivery.createdAt >= from);
    if (recent.length > 0)
      await readStore.commit(recent.map((delivery) => ({ ...redeliveryPatch(by, now), id: delivery.id })));
    queued += recent.length;
    if (recent.length < deliveries.length || deliveries.length < REDELIVERY_PAGE) return queued;
  }
}

function requireActive(route: RouteDoc): void {
  if (route.status !== 'active')
    throw new DomainError(
      'WRONG_STATE',
      `cannot redeliver: webhook endpoint ${route.id} is ${route.status}, not active`,
    );
}

export function getRoute(readStore: ReadStore, endpointID: string): Promise<RouteDoc | null> {
  return readStore.get<RouteDoc>(WEBHOOK_ROUTES_COLLECTION.name, endpointID);
}

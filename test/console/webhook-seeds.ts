import type { WebhookEventType } from '../../src/domain/events.ts';
import type { PartyRef } from '../../src/domain/parties.ts';
import type { ReadStore } from '../../src/ports/read-store.ts';
import {
  WEBHOOK_ATTEMPTS_COLLECTION,
  WEBHOOK_COLLECTIONS,
  WEBHOOK_DELIVERIES_COLLECTION,
  WEBHOOK_ROUTES_COLLECTION,
  deliveryID,
  type AttemptDoc,
  type DeliveryDoc,
  type RouteDoc,
} from '../../src/webhooks/deliveries.ts';

/**
 * The delivery consumer's documents, written straight into the read store as it would write them: a route
 * for an endpoint, and deliveries with their attempts. For console tests that need a delivery log without a
 * receiver.
 */
export interface SeededEndpoint {
  id: string;
  party: PartyRef;
  url: string;
  eventTypes: WebhookEventType[];
}

export async function seedRoute(
  readStore: ReadStore,
  endpoint: SeededEndpoint,
  status: RouteDoc['status'] = 'active',
): Promise<void> {
  await readStore.defineCollections(WEBHOOK_COLLECTIONS);
  const route: RouteDoc = {
    id: endpoint.id,
    partyType: endpoint.party.type,
    partyID: endpoint.party.id,
    url: endpoint.url,
    eventTypes: endpoint.eventTypes,
    status,
  };
  await readStore.commit([{ op: 'upsert', collection: WEBHOOK_ROUTES_COLLECTION.name, doc: route }]);
}

export interface SeededDelivery {
  eventID: string;
  eventType?: WebhookEventType;
  position: number;
  createdAt: string;
  status: DeliveryDoc['status'];
  /** What each attempt got: a status code and body, or an error. */
  attempts?: Array<{
    statusCode: number | null;
    responseBody?: string | null;
    error?: string | null;
    durationMs?: number;
    at: string;
  }>;
  nextAttemptAt?: number;
}

export async function seedDeliveries(
  readStore: ReadStore,
  endpoint: SeededEndpoint,
  deliveries: SeededDelivery[],
): Promise<DeliveryDoc[]> {
  await readStore.defineCollections(WEBHOOK_COLLECTIONS);
  const docs: DeliveryDoc[] = [];
  const attempts: AttemptDoc[] = [];
  for (const seeded of deliveries) {
    const id = deliveryID(endpoint.id, seeded.eventID);
    const eventType = seeded.eventType ?? 'operation.completed';
    const tried = seeded.attempts ?? [];
    const last = tried.at(-1);
    tried.forEach((attempt, index) => {
      const ok = attempt.statusCode !== null && attempt.statusCode >= 200 && attempt.statusCode < 300;
      attempts.push({
        id: `${id}:${index + 1}`,
        deliveryID: id,
        endpointID: endpoint.id,
        eventID: seeded.eventID,
        eventType,
        attempt: index + 1,
        at: attempt.at,
        ok,
        statusCode: attempt.statusCode,
        durationMs: attempt.durationMs ?? 42,
        responseBody: attempt.responseBody ?? null,
        error: attempt.error ?? null,
      });
    });
    docs.push({
      id,
      endpointID: endpoint.id,
      partyType: endpoint.party.type,
      partyID: endpoint.party.id,
      eventID: seeded.eventID,
      eventType,
      position: seeded.position,
      createdAt: seeded.createdAt,
      body: JSON.stringify({
        id: seeded.eventID,
        type: eventType,
        createdAt: seeded.createdAt,
        data: { operationID: `op_${String(seeded.position).padStart(32, '0')}` },
      }),
      status: seeded.status,
      attempts: tried.length,
      nextAttemptAt: seeded.nextAttemptAt ?? Date.parse(seeded.createdAt),
      failingSince: seeded.status === 'delivered' || !last ? null : Date.parse(tried[0]!.at),
      lastAttemptAt: last?.at ?? null,
      lastStatusCode: last?.statusCode ?? null,
      lastError: last?.error ?? null,
      deliveredAt: seeded.status === 'delivered' ? (last?.at ?? null) : null,
      redeliveredBy: null,
      redeliveredAt: null,
    });
  }
  await readStore.commit([
    ...docs.map((doc) => ({ op: 'upsert' as const, collection: WEBHOOK_DELIVERIES_COLLECTION.name, doc })),
    ...attempts.map((doc) => ({ op: 'upsert' as const, collection: WEBHOOK_ATTEMPTS_COLLECTION.name, doc })),
  ]);
  return docs;
}

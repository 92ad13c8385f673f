import type { Logger } from '../logger.ts';
import type { EventStore, RecordedEvent } from '../ports/event-store.ts';
import { validTraceparent } from '../ports/tracing.ts';
import type { ReadStore, Write } from '../ports/read-store.ts';
import { webhookEndpointsProjection, type WebhookEndpointDoc } from '../projections/webhook-endpoints.ts';
import { batched, exclusiveCheckpoint, Follower, type Supervision } from '../shared/follower.ts';
import {
  deliveryID,
  WEBHOOK_DELIVERIES_COLLECTION,
  WEBHOOK_OUTBOX_CHECKPOINT,
  WEBHOOK_ROUTES_COLLECTION,
  type DeliveryDoc,
  type RouteDoc,
} from './deliveries.ts';
import {
  apiKeyWebhookMessages,
  operationWebhookMessages,
  TRIGGER_EVENT_TYPES,
  type WebhookMessage,
} from './webhook-events.ts';

/**
 * The webhook outbox: a supervised consumer of the event history that queues a delivery for every event an
 * active endpoint subscribed to. The history is the outbox (nothing is written twice on the write side): this
 * consumer follows it from its checkpoint and writes, per event, the deliveries, the routes it changes and the
 * checkpoint in one read-store commit, compare-and-set on the checkpoint. So an event is queued once per
 * endpoint however often the consumer restarts or however many processes run it, and an endpoint approved at
 * position P receives exactly the events after P, until the position of its disabling.
 */
// A rotation changes the route's `rotatedAt`, and so does the end of a previous secret at its holder's departure:
// the dispatchers then open the endpoint's secrets again.
export const ENDPOINT_EVENT_TYPES = [
  'WebhookEndpointRequested',
  'WebhookEndpointApproved',
  'WebhookEndpointRejected',
  'WebhookEndpointDisabled',
  'WebhookSecretRotated',
  'WebhookEndpointPreviousSecretEnded',
] as const;
export const OUTBOX_EVENT_TYPES = [...ENDPOINT_EVENT_TYPES, ...TRIGGER_EVENT_TYPES];

export interface WebhookOutboxOptions {
  eventStore: EventStore;
  readStore: ReadStore;
  assetScale: number;
  logger: Logger;
  clock: () => Date;
  /**
   * Events older than this when the outbox reaches them are not queued: they would be given up at once (the
   * retry window), and a read store restored empty must not send every endpoint its whole history again.
   */
  maxEventAgeMs: number;
  /** Called after a commit queued deliveries for these endpoints: the dispatcher of this process starts at once. */
  onQueued?: (endpointIDs: string[]) => void;
  supervision?: Supervision;
}

const endpoints = webhookEndpointsProjection();

/**
 * The route after an endpoint event (pure): the endpoint's lifecycle as its read model folds it (one fold), of which
 * the route keeps what routing needs. The route's `rotatedAt` says when the secrets last changed, which the end of a
 * previous secret at its holder's departure does too: the dispatchers' cache of opened secrets is keyed on it.
 */
export function evolveRoute(
  route: RouteDoc | null,
  event: { type: string; data: unknown; position?: number },
): RouteDoc | null {
  const endpointID = (event.data as { endpointID: string }).endpointID;
  // The route holds every field the lifecycle reads back (the others it writes are left out again by routeOf).
  const doc = endpoints.evolve(
    route as WebhookEndpointDoc | null,
    { position: 0, ...event } as Parameters<typeof endpoints.evolve>[1],
    endpointID,
  );
  if (doc === null) return null;
  if (event.type === 'WebhookEndpointPreviousSecretEnded')
    return { ...routeOf(doc), rotatedAt: (event.data as { endedAt: string }).endedAt };
  return routeOf(doc);
}

const routeOf = ({ id, partyType, partyID, url, eventTypes, status, rotatedAt }: WebhookEndpointDoc): RouteDoc => ({
  id,
  partyType,
  partyID,
  url,
  eventTypes,
  status,
  ...(rotatedAt === undefined ? {} : { rotatedAt }),
});

const BATCH_SIZE = 500;
/** Without deliveries to queue, the checkpoint is still saved after this many store positions, or this long. */
const IDLE_CHECKPOINT_EVENTS = 10_000;
const IDLE_CHECKPOINT_MS = 5_000;

export function createWebhookOutbox(options: WebhookOutboxOptions): Follower {
  const { eventStore, readStore } = options;
  /** The routes at the checkpoint, loaded at each session's start and kept with every commit. */
  let routes = new Map<string, RouteDoc>();
  /**
   * When the session began with no checkpoint (a read store restored empty), the head at that moment: old events
   * up to it are left out. No other event's age is judged: its createdAt comes from the clock of the process that
   * wrote it, and a process whose clock runs ahead would drop every other process's events as a day old.
   */
  let oldUpTo: number | null = null;

  /** The writes an event makes, given the routes as of the events before it (updated in place by route changes). */
  async function writesFor(event: RecordedEvent, routes: Map<string, RouteDoc>): Promise<Write[]> {
    if ((ENDPOINT_EVENT_TYPES as readonly string[]).includes(event.type)) {
      const endpointID = (event.data as { endpointID: string }).endpointID;
      const route = evolveRoute(routes.get(endpointID) ?? null, event);
      if (route === null) return [];
      routes.set(route.id, route);
      return [{ op: 'upsert', collection: WEBHOOK_ROUTES_COLLECTION.name, doc: route }];
    }
    const active = [...routes.values()].filter((route) => route.status === 'active');
    if (active.length === 0) return []; // nobody listens: no need to read the event's history
    const now = options.clock();
    if (
      oldUpTo !== null &&
      event.position <= oldUpTo &&
      now.getTime() - Date.parse(event.createdAt) > options.maxEventAgeMs
    )
      return [];
    const writes: Write[] = [];
    for (const message of await messagesFor(event)) {
      for (const route of active) {
        if (
          route.partyType !== message.party.type ||
          route.partyID !== message.party.id ||
          !route.eventTypes.includes(message.type)
        )
          continue;
        writes.push({
          op: 'upsert',
          collection: WEBHOOK_DELIVERIES_COLLECTION.name,
          doc: newDelivery(route, message, event.position, now, validTraceparent(event.metadata?.traceparent)),
        });
      }
    }
    return writes;
  }

  /** The event's webhook messages, from its stream up to it (an operation's or an API key's: a few events). */
  async function messagesFor(event: RecordedEvent): Promise<WebhookMessage[]> {
    const history = await eventStore.readStream(event.stream, { maxCount: event.revision + 1 });
    if (event.type === 'ApiKeyRevoked') return apiKeyWebhookMessages(event, history);
    return operationWebhookMessages(event, history, options.assetScale);
  }

  return new Follower({
    name: 'webhook-outbox',
    eventStore,
    filter: { eventTypes: [...OUTBOX_EVENT_TYPES] },
    // A batch that queues nothing and changes no route needs no commit: replayed after a restart it queues
    // nothing again (routes only change through commits). The checkpoint still moves now and then, so that
    // a restart does not read a long stretch of events nobody listens to again.
    checkpoint: batched(exclusiveCheckpoint(readStore, WEBHOOK_OUTBOX_CHECKPOINT), {
      positions: IDLE_CHECKPOINT_EVENTS,
      ms: IDLE_CHECKPOINT_MS,
    }),
    batchSize: BATCH_SIZE,
    logger: options.logger,
    ...(options.supervision ? { supervision: options.supervision } : {}),
    prepare: async () => {
      oldUpTo =
        (await readStore.getCheckpoint(WEBHOOK_OUTBOX_CHECKPOINT)) === null ? await eventStore.headPosition() : null;
      const stored = await readStore.find<RouteDoc>(WEBHOOK_ROUTES_COLLECTION.name, {});
      routes = new Map(stored.map((route) => [route.id, route]));
    },
    // The routes are changed on a copy, kept once the follower committed them: a failed commit ends the session,
    // and the next one reloads the routes with the checkpoint.
    handle: async (batch) => {
      const changed = new Map(routes);
      const writes: Write[] = [];
      for (const event of batch) writes.push(...(await writesFor(event, changed)));
      routes = changed;
      return writes;
    },
    onCommitted: (writes) => {
      const queued = writes.flatMap((write) =>
        write.op === 'upsert' && write.collection === WEBHOOK_DELIVERIES_COLLECTION.name
          ? [(write.doc as DeliveryDoc).endpointID]
          : [],
      );
      if (queued.length > 0) options.onQueued?.([...new Set(queued)]);
    },
  });
}

export function newDelivery(
  route: RouteDoc,
  message: WebhookMessage,
  position: number,
  now: Date,
  traceparent?: string,
): DeliveryDoc {
  return {
    ...(traceparent === undefined ? {} : { traceparent }),
    id: deliveryID(route.id, message.eventID),
    endpointID: route.id,
    partyType: route.partyType,
    partyID: route.partyID,
    eventID: message.eventID,
    eventType: message.type,
    position,
    createdAt: message.createdAt,
    body: message.body,
    status: 'pending',
    attempts: 0,
    nextAttemptAt: now.getTime(),
    failingSince: null,
    lastAttemptAt: null,
    lastStatusCode: null,
    lastError: null,
    deliveredAt: null,
    redeliveredBy: null,
    redeliveredAt: null,
  };
}

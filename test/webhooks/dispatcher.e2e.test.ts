import { randomBytes, randomUUID } from 'node:crypto';
import { afterEach, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.ts';
import { streams } from '../../src/domain/streams.ts';
import { newWebhookSecret, sealWebhookSecret, verifyWebhookSignature } from '../../src/domain/webhook-secrets.ts';
import type { ReadStore } from '../../src/ports/read-store.ts';
import {
  attemptsOfDelivery,
  getDelivery,
  WEBHOOK_COLLECTIONS,
  WEBHOOK_DELIVERIES_COLLECTION,
  WEBHOOK_ROUTES_COLLECTION,
  type RouteDoc,
} from '../../src/webhooks/deliveries.ts';
import { WEBHOOK_LEASES_COLLECTION, WebhookDispatcher } from '../../src/webhooks/dispatcher.ts';
import { newDelivery } from '../../src/webhooks/outbox.ts';
import { DEFAULT_RETRY_POLICY } from '../../src/webhooks/retry-policy.ts';
import { startTestSystem, waitFor, type TestSystem } from '../support/system.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts';

/**
 * The dispatcher with many endpoints: a wake names the endpoints that got deliveries, and only those are
 * looked at, so the cost of a delivery does not grow with the number of endpoints (a full scan waits for the
 * poll). The read store is counted through a proxy.
 */
let sys: TestSystem | undefined;
let receiver: WebhookReceiver | undefined;
let dispatcher: WebhookDispatcher | undefined;
afterEach(async () => {
  await dispatcher?.stop();
  await receiver?.close();
  await sys?.close();
});

const ENDPOINTS = 300;

it('given 300 active endpoints, when one gets a delivery and is woken by name, then it is sent after a handful of reads, not one per endpoint', async () => {
  sys = await startTestSystem({ LOG_LEVEL: 'silent' }, undefined, ['projections']);
  receiver = await startWebhookReceiver();
  const { eventStore, readStore } = sys.system.stores;
  await readStore.defineCollections([...WEBHOOK_COLLECTIONS, WEBHOOK_LEASES_COLLECTION]);
  const key = randomBytes(32);
  const party = { type: 'merchant' as const, id: randomUUID() };
  const routes: RouteDoc[] = Array.from({ length: ENDPOINTS }, (_, i) => ({
    id: `whe_${String(i).padStart(16, '0')}`,
    partyType: party.type,
    partyID: party.id,
    url: receiver!.url,
    eventTypes: ['operation.completed'],
    status: 'active',
  }));
  await readStore.commit(
    routes.map((doc) => ({ op: 'upsert' as const, collection: WEBHOOK_ROUTES_COLLECTION.name, doc })),
  );
  const target = routes[ENDPOINTS - 1]!;
  const secret = newWebhookSecret();
  await eventStore.append(
    streams.webhookEndpoint(target.id),
    [
      {
        type: 'WebhookEndpointRequested',
        data: {
          endpointID: target.id,
          party,
          url: target.url,
          eventTypes: target.eventTypes,
          requestedBy: 'u1',
          requestedAt: new Date().toISOString(),
        },
      },
      {
        type: 'WebhookEndpointApproved',
        data: {
          endpointID: target.id,
          approvedBy: 'u2',
          approvedAt: new Date().toISOString(),
          secret: sealWebhookSecret(key, target.id, secret),
        },
      },
    ],
    'no_stream',
  );

  let finds = 0;
  const counted: ReadStore = Object.create(readStore, {
    find: { value: (...args: Parameters<ReadStore['find']>) => ((finds += 1), readStore.find(...args)) },
  });
  dispatcher = new WebhookDispatcher({
    eventStore,
    readStore: counted,
    secretsKey: key,
    clock: () => new Date(),
    logger: createLogger('silent'),
    assetScale: 2,
    policy: DEFAULT_RETRY_POLICY,
    timeoutMs: 5_000,
    concurrency: 8,
    pollIntervalMs: 60_000,
    leaseMs: 60_000,
    rules: { allowLoopback: true },
  });
  dispatcher.start();
  // The first pass is a full scan (every endpoint, none has anything): let it end
  await waitFor(() => dispatcher!.consumer.status().state === 'running');
  await waitFor(() => finds >= 1 + ENDPOINTS);
  await new Promise((resolve) => setImmediate(resolve));

  const before = finds;
  const message = {
    eventID: 'evt_000000000000000000000001',
    type: 'operation.completed' as const,
    party,
    createdAt: new Date().toISOString(),
    body: '{"id":"evt_000000000000000000000001"}',
  };
  await readStore.commit([
    { op: 'upsert', collection: WEBHOOK_DELIVERIES_COLLECTION.name, doc: newDelivery(target, message, 1, new Date()) },
  ]);
  dispatcher.wake([target.id]);
  await receiver.waitForRequests(1);

  expect(receiver.received[0]!.json.id).toBe(message.eventID);
  expect(
    verifyWebhookSignature(
      secret,
      String(receiver.received[0]!.headers['webhook-signature']),
      receiver.received[0]!.body,
      Math.floor(Date.now() / 1000),
    ),
  ).toBe(true);
  expect(finds - before).toBeLessThan(10);
});

it('given two dispatchers on one store (two processes), when an endpoint has a backlog, then each delivery is sent once, in order, by whichever holds the lease', async () => {
  sys = await startTestSystem({ LOG_LEVEL: 'silent' }, undefined, ['projections']);
  receiver = await startWebhookReceiver();
  const { eventStore, readStore } = sys.system.stores;
  await readStore.defineCollections([...WEBHOOK_COLLECTIONS, WEBHOOK_LEASES_COLLECTION]);
  const key = randomBytes(32);
  const party = { type: 'distributor' as const, id: randomUUID() };
  const route: RouteDoc = {
    id: 'whe_0000000000000042',
    partyType: party.type,
    partyID: party.id,
    url: receiver.url,
    eventTypes: ['operation.completed'],
    status: 'active',
  };
  await readStore.commit([{ op: 'upsert', collection: WEBHOOK_ROUTES_COLLECTION.name, doc: route }]);
  await eventStore.append(
    streams.webhookEndpoint(route.id),
    [
      {
        type: 'WebhookEndpointRequested',
        data: {
          endpointID: route.id,
          party,
          url: route.url,
          eventTypes: route.eventTypes,
          requestedBy: 'u1',
          requestedAt: new Date().toISOString(),
        },
      },
      {
        type: 'WebhookEndpointApproved',
        data: {
          endpointID: route.id,
          approvedBy: 'u2',
          approvedAt: new Date().toISOString(),
          secret: sealWebhookSecret(key, route.id, newWebhookSecret()),
        },
      },
    ],
    'no_stream',
  );
  const ids = Array.from({ length: 60 }, (_, i) => `evt_${String(i).padStart(24, '0')}`);
  await readStore.commit(
    ids.map((eventID, i) => ({
      op: 'upsert' as const,
      collection: WEBHOOK_DELIVERIES_COLLECTION.name,
      doc: newDelivery(
        route,
        {
          eventID,
          type: 'operation.completed',
          party,
          createdAt: new Date().toISOString(),
          body: JSON.stringify({ id: eventID }),
        },
        i + 1,
        new Date(),
      ),
    })),
  );

  const options = {
    eventStore,
    readStore,
    secretsKey: key,
    clock: () => new Date(),
    logger: createLogger('silent'),
    assetScale: 2,
    policy: DEFAULT_RETRY_POLICY,
    timeoutMs: 5_000,
    concurrency: 8,
    pollIntervalMs: 20,
    leaseMs: 60_000,
    rules: { allowLoopback: true },
  };
  dispatcher = new WebhookDispatcher(options);
  const other = new WebhookDispatcher(options);
  try {
    dispatcher.start();
    other.start();
    await receiver.waitForRequests(ids.length);
    // Both keep polling the endpoint meanwhile; give them a few more passes to send anything twice
    await waitFor(
      () => dispatcher!.consumer.status().state === 'running' && other.consumer.status().state === 'running',
    );
    // The receiver answers before the sender records the delivery: wait for the last record to settle.
    const delivered = () =>
      readStore.count(WEBHOOK_DELIVERIES_COLLECTION.name, { where: { endpointID: route.id, status: 'delivered' } });
    await waitFor(async () => (await delivered()) >= ids.length);
    expect(await delivered()).toBe(ids.length);
    expect(receiver.received.map((r) => r.json.id)).toEqual(ids);
  } finally {
    await other.stop();
  }
});

it('given an endpoint whose name resolves to an internal address, when a delivery is refused, then the delivery log says only "refused: address not allowed" and the operator log has the address', async () => {
  sys = await startTestSystem({ LOG_LEVEL: 'silent' }, undefined, ['projections']);
  const { eventStore, readStore } = sys.system.stores;
  await readStore.defineCollections([...WEBHOOK_COLLECTIONS, WEBHOOK_LEASES_COLLECTION]);
  const key = randomBytes(32);
  const party = { type: 'merchant' as const, id: randomUUID() };
  const route: RouteDoc = {
    id: 'whe_0000000000000007',
    partyType: party.type,
    partyID: party.id,
    url: 'https://hooks.corp.example/in',
    eventTypes: ['operation.completed'],
    status: 'active',
  };
  await readStore.commit([{ op: 'upsert', collection: WEBHOOK_ROUTES_COLLECTION.name, doc: route }]);
  await eventStore.append(
    streams.webhookEndpoint(route.id),
    [
      {
        type: 'WebhookEndpointRequested',
        data: {
          endpointID: route.id,
          party,
          url: route.url,
          eventTypes: route.eventTypes,
          requestedBy: 'u1',
          requestedAt: new Date().toISOString(),
        },
      },
      {
        type: 'WebhookEndpointApproved',
        data: {
          endpointID: route.id,
          approvedBy: 'u2',
          approvedAt: new Date().toISOString(),
          secret: sealWebhookSecret(key, route.id, newWebhookSecret()),
        },
      },
    ],
    'no_stream',
  );
  const message = {
    eventID: 'evt_000000000000000000000009',
    type: 'operation.completed' as const,
    party,
    createdAt: new Date().toISOString(),
    body: '{"id":"evt_000000000000000000000009"}',
  };
  const delivery = newDelivery(route, message, 1, new Date());
  await readStore.commit([{ op: 'upsert', collection: WEBHOOK_DELIVERIES_COLLECTION.name, doc: delivery }]);

  const lines: string[] = [];
  dispatcher = new WebhookDispatcher({
    eventStore,
    readStore,
    secretsKey: key,
    clock: () => new Date(),
    logger: createLogger('info', { write: (line: string) => void lines.push(line) }),
    assetScale: 2,
    policy: DEFAULT_RETRY_POLICY,
    timeoutMs: 5_000,
    concurrency: 8,
    pollIntervalMs: 20,
    leaseMs: 60_000,
    rules: { allowLoopback: false },
    resolve: async () => [{ address: '10.1.2.3', family: 4 }],
  });
  dispatcher.start();
  await waitFor(async () => (await attemptsOfDelivery(readStore, delivery.id)).length > 0);

  const [attempt] = await attemptsOfDelivery(readStore, delivery.id);
  expect(attempt).toMatchObject({ ok: false, statusCode: null, error: 'refused: address not allowed' });
  expect((await getDelivery(readStore, delivery.id))?.lastError).toBe('refused: address not allowed');
  expect(JSON.stringify(attempt)).not.toMatch(/10\.1\.2\.3/);
  const logged = lines
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .find((entry) => entry.msg === 'webhook delivery attempt failed');
  expect(logged).toMatchObject({
    endpointID: route.id,
    eventID: message.eventID,
    attempt: 1,
    error: 'refused: address not allowed',
    detail: expect.stringMatching(/10\.1\.2\.3 \(private\)/),
  });
});

/** An approved endpoint with deliveries queued for these events, on the test system's stores. */
async function endpointWithBacklog(system: TestSystem, url: string, count: number) {
  const { eventStore, readStore } = system.system.stores;
  await readStore.defineCollections([...WEBHOOK_COLLECTIONS, WEBHOOK_LEASES_COLLECTION]);
  const key = randomBytes(32);
  const party = { type: 'distributor' as const, id: randomUUID() };
  const route: RouteDoc = {
    id: 'whe_0000000000000090',
    partyType: party.type,
    partyID: party.id,
    url,
    eventTypes: ['operation.completed'],
    status: 'active',
  };
  await readStore.commit([{ op: 'upsert', collection: WEBHOOK_ROUTES_COLLECTION.name, doc: route }]);
  await eventStore.append(
    streams.webhookEndpoint(route.id),
    [
      {
        type: 'WebhookEndpointRequested',
        data: {
          endpointID: route.id,
          party,
          url: route.url,
          eventTypes: route.eventTypes,
          requestedBy: 'u1',
          requestedAt: new Date().toISOString(),
        },
      },
      {
        type: 'WebhookEndpointApproved',
        data: {
          endpointID: route.id,
          approvedBy: 'u2',
          approvedAt: new Date().toISOString(),
          secret: sealWebhookSecret(key, route.id, newWebhookSecret()),
        },
      },
    ],
    'no_stream',
  );
  const ids = Array.from({ length: count }, (_, i) => `evt_${String(i).padStart(24, '0')}`);
  const deliveries = ids.map((eventID, i) =>
    newDelivery(
      route,
      {
        eventID,
        type: 'operation.completed',
        party,
        createdAt: new Date().toISOString(),
        body: JSON.stringify({ id: eventID }),
      },
      i + 1,
      new Date(),
    ),
  );
  await readStore.commit(
    deliveries.map((doc) => ({ op: 'upsert' as const, collection: WEBHOOK_DELIVERIES_COLLECTION.name, doc })),
  );
  const options = {
    eventStore,
    readStore,
    secretsKey: key,
    clock: () => new Date(),
    logger: createLogger('silent'),
    assetScale: 2,
    policy: DEFAULT_RETRY_POLICY,
    timeoutMs: 250,
    concurrency: 8,
    pollIntervalMs: 20,
    leaseMs: 1_000,
    rules: { allowLoopback: true },
  };
  return { ids, deliveries, route, options };
}

it('given two dispatchers on one store, one with a clock 90 s ahead, when an endpoint has a backlog, then each delivery is sent once, in order (the lease never trusts either wall clock)', async () => {
  sys = await startTestSystem({ LOG_LEVEL: 'silent' }, undefined, ['projections']);
  receiver = await startWebhookReceiver();
  receiver.respond(() => new Promise((resolve) => setTimeout(() => resolve(200), 40)));
  const { ids, options, route } = await endpointWithBacklog(sys, receiver.url, 40);
  // Both live: neither may take the other's lease, however slow a loaded machine makes an attempt (a 30 s lease, a
  // 5 s timeout), while the 90 s the clocks differ by is three leases: a lease read from either wall clock would
  // be over at once, and the queue sent twice.
  const live = { ...options, timeoutMs: 5_000, leaseMs: 30_000 };
  dispatcher = new WebhookDispatcher(live);
  const ahead = new WebhookDispatcher({ ...live, clock: () => new Date(Date.now() + 90_000) });
  try {
    dispatcher.start();
    ahead.start();
    const { readStore } = sys.system.stores;
    await waitFor(
      async () =>
        (await readStore.count(WEBHOOK_DELIVERIES_COLLECTION.name, {
          where: { endpointID: route.id, status: 'delivered' },
        })) === ids.length,
      30_000,
    );
    await new Promise((resolve) => setTimeout(resolve, 300)); // time for a second send of anything
    expect(receiver.received.map((r) => r.json.id)).toEqual(ids);
  } finally {
    await ahead.stop();
  }
});

it('given a sender stalled past its lease (as after SIGSTOP), when another process delivered the event meanwhile, then the stalled attempt is not recorded over the successful one', async () => {
  sys = await startTestSystem({ LOG_LEVEL: 'silent' }, undefined, ['projections']);
  receiver = await startWebhookReceiver();
  // The first send hangs past the 1 s lease and then fails; the second (the other process's) succeeds.
  receiver.respond((_, index) => (index === 0 ? new Promise((resolve) => setTimeout(() => resolve(500), 1_800)) : 200));
  const { options, deliveries } = await endpointWithBacklog(sys, receiver.url, 1);
  const { readStore } = sys.system.stores;
  dispatcher = new WebhookDispatcher({ ...options, timeoutMs: 5_000 });
  const other = new WebhookDispatcher({ ...options, timeoutMs: 5_000 });
  try {
    dispatcher.start();
    await receiver.waitForRequests(1);
    other.start();
    await receiver.waitForRequests(2);
    await waitFor(async () => (await getDelivery(readStore, deliveries[0]!.id))?.status === 'delivered');
    await new Promise((resolve) => setTimeout(resolve, 1_200)); // the stalled attempt has its answer by now
    const delivery = await getDelivery(readStore, deliveries[0]!.id);
    expect(delivery).toMatchObject({ status: 'delivered', attempts: 1, lastStatusCode: 200, lastError: null });
    expect(await attemptsOfDelivery(readStore, deliveries[0]!.id)).toEqual([
      expect.objectContaining({ attempt: 1, ok: true, statusCode: 200 }),
    ]);
  } finally {
    await other.stop();
  }
});

it('given a delivery whose failed attempt a process a day ahead recorded, when a dispatcher with a right clock takes the queue over, then it retries after the recorded backoff, not a day later', async () => {
  sys = await startTestSystem({ LOG_LEVEL: 'silent' }, undefined, ['projections']);
  receiver = await startWebhookReceiver();
  const { options, deliveries } = await endpointWithBacklog(sys, receiver.url, 1);
  const { readStore } = sys.system.stores;
  // As the fast process recorded it: its first attempt failed "tomorrow", and it backs off 300 ms from there.
  const tomorrow = Date.now() + 86_400_000;
  await readStore.commit([
    {
      op: 'patch',
      collection: WEBHOOK_DELIVERIES_COLLECTION.name,
      id: deliveries[0]!.id,
      patch: {
        attempts: 1,
        lastAttemptAt: new Date(tomorrow).toISOString(),
        nextAttemptAt: tomorrow + 300,
        failingSince: tomorrow,
        lastStatusCode: 503,
        lastError: 'HTTP 503',
      },
    },
  ]);
  dispatcher = new WebhookDispatcher(options);
  dispatcher.start();
  await receiver.waitForRequests(1, 5_000);
  await waitFor(async () => (await getDelivery(readStore, deliveries[0]!.id))?.status === 'delivered');
});

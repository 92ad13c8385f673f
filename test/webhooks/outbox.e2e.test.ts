import { randomUUID } from 'node:crypto';
import { afterEach, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.ts';
import { streams } from '../../src/domain/streams.ts';
import { WEBHOOK_COLLECTIONS, WEBHOOK_DELIVERIES_COLLECTION, type DeliveryDoc } from '../../src/webhooks/deliveries.ts';
import { createWebhookOutbox, evolveRoute } from '../../src/webhooks/outbox.ts';
import { startTestSystem, waitFor, type TestSystem } from '../support/system.ts';
import { newOperationID } from '../support/given-events.ts';

/**
 * The outbox queues each event once per endpoint, however many outboxes run and however often they restart:
 * two outboxes on one store at once (as two processes would), one of them stopped and started again midway.
 * The events are appended as the write side appends them, without the HTTP layer (not what is tested here).
 */
let sys: TestSystem | undefined;
afterEach(async () => sys?.close());

const ENDPOINTS = 3;
const OPERATIONS = 150;

it('given two outboxes racing, one restarted midway, then every event is queued exactly once for every endpoint', async () => {
  sys = await startTestSystem({ LOG_LEVEL: 'silent' }, undefined, ['projections']);
  const { eventStore, readStore } = sys.system.stores;
  await readStore.defineCollections(WEBHOOK_COLLECTIONS);
  const party = { type: 'distributor' as const, id: randomUUID() };
  const append = (stream: string, type: string, data: unknown) =>
    eventStore.append(stream, [{ type, data, metadata: { actor: 'operator:test' } }], 'any');

  // Given active endpoints of the party, registered and approved (the events the commands append)
  for (let i = 0; i < ENDPOINTS; i++) {
    const endpointID = `whe_${randomUUID().replaceAll('-', '').slice(0, 16)}`;
    await append(streams.webhookEndpoint(endpointID), 'WebhookEndpointRequested', {
      endpointID,
      party,
      url: `https://hooks${i}.example/in`,
      eventTypes: ['operation.approved'],
      requestedBy: 'u1',
      requestedAt: new Date().toISOString(),
    });
    await append(streams.webhookEndpoint(endpointID), 'WebhookEndpointApproved', {
      endpointID,
      approvedBy: 'u2',
      approvedAt: new Date().toISOString(),
      secret: { sealedWith: 'x', iv: 'x', tag: 'x', data: 'x' },
    });
  }
  const options = {
    eventStore,
    readStore,
    assetScale: 2,
    maxEventAgeMs: 86_400_000,
    logger: createLogger('silent'),
    clock: () => new Date(),
    supervision: { baseDelayMs: 1, maxDelayMs: 20 },
  };
  // The second outbox is slow to commit (a process on a loaded machine): it keeps trying to queue events the
  // first has already queued, and the marker below has already marked delivered.
  const slowStore: typeof readStore = Object.create(readStore, {
    commit: {
      value: async (...args: Parameters<typeof readStore.commit>) => {
        await new Promise((resolve) => setTimeout(resolve, 15));
        return readStore.commit(...args);
      },
    },
  });
  const first = createWebhookOutbox(options);
  let second = createWebhookOutbox({ ...options, readStore: slowStore });
  first.start();
  second.start();
  // A stand-in for the dispatcher marks every queued delivery delivered at once and counts how often it saw each:
  // an outbox that queued an event again would put a delivered delivery back to pending, and it would be seen twice.
  const seen = new Map<string, number>();
  let marking = true;
  const marker = (async () => {
    while (marking) {
      const pending = await readStore.find<DeliveryDoc>(WEBHOOK_DELIVERIES_COLLECTION.name, {
        where: { status: 'pending' },
      });
      for (const d of pending) seen.set(d.id, (seen.get(d.id) ?? 0) + 1);
      if (pending.length > 0)
        await readStore.commit(
          pending.map((d) => ({
            op: 'patch' as const,
            collection: WEBHOOK_DELIVERIES_COLLECTION.name,
            id: d.id,
            patch: { status: 'delivered' },
          })),
        );
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
  })();

  // When operations are approved while both run, and one of them is stopped and started again midway
  for (let i = 0; i < OPERATIONS; i++) {
    const operationID = newOperationID();
    await append(streams.operation(operationID), 'OperationRequested', {
      operationID,
      party,
      keyID: 'key_1',
      operationType: 'cash-in',
      amount: '1.00',
      fee: '0.00',
      payer: { kind: 'distributor', id: party.id },
      payee: { kind: 'individual', id: '+2348120000001' },
      payerName: 'D',
      payerShortCode: '1',
      counterparty: { kind: 'individual', id: '+2348120000001', name: 'I' },
      memo: null,
      cashOutFulfillmentType: null,
      cashOutFulfillmentID: null,
      volumeDay: null,
      createdAt: new Date().toISOString(),
    });
    await append(streams.operation(operationID), 'OperationApproved', {
      operationID,
      approvedBy: 'u2',
      approvedAt: new Date().toISOString(),
    });
    if (i === OPERATIONS / 2) {
      await second.stop();
      second = createWebhookOutbox({ ...options, readStore: slowStore });
      second.start();
    }
  }

  // Then each approval is queued once per endpoint: no event lost, none twice
  const expected = OPERATIONS * ENDPOINTS;
  await waitFor(
    async () =>
      (await readStore.count(WEBHOOK_DELIVERIES_COLLECTION.name, { where: { partyID: party.id } })) >= expected,
    20_000,
  );
  await waitFor(
    async () => (await readStore.getCheckpoint('webhook-outbox')) === (await eventStore.headPosition()),
    20_000,
  );
  await waitFor(() => seen.size === expected);
  marking = false;
  await marker;
  await Promise.all([first.stop(), second.stop()]);
  const deliveries = await readStore.find<DeliveryDoc>(WEBHOOK_DELIVERIES_COLLECTION.name, {});
  expect(deliveries).toHaveLength(expected);
  expect(deliveries.filter((d) => d.status !== 'delivered')).toEqual([]);
  expect([...seen.values()].filter((times) => times > 1)).toEqual([]);
}, 60_000);

it('given events older than the retry window when the outbox reaches them (a store restored empty), then they are not queued', async () => {
  sys = await startTestSystem({ LOG_LEVEL: 'silent' }, undefined, ['projections']);
  const { eventStore, readStore } = sys.system.stores;
  await readStore.defineCollections(WEBHOOK_COLLECTIONS);
  const party = { type: 'distributor' as const, id: randomUUID() };
  const append = (stream: string, type: string, data: unknown) =>
    eventStore.append(stream, [{ type, data, metadata: { actor: 'operator:test' } }], 'any');
  const endpointID = `whe_${randomUUID().replaceAll('-', '').slice(0, 16)}`;
  await append(streams.webhookEndpoint(endpointID), 'WebhookEndpointRequested', {
    endpointID,
    party,
    url: 'https://hooks.example/in',
    eventTypes: ['operation.approved'],
    requestedBy: 'u1',
    requestedAt: new Date().toISOString(),
  });
  await append(streams.webhookEndpoint(endpointID), 'WebhookEndpointApproved', {
    endpointID,
    approvedBy: 'u2',
    approvedAt: new Date().toISOString(),
    secret: { sealedWith: 'x', iv: 'x', tag: 'x', data: 'x' },
  });
  const operationID = newOperationID();
  await append(streams.operation(operationID), 'OperationRequested', {
    operationID,
    party,
    keyID: 'key_1',
    operationType: 'cash-in',
    amount: '1.00',
    fee: '0.00',
    payer: { kind: 'distributor', id: party.id },
    payee: { kind: 'individual', id: '+2348120000001' },
    payerName: 'D',
    payerShortCode: '1',
    counterparty: { kind: 'individual', id: '+2348120000001', name: 'I' },
    memo: null,
    cashOutFulfillmentType: null,
    cashOutFulfillmentID: null,
    volumeDay: null,
    createdAt: new Date().toISOString(),
  });
  const approved = await append(streams.operation(operationID), 'OperationApproved', {
    operationID,
    approvedBy: 'u2',
    approvedAt: new Date().toISOString(),
  });

  // The outbox's clock is a day and a minute later: it reaches the approval past the window
  const outbox = createWebhookOutbox({
    eventStore,
    readStore,
    assetScale: 2,
    maxEventAgeMs: 86_400_000,
    logger: createLogger('silent'),
    clock: () => new Date(Date.now() + 86_460_000),
  });
  outbox.start();
  await waitFor(() => (outbox.consumer.status().position ?? 0) >= approved.position);
  await outbox.stop();
  expect(await readStore.count(WEBHOOK_DELIVERIES_COLLECTION.name, { where: { endpointID } })).toBe(0);
  expect(await readStore.get('webhook_routes', endpointID)).toMatchObject({ status: 'active' });
});

it('given an active route, when its secret is rotated, then the route records when (so dispatchers open the new secrets) and stays active', () => {
  const route = {
    id: 'whe_0000000000000001',
    partyType: 'merchant' as const,
    partyID: 'm1',
    url: 'https://shop.example/hooks',
    eventTypes: ['api_key.revoked' as const],
    status: 'active' as const,
  };
  const sealed = { sealedWith: '0123456789abcdef', iv: 'aXY=', tag: 'dGFn', data: 'ZGF0YQ==' };
  const rotated = {
    type: 'WebhookSecretRotated',
    data: {
      endpointID: route.id,
      approvedBy: 'u2',
      rotatedAt: '2026-01-01T00:00:00.000Z',
      secret: sealed,
      previousValidUntil: '2026-01-02T00:00:00.000Z',
      secretHolder: 'u1',
    },
  };
  expect(evolveRoute(route, rotated)).toEqual({ ...route, rotatedAt: '2026-01-01T00:00:00.000Z' });
  expect(evolveRoute(null, rotated)).toBeNull();
});

it("given a rotated route, when its previous secret ends at its holder's departure, then the route records when (so dispatchers stop signing with it)", () => {
  const route = {
    id: 'whe_0000000000000001',
    partyType: 'merchant' as const,
    partyID: 'm1',
    url: 'https://shop.example/hooks',
    eventTypes: ['api_key.revoked' as const],
    status: 'active' as const,
    rotatedAt: '2026-01-01T00:00:00.000Z',
  };
  const ended = {
    type: 'WebhookEndpointPreviousSecretEnded',
    data: { endpointID: route.id, endedAt: '2026-01-01T05:00:00.000Z', departedUserID: 'u1' },
  };
  expect(evolveRoute(route, ended)).toEqual({ ...route, rotatedAt: '2026-01-01T05:00:00.000Z' });
  expect(evolveRoute(null, ended)).toBeNull();
});

import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { embeddedSecretsKey } from '../../src/adapters/secrets-key-file.ts';
import { disableWebhookEndpointBySystem } from '../../src/commands/webhooks.ts';
import type { WebhookEndpointApproved } from '../../src/domain/events.ts';
import { streams } from '../../src/domain/streams.ts';
import { openWebhookSecret } from '../../src/domain/webhook-secrets.ts';
import { WEBHOOK_ENDPOINTS_COLLECTION, type WebhookEndpointDoc } from '../../src/projections/webhook-endpoints.ts';
import { onboardParty } from '../../src/commands/back-office.ts';
import { loadConfig } from '../../src/config.ts';
import { createLogger } from '../../src/logger.ts';
import { ALL_PARTS, buildWalletOps } from '../../src/wallet-ops.ts';
import { tempDir } from '../support/temp-dir.ts';
import { getDelivery, deliveryID, type DeliveryDoc } from '../../src/webhooks/deliveries.ts';
import { startTestSystem, waitFor, type TestParty, type TestSystem } from '../support/system.ts';
import { CHECKER_PASSWORD, ConsoleClient, extraUser, MAKER_PASSWORD, OTHER_PASSWORD } from './console-client.ts';
import { seedDeliveries, seedRoute, type SeededEndpoint } from './webhook-seeds.ts';

/**
 * The console's webhook pages over HTTP: registration under maker-checker, the signing secret shown once to
 * the maker, the delivery log and redelivery, and every refusal as one of the console's error pages. The
 * delivery consumer does not run here (when the system has it): the delivery log is seeded straight into the
 * read store, so what these tests see is only what they put there.
 */
const offsetMs = 0;
const clock = () => new Date(Date.now() + offsetMs);
const PARTS = ALL_PARTS.filter((part) => part !== 'webhooks');

let sys: TestSystem;
let dist: TestParty;
let other: TestParty;
let bothEmail: string;
let adminEmail: string;

async function as(email: string, password: string): Promise<ConsoleClient> {
  const client = new ConsoleClient(sys.baseUrl);
  await client.loginOk(email, password);
  return client;
}
const maker = () => as(dist.makerEmail, MAKER_PASSWORD);
const checker = () => as(dist.checkerEmail, CHECKER_PASSWORD);

const SECRET = /whsec_[A-Za-z0-9+/]{43}=/;

/** Registers an endpoint in the console as the maker; returns its id. */
async function register(
  client: ConsoleClient,
  url: string,
  eventTypes: string[] = ['operation.completed', 'payment.received'],
): Promise<string> {
  await client.get('/console/webhooks/new');
  const page = await client.post('/console/webhooks', { url, eventTypes });
  expect(page.status, page.text).toBe(303);
  const endpointID = /\/console\/webhooks\/(whe_[A-Za-z0-9_-]{16})$/.exec(page.location ?? '')?.[1];
  expect(endpointID).toBeDefined();
  return endpointID!;
}

async function approve(endpointID: string): Promise<ConsoleClient> {
  const client = await checker();
  const page = await client.post(`/console/webhooks/${endpointID}/approve`);
  expect(page.status, page.text).toBe(303);
  return client;
}

const endpointDoc = (endpointID: string) =>
  sys.system.stores.readStore.get<WebhookEndpointDoc>(WEBHOOK_ENDPOINTS_COLLECTION.name, endpointID);

/** An active endpoint of the party, with the delivery consumer's route for it. */
async function activeEndpoint(url: string): Promise<SeededEndpoint> {
  const id = await register(await maker(), url);
  await approve(id);
  const endpoint: SeededEndpoint = {
    id,
    party: dist.ref,
    url,
    eventTypes: ['operation.completed', 'payment.received'],
  };
  await seedRoute(sys.system.stores.readStore, endpoint);
  return endpoint;
}

const delivery = (endpointID: string, eventID: string) =>
  getDelivery(sys.system.stores.readStore, deliveryID(endpointID, eventID)) as Promise<DeliveryDoc>;
const minutesAgo = (minutes: number) => new Date(clock().getTime() - minutes * 60_000).toISOString();

beforeAll(async () => {
  sys = await startTestSystem({ WEBHOOK_ALLOW_INSECURE_LOCALHOST: 'true' }, clock, PARTS);
  dist = await sys.party('distributor');
  other = await sys.party('distributor');
  bothEmail = await extraUser(sys.backOffice, dist.ref, ['maker', 'checker'], 'both');
  adminEmail = await extraUser(sys.backOffice, null, [], 'admin');
});

afterAll(async () => {
  await sys?.close();
});

describe('registering an endpoint', () => {
  it('when a maker sends a bad URL and no event type, then the form comes back with 400 and a message per field', async () => {
    const client = await maker();
    await client.get('/console/webhooks/new');
    const page = await client.post('/console/webhooks', { url: 'http://hooks.example.com/in' });
    expect(page.status).toBe(400);
    expect(page.text).toContain('id="url-error"');
    expect(page.text).toContain('The URL must use https.');
    expect(page.text).toContain('id="eventTypes-error"');
    expect(page.text).toContain('aria-invalid="true"');
    expect(page.text).toContain('value="http://hooks.example.com/in"'); // kept for the correction
    const unknown = await client.post('/console/webhooks', {
      url: 'https://hooks.example.com/in',
      eventTypes: ['operation.completed', 'wallet.emptied'],
    });
    expect(unknown.status).toBe(400);
    expect(unknown.text).toContain('unknown event type &quot;wallet.emptied&quot;');
    expect(unknown.text).not.toContain('id="url-error"');
  });

  it('when a maker registers an endpoint, then its page shows it awaiting a checker, the list shows it, and the maker cannot approve it', async () => {
    const client = await maker();
    const endpointID = await register(client, 'https://hooks.example.com/wallet-ops?source=console', [
      'operation.failed',
      'operation.completed',
    ]);
    const page = await client.get(`/console/webhooks/${endpointID}`);
    expect(page.status).toBe(200);
    expect(page.text).toContain('Endpoint registered');
    expect(page.text).toContain('https://hooks.example.com/wallet-ops?source=console');
    expect(page.text).toContain('Awaiting approval');
    expect(page.text).toMatch(/operation\.completed[\s\S]*operation\.failed/); // in the catalog's order
    expect(page.text).toContain(`Requested by ${dist.makerEmail}`);
    expect(page.text).not.toContain(`action="/console/webhooks/${endpointID}/approve"`);
    await waitFor(async () => (await endpointDoc(endpointID)) !== null);
    const list = await client.get('/console/webhooks');
    expect(list.text).toContain(`data-endpoint-id="${endpointID}"`);
    const refused = await client.post(`/console/webhooks/${endpointID}/approve`);
    expect(refused.status).toBe(403);
    expect(refused.text).toContain('This needs the checker role.');
    expect((await endpointDoc(endpointID))?.status).toBe('pending');
  });

  it('when the server allows insecure localhost, then http://127.0.0.1 is accepted', async () => {
    const endpointID = await register(await maker(), 'http://127.0.0.1:9/hooks');
    expect(endpointID).toMatch(/^whe_/);
  });

  it('when a checker registers, then it is refused with 403', async () => {
    const client = await checker();
    expect((await client.get('/console/webhooks/new')).status).toBe(403);
    expect(
      (
        await client.post('/console/webhooks', {
          url: 'https://hooks.example.com/x',
          eventTypes: 'operation.completed',
        })
      ).status,
    ).toBe(403);
  });

  it('when a user with both roles registers an endpoint, then their approve control is disabled and the server refuses it anyway', async () => {
    const client = await as(bothEmail, OTHER_PASSWORD);
    const endpointID = await register(client, 'https://hooks.example.com/own');
    const page = await client.get(`/console/webhooks/${endpointID}`);
    expect(page.text).toMatch(/<button type="button" disabled[^>]*>Approve<\/button>/);
    const refused = await client.post(`/console/webhooks/${endpointID}/approve`);
    expect(refused.status).toBe(403);
    expect(refused.text).toContain('the maker of a request cannot also check it');
  });
});

describe('approval and the signing secret', () => {
  it('when a checker approves, then the checker never sees the signing secret and the maker sees it once: the secret sealed in the approval', async () => {
    const makerClient = await maker();
    const endpointID = await register(makerClient, 'https://hooks.example.com/secret-once');
    await makerClient.get(`/console/webhooks/${endpointID}`);
    const checkerClient = await checker();
    const approved = await checkerClient.post(`/console/webhooks/${endpointID}/approve`);
    expect(approved.status).toBe(303);
    const checkerView = await checkerClient.get(approved.location!);
    expect(checkerView.text).toContain(`${dist.makerEmail} will see its signing secret once`);
    expect(checkerView.text).toContain('>Active<');
    expect(checkerView.text).not.toMatch(SECRET);

    const first = await makerClient.get('/console/webhooks');
    expect(first.text).toContain('<dialog class="secret" open data-modal');
    const shown = new RegExp(`value="(${SECRET.source})"`).exec(first.text)?.[1];
    expect(shown).toBeDefined();
    const [approval] = (await sys.system.stores.eventStore.readStream(streams.webhookEndpoint(endpointID))).filter(
      (e) => e.type === 'WebhookEndpointApproved',
    );
    expect(
      openWebhookSecret(
        embeddedSecretsKey(sys.config.DATA_DIR),
        endpointID,
        (approval!.data as WebhookEndpointApproved['data']).secret,
      ),
    ).toBe(shown);

    const again = await makerClient.get('/console/webhooks');
    expect(again.text).not.toContain(shown!);
    expect(again.text).not.toContain('<dialog');
    expect((await checkerClient.get('/console/webhooks')).text).not.toMatch(SECRET);
    expect((await (await as(bothEmail, OTHER_PASSWORD)).get('/console/webhooks')).text).not.toMatch(SECRET);
  });

  it('when a checker rejects with a reason, then the endpoint shows rejected with it, and it can no longer be approved', async () => {
    const endpointID = await register(await maker(), 'https://hooks.example.com/rejected');
    const client = await checker();
    await client.get(`/console/webhooks/${endpointID}`);
    expect((await client.post(`/console/webhooks/${endpointID}/reject`, { reason: 'Not our <ERP>' })).status).toBe(303);
    const page = await client.get(`/console/webhooks/${endpointID}`);
    expect(page.text).toContain('Rejected by');
    expect(page.text).toContain('Not our &lt;ERP&gt;');
    const late = await client.post(`/console/webhooks/${endpointID}/approve`);
    expect(late.status).toBe(409);
    expect(late.text).toContain('Not possible now');
  });
});

describe('disabling', () => {
  it('when a maker disables without a reason, then the form comes back with 400; with one, the endpoint is disabled and says by whom', async () => {
    const { id } = await activeEndpoint('https://hooks.example.com/to-disable');
    const client = await maker();
    expect((await client.get(`/console/webhooks/${id}/disable`)).status).toBe(200);
    const empty = await client.post(`/console/webhooks/${id}/disable`, { reason: '  ' });
    expect(empty.status).toBe(400);
    expect(empty.text).toContain('id="reason-error"');
    expect((await client.post(`/console/webhooks/${id}/disable`, { reason: 'ERP moved' })).status).toBe(303);
    const page = await client.get(`/console/webhooks/${id}`);
    expect(page.text).toContain(`Disabled by ${dist.makerEmail}`);
    expect(page.text).toContain('ERP moved');
  });

  it('when the delivery consumer disabled an endpoint after a day of failures, then its page, the list and the dashboard say so', async () => {
    const { id, url } = await activeEndpoint('https://hooks.example.com/always-down');
    await disableWebhookEndpointBySystem(sys.backOffice, id, 'every delivery failed for 24 hours (last: HTTP 503)', {
      actor: 'system:webhooks',
      correlationId: 'test',
    });
    const client = await checker();
    const page = await client.get(`/console/webhooks/${id}`);
    expect(page.text).toContain('Disabled automatically after a day of failed deliveries');
    expect(page.text).toContain('every delivery failed for 24 hours (last: HTTP 503)');
    await waitFor(async () => (await endpointDoc(id))?.status === 'disabled');
    const list = await client.get('/console/webhooks');
    expect(list.text).toContain('data-system-disabled');
    expect(list.text).toContain(url);
    expect((await client.get('/console/')).text).toContain('disabled automatically after a day of failed deliveries');
  });
});

describe('the delivery log', () => {
  let endpoint: SeededEndpoint;
  /** Event i happened 60 - i minutes before this. */
  const seededAt = clock().getTime();
  const eventTime = (i: number) => new Date(seededAt - (60 - i) * 60_000).toISOString();
  beforeAll(async () => {
    endpoint = await activeEndpoint('https://hooks.example.com/log');
    await seedDeliveries(
      sys.system.stores.readStore,
      endpoint,
      Array.from({ length: 30 }, (_, i) => ({
        eventID: `evt_log${String(i).padStart(3, '0')}`,
        position: 1000 + i,
        createdAt: eventTime(i),
        status: i === 29 ? 'pending' : i === 28 ? 'failed' : 'delivered',
        nextAttemptAt: clock().getTime() + 60_000,
        attempts:
          i === 29
            ? [
                { statusCode: 500, responseBody: `<script>alert(1)</script>${'x'.repeat(900)}`, at: minutesAgo(1) },
                { statusCode: null, error: 'connect ECONNREFUSED 203.0.113.9:443', at: minutesAgo(0.5), durationMs: 3 },
              ]
            : [{ statusCode: i === 28 ? 410 : 200, responseBody: 'ok', at: minutesAgo(59 - i) }],
      })),
    );
  });

  it('when a maker opens the endpoint, then the deliveries show newest first, 25 a page, with status, attempts, last response, last error and next attempt', async () => {
    const client = await maker();
    const page = await client.get(`/console/webhooks/${endpoint.id}`);
    expect(page.status).toBe(200);
    const rows = [...page.text.matchAll(/<tr data-event-id="([^"]+)"/g)].map((m) => m[1]);
    expect(rows).toHaveLength(25);
    expect(rows[0]).toBe('evt_log029');
    expect(rows[24]).toBe('evt_log005');
    const newest = page.text.slice(page.text.indexOf('data-event-id="evt_log029"'));
    const row = newest.slice(0, newest.indexOf('</tr>'));
    expect(row).toContain('Pending');
    // Recorded by an earlier version with the system's message: shown as its category, without the address.
    expect(row).toContain('connection failed');
    expect(row).not.toContain('203.0.113.9');
    expect(row).toContain('no answer');
    expect(row).toMatch(/<td class="num" data-label="Attempts">2<\/td>/);
    expect(row).toContain(
      `datetime="${new Date((await delivery(endpoint.id, 'evt_log029')).nextAttemptAt).toISOString()}"`,
    ); // the next attempt
    const failed = page.text.slice(page.text.indexOf('data-event-id="evt_log028"'));
    expect(failed.slice(0, failed.indexOf('</tr>'))).toMatch(/Failed[\s\S]*HTTP 410/);
    expect(page.text).toContain('1–25 of 30');
    const older = await client.get(`/console/webhooks/${endpoint.id}?offset=25`);
    expect([...older.text.matchAll(/<tr data-event-id="([^"]+)"/g)].map((m) => m[1])).toEqual([
      'evt_log004',
      'evt_log003',
      'evt_log002',
      'evt_log001',
      'evt_log000',
    ]);
  });

  it('when a maker opens a delivery, then every attempt shows with its time, duration, status code, truncated and escaped body, and error', async () => {
    const page = await (await maker()).get(`/console/webhooks/${endpoint.id}/deliveries/evt_log029`);
    expect(page.status).toBe(200);
    expect(page.text).toContain('<tr data-attempt="1">');
    expect(page.text).toContain('<tr data-attempt="2">');
    expect(page.text).toContain('HTTP 500');
    expect(page.text).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(page.text).not.toContain('<script>alert(1)');
    expect(page.text).not.toContain('x'.repeat(600)); // shortened for the page
    expect(page.text).toContain('connection failed');
    expect(page.text).not.toContain('ECONNREFUSED');
    expect(page.text).toContain('3 ms');
  });

  it('when a maker redelivers one event, then it waits again, due now, marked with who asked; the same for every event since a time', async () => {
    const client = await maker();
    await client.get(`/console/webhooks/${endpoint.id}`);
    const done = await client.post(`/console/webhooks/${endpoint.id}/deliveries/evt_log010/redeliver`);
    expect(done.status).toBe(303);
    expect(done.location).toBe(`/console/webhooks/${endpoint.id}`);
    const after = await delivery(endpoint.id, 'evt_log010');
    expect(after.status).toBe('pending');
    expect(after.redeliveredBy).toMatch(/^[0-9a-f-]{36}$/);
    expect(Math.abs(after.nextAttemptAt - clock().getTime())).toBeLessThan(60_000);
    expect((await client.get(`/console/webhooks/${endpoint.id}`)).text).toContain(
      'Event evt_log010 queued for redelivery',
    );

    const since = eventTime(26).slice(0, 19); // events 26 to 29 (the field has whole seconds)
    const bulk = await client.post(`/console/webhooks/${endpoint.id}/redeliver`, { since });
    expect(bulk.status).toBe(303);
    expect((await client.get(bulk.location!)).text).toContain('4 events since');
    expect((await delivery(endpoint.id, 'evt_log026')).redeliveredBy).toBe(after.redeliveredBy);
    expect((await delivery(endpoint.id, 'evt_log028')).status).toBe('pending');
    expect((await delivery(endpoint.id, 'evt_log025')).redeliveredBy).toBeNull();
  });

  it('when the since field is not a time, then the page comes back with 400 and the field’s error', async () => {
    const client = await maker();
    await client.get(`/console/webhooks/${endpoint.id}`);
    const page = await client.post(`/console/webhooks/${endpoint.id}/redeliver`, { since: 'yesterday-ish' });
    expect(page.status).toBe(400);
    expect(page.text).toContain('id="since-error"');
    expect(page.text).toContain('value="yesterday-ish"');
  });

  it('when a checker redelivers, then it is refused with 403 and nothing changes', async () => {
    const client = await checker();
    expect((await client.get(`/console/webhooks/${endpoint.id}`)).text).not.toContain('/redeliver"');
    expect((await client.post(`/console/webhooks/${endpoint.id}/deliveries/evt_log001/redeliver`)).status).toBe(403);
    expect((await client.post(`/console/webhooks/${endpoint.id}/redeliver`, { since: minutesAgo(120) })).status).toBe(
      403,
    );
    expect((await delivery(endpoint.id, 'evt_log001')).status).toBe('delivered');
  });

  it('when the endpoint is disabled, then redelivery is refused with 409 and its controls are gone', async () => {
    const disabled = await activeEndpoint('https://hooks.example.com/disabled-log');
    await seedDeliveries(sys.system.stores.readStore, disabled, [
      {
        eventID: 'evt_gone',
        position: 2000,
        createdAt: minutesAgo(5),
        status: 'failed',
        attempts: [{ statusCode: 503, at: minutesAgo(4) }],
      },
    ]);
    const client = await maker();
    await client.get(`/console/webhooks/${disabled.id}/disable`);
    expect((await client.post(`/console/webhooks/${disabled.id}/disable`, { reason: 'receiver retired' })).status).toBe(
      303,
    );
    // The delivery consumer may not have seen the disabling yet: its route still says active.
    const page = await client.get(`/console/webhooks/${disabled.id}`);
    expect(page.text).toContain('data-event-id="evt_gone"');
    expect(page.text).not.toContain('/redeliver"');
    const one = await client.post(`/console/webhooks/${disabled.id}/deliveries/evt_gone/redeliver`);
    expect(one.status).toBe(409);
    expect(one.text).toContain('This endpoint is disabled');
    expect((await client.post(`/console/webhooks/${disabled.id}/redeliver`, { since: minutesAgo(60) })).status).toBe(
      409,
    );
    expect((await delivery(disabled.id, 'evt_gone')).status).toBe('failed');
  });

  it('when an endpoint is active but the delivery consumer has not seen it, then its page says so and redelivery is refused with 409', async () => {
    const id = await register(await maker(), 'https://hooks.example.com/not-routed');
    await approve(id);
    const client = await maker();
    expect((await client.get(`/console/webhooks/${id}`)).text).toContain('has not picked up this endpoint yet');
    expect((await client.post(`/console/webhooks/${id}/redeliver`, { since: minutesAgo(60) })).status).toBe(409);
  });
});

describe('other parties, administrators and malformed requests', () => {
  let endpoint: SeededEndpoint;
  beforeAll(async () => {
    endpoint = await activeEndpoint('https://hooks.example.com/private');
    await seedDeliveries(sys.system.stores.readStore, endpoint, [
      {
        eventID: 'evt_private',
        position: 3000,
        createdAt: minutesAgo(3),
        status: 'delivered',
        attempts: [{ statusCode: 200, at: minutesAgo(2) }],
      },
    ]);
  });

  it('when a user of another party looks or acts, then the endpoint is not found (404), never listed, and nothing changes', async () => {
    const rivalMaker = await as(other.makerEmail, MAKER_PASSWORD);
    const rivalChecker = await as(other.checkerEmail, CHECKER_PASSWORD);
    await waitFor(async () => (await endpointDoc(endpoint.id))?.status === 'active');
    for (const page of [await rivalMaker.get('/console/webhooks'), await rivalMaker.get('/console/')]) {
      expect(page.status).toBe(200);
      expect(page.text).not.toContain(endpoint.id);
      expect(page.text).not.toContain(endpoint.url);
    }
    expect((await rivalMaker.get(`/console/webhooks/${endpoint.id}`)).status).toBe(404);
    expect((await rivalMaker.get(`/console/webhooks/${endpoint.id}/deliveries/evt_private`)).status).toBe(404);
    expect((await rivalMaker.post(`/console/webhooks/${endpoint.id}/deliveries/evt_private/redeliver`)).status).toBe(
      404,
    );
    expect(
      (await rivalMaker.post(`/console/webhooks/${endpoint.id}/redeliver`, { since: minutesAgo(60) })).status,
    ).toBe(404);
    expect((await rivalMaker.post(`/console/webhooks/${endpoint.id}/disable`, { reason: 'mine now' })).status).toBe(
      404,
    );
    const pending = await register(await maker(), 'https://hooks.example.com/pending-private');
    expect((await rivalChecker.post(`/console/webhooks/${pending}/approve`)).status).toBe(404);
    expect((await rivalChecker.post(`/console/webhooks/${pending}/reject`)).status).toBe(404);
    expect((await delivery(endpoint.id, 'evt_private')).status).toBe('delivered');
    expect((await (await maker()).get(`/console/webhooks/${endpoint.id}`)).text).toContain('>Active<');
  });

  it('when a platform administrator opens Webhooks, then it is refused with 403', async () => {
    const admin = await as(adminEmail, OTHER_PASSWORD);
    expect((await admin.get('/console/webhooks')).status).toBe(403);
    expect((await admin.get(`/console/webhooks/${endpoint.id}`)).status).toBe(403);
  });

  it('when ids are malformed, unknown or hostile, then the answer is the console’s 404 page with the id escaped, never a 500', async () => {
    const client = await maker();
    const hostile = encodeURIComponent('<img src=x onerror=alert(1)>');
    for (const path of [
      `/console/webhooks/${hostile}`,
      '/console/webhooks/whe_AAAAAAAAAAAAAAAA',
      `/console/webhooks/${endpoint.id}/deliveries/${hostile}`,
      `/console/webhooks/${endpoint.id}/deliveries/evt_unknown`,
      `/console/webhooks/${endpoint.id}/deliveries/${encodeURIComponent('evt_x:1')}`,
      `/console/webhooks/${'w'.repeat(5000)}`,
    ]) {
      const page = await client.get(path);
      expect(page.status, path).toBe(404);
      expect(page.text).toContain('<h1>Not found</h1>');
      expect(page.text).not.toContain('<img src=x');
    }
    await client.get('/console/webhooks');
    for (const path of [
      `/console/webhooks/${hostile}/disable`,
      `/console/webhooks/${hostile}/redeliver`,
      `/console/webhooks/${endpoint.id}/deliveries/${hostile}/redeliver`,
      `/console/webhooks/${endpoint.id}/deliveries/evt_unknown/redeliver`,
    ]) {
      const page = await client.post(path, { reason: 'x', since: minutesAgo(1) });
      expect(page.status, path).toBe(404);
    }
  });

  it('when form bodies are malformed, then the console answers with its own pages: 400, 403 or 413, never a 500', async () => {
    const client = await maker();
    await client.get('/console/webhooks/new');
    const repeated = await client.post('/console/webhooks', {
      url: ['https://a.example.com/', 'https://b.example.com/'],
      eventTypes: 'operation.completed',
    });
    expect(repeated.status).toBe(400);
    expect(repeated.text).toContain('id="url-error"');
    const huge = await client.post('/console/webhooks', {
      url: `https://hooks.example.com/${'a'.repeat(20_000)}`,
      eventTypes: 'operation.completed',
    });
    expect(huge.status).toBe(413);
    expect(huge.text).toContain('Too large');
    await client.get('/console/webhooks/new'); // the 413 page, read before the session, carries no form token
    const long = await client.post('/console/webhooks', {
      url: `https://hooks.example.com/${'a'.repeat(3000)}`,
      eventTypes: 'operation.completed',
    });
    expect(long.status).toBe(400);
    expect(long.text).toContain('at most 2048 characters');
    const garbled = await client.post('/console/webhooks', {}, { 'content-type': 'application/x-www-form-urlencoded' });
    expect(garbled.status).toBe(400);
    const noToken = await client.post(`/console/webhooks/${endpoint.id}/deliveries/evt_private/redeliver`, {
      _csrf: null,
    });
    expect(noToken.status).toBe(403);
    expect((await delivery(endpoint.id, 'evt_private')).status).toBe('delivered');
  });
});

describe('logs', () => {
  it('when an endpoint is registered, approved and its signing secret shown, then no log line carries the secret', async () => {
    const lines: string[] = [];
    const dir = tempDir();
    const config = loadConfig({ DATA_DIR: dir.path, LOG_LEVEL: 'trace' });
    const system = await buildWalletOps(
      config,
      createLogger('trace', { write: (line: string) => void lines.push(line) }),
      undefined,
      PARTS,
    );
    const server = await new Promise<Server>((resolve) => {
      const s = system.app.listen(0, '127.0.0.1', () => resolve(s));
    });
    try {
      const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const backOffice = { store: system.stores.eventStore, clock: () => new Date(), assetScale: config.ASSET_SCALE };
      const { partyID } = await onboardParty(
        backOffice,
        { partyType: 'merchant', name: 'Hook Shop', shortCode: '77003' },
        { actor: 'operator:test', correlationId: 'c' },
      );
      const party = { type: 'merchant' as const, id: partyID };
      const makerClient = new ConsoleClient(baseUrl);
      await makerClient.loginOk(await extraUser(backOffice, party, ['maker'], 'log-maker'), OTHER_PASSWORD);
      await makerClient.get('/console/webhooks/new');
      const registered = await makerClient.post('/console/webhooks', {
        url: 'https://hooks.example.com/logged',
        eventTypes: 'operation.completed',
      });
      const endpointID = registered.location!.split('/').at(-1)!;
      const checkerClient = new ConsoleClient(baseUrl);
      await checkerClient.loginOk(await extraUser(backOffice, party, ['checker'], 'log-checker'), OTHER_PASSWORD);
      expect((await checkerClient.post(`/console/webhooks/${endpointID}/approve`)).status).toBe(303);
      const secret = SECRET.exec((await makerClient.get('/console/webhooks')).text)?.[0];
      expect(secret).toBeDefined();
      expect(lines.length).toBeGreaterThan(5);
      expect(lines.join('')).not.toContain(secret!.slice('whsec_'.length));
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await system.close();
      dir.cleanup();
    }
  });
});

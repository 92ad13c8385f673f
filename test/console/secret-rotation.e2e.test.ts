import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  call,
  startTestSystem,
  waitFor,
  WITHOUT_EXECUTOR,
  type TestParty,
  type TestSystem,
} from '../support/system.ts';
import { registerEndpoint } from '../support/webhooks.ts';
import { CHECKER_PASSWORD, ConsoleClient, extraUser, MAKER_PASSWORD, OTHER_PASSWORD } from './console-client.ts';

/**
 * "Rotate secret" in the console, as a browser uses it: a maker asks with a reason, another checker of the party
 * approves or rejects, the maker sees the new secret once on their next page; the active key says until when
 * the previous secret works.
 */
let sys: TestSystem;
let dist: TestParty;
let bothEmail: string;

async function as(email: string, password: string): Promise<ConsoleClient> {
  const client = new ConsoleClient(sys.baseUrl);
  await client.loginOk(email, password);
  return client;
}
const maker = () => as(dist.makerEmail, MAKER_PASSWORD);
const checker = () => as(dist.checkerEmail, CHECKER_PASSWORD);

/** The markup of the table row of this key (or of its rotation request) on a page. */
function rowOf(page: string, keyID: string, request?: 'rotation'): string {
  const start = page.indexOf(`data-key-id="${keyID}"${request ? ` data-request="${request}"` : ''}`);
  expect(start, `no row for ${keyID}`).toBeGreaterThan(-1);
  const row = page.slice(start);
  return row.slice(0, row.indexOf('</tr>'));
}

beforeAll(async () => {
  sys = await startTestSystem(
    { WEBHOOK_ALLOW_INSECURE_LOCALHOST: 'true', SECRET_ROTATION_OVERLAP_HOURS: '2' },
    undefined,
    WITHOUT_EXECUTOR,
  );
  dist = await sys.party('distributor');
  bothEmail = await extraUser(sys.backOffice, dist.ref, ['maker', 'checker'], 'both');
});
afterAll(async () => sys?.close());

describe('API keys: rotate secret', () => {
  it('when a maker asks with a reason and a checker approves, then only the maker sees the new key, once; both work and the key says until when the old one does', async () => {
    const { keyID, apiKey: oldKey } = await dist.key({ label: 'till to rotate' });
    const makerClient = await maker();
    const active = await makerClient.get('/console/keys?tab=active');
    expect(rowOf(active.text, keyID)).toContain(`href="/console/keys/${keyID}/rotate"`);

    const form = await makerClient.get(`/console/keys/${keyID}/rotate`);
    expect(form.status).toBe(200);
    expect(form.text).toContain('name="_csrf"');
    expect((await makerClient.post(`/console/keys/${keyID}/rotate`, { reason: '  ' })).status).toBe(400);
    const asked = await makerClient.post(`/console/keys/${keyID}/rotate`, { reason: 'yearly rotation' });
    expect(asked.status).toBe(303);
    expect(asked.location).toBe('/console/keys?tab=pending');
    // Approving is a checker's: the maker alone is refused.
    expect((await makerClient.post(`/console/keys/${keyID}/rotation/approve`)).status).toBe(403);

    const checkerClient = await checker();
    const pending = await checkerClient.get('/console/keys?tab=pending');
    const row = rowOf(pending.text, keyID, 'rotation');
    expect(row).toContain('Secret rotation');
    expect(row).toContain('yearly rotation');
    expect(row).toContain(`action="/console/keys/${keyID}/rotation/approve"`);
    const approved = await checkerClient.post(`/console/keys/${keyID}/rotation/approve`);
    expect(approved.status).toBe(303);
    const checkerView = await checkerClient.get(approved.location!);
    expect(checkerView.text).toContain('will see the new key once');
    expect(checkerView.text).not.toContain(`${keyID}.`);

    const first = await makerClient.get('/console/keys?tab=active');
    const newKey = new RegExp(`value="(wo_live_${keyID}\\.[A-Za-z0-9_-]{43})"`).exec(first.text)?.[1];
    expect(newKey).toBeDefined();
    expect(newKey).not.toBe(oldKey);
    expect(rowOf(first.text, keyID)).toContain('previous secret valid until');
    await waitFor(() => sys.system.directory.get(keyID)?.previousSecretHash != null);
    for (const apiKey of [newKey!, oldKey])
      expect((await call(sys.baseUrl, 'GET', `/api/v1/distributors/${dist.ref.id}/balance`, { apiKey })).status).toBe(
        200,
      );
    expect((await makerClient.get('/console/keys?tab=active')).text).not.toContain(newKey!);
    const keyPage = await makerClient.get(`/console/keys/${keyID}`);
    expect(keyPage.text).toContain('data-event="Secret rotation requested"');
    expect(keyPage.text).toContain('data-event="Secret rotated"');
    expect(keyPage.text).toContain('previous secret valid until');
  });

  it('when a user with both roles asked for the rotation, then their approve control is disabled and the server refuses it; they may withdraw it', async () => {
    const { keyID } = await dist.key({ label: 'rotate self' });
    const client = await as(bothEmail, OTHER_PASSWORD);
    await client.get(`/console/keys/${keyID}/rotate`);
    expect((await client.post(`/console/keys/${keyID}/rotate`, { reason: 'mine' })).status).toBe(303);
    const page = await client.get('/console/keys?tab=pending');
    expect(rowOf(page.text, keyID, 'rotation')).toMatch(
      /<button type="button" disabled[^>]*>Approve rotation<\/button>/,
    );
    const refused = await client.post(`/console/keys/${keyID}/rotation/approve`);
    expect(refused.status).toBe(403);
    expect(refused.text).toContain('the maker of a request cannot also check it');
    await client.get('/console/keys?tab=pending');
    expect((await client.post(`/console/keys/${keyID}/rotation/withdraw`)).status).toBe(303);
    expect(sys.system.directory.get(keyID)?.rotation).toBeNull();
  });

  it('when a checker rejects the rotation, then the key keeps its secret and no rotation waits', async () => {
    const { keyID, apiKey } = await dist.key({ label: 'keep secret' });
    const makerClient = await maker();
    await makerClient.get(`/console/keys/${keyID}/rotate`);
    await makerClient.post(`/console/keys/${keyID}/rotate`, { reason: 'maybe' });
    const checkerClient = await checker();
    await checkerClient.get('/console/keys?tab=pending');
    expect((await checkerClient.post(`/console/keys/${keyID}/rotation/reject`, { reason: 'not needed' })).status).toBe(
      303,
    );
    expect(sys.system.directory.get(keyID)?.rotation).toBeNull();
    expect((await call(sys.baseUrl, 'GET', `/api/v1/distributors/${dist.ref.id}/balance`, { apiKey })).status).toBe(
      200,
    );
  });
});

describe('webhook endpoint: rotate secret', () => {
  it('when a maker asks with a reason and a checker approves, then only the maker sees the new signing secret, once, and the endpoint shows the rotation', async () => {
    const { endpointID, secret: oldSecret } = await registerEndpoint(sys, dist, 'http://127.0.0.1:9/hooks', [
      'api_key.revoked',
    ]);
    const makerClient = await maker();
    const page = await makerClient.get(`/console/webhooks/${endpointID}`);
    expect(page.text).toContain(`href="/console/webhooks/${endpointID}/rotate"`);
    expect((await makerClient.get(`/console/webhooks/${endpointID}/rotate`)).status).toBe(200);
    expect((await makerClient.post(`/console/webhooks/${endpointID}/rotate`, { reason: '' })).status).toBe(400);
    expect(
      (await makerClient.post(`/console/webhooks/${endpointID}/rotate`, { reason: 'secret seen in a log' })).status,
    ).toBe(303);
    expect((await makerClient.post(`/console/webhooks/${endpointID}/rotation/approve`)).status).toBe(403);

    const checkerClient = await checker();
    const pending = await checkerClient.get(`/console/webhooks/${endpointID}`);
    expect(pending.text).toContain('secret seen in a log');
    expect(pending.text).toContain(`action="/console/webhooks/${endpointID}/rotation/approve"`);
    const approved = await checkerClient.post(`/console/webhooks/${endpointID}/rotation/approve`);
    expect(approved.status).toBe(303);
    const checkerView = await checkerClient.get(approved.location!);
    expect(checkerView.text).toContain('will see the new secret once');
    expect(checkerView.text).not.toMatch(/whsec_[A-Za-z0-9+/]{43}=/);
    expect(checkerView.text).toContain('Signing secret rotated');

    const shown = await makerClient.get(`/console/webhooks/${endpointID}`);
    const newSecret = /value="(whsec_[A-Za-z0-9+/]{43}=)"/.exec(shown.text)?.[1];
    expect(newSecret).toBeDefined();
    expect(newSecret).not.toBe(oldSecret);
    expect((await makerClient.get(`/console/webhooks/${endpointID}`)).text).not.toContain(newSecret!);
  });

  it('when the maker who asked withdraws, or a checker rejects, then no rotation waits', async () => {
    const { endpointID } = await registerEndpoint(sys, dist, 'http://127.0.0.1:9/other', ['api_key.revoked']);
    const makerClient = await maker();
    await makerClient.get(`/console/webhooks/${endpointID}/rotate`);
    await makerClient.post(`/console/webhooks/${endpointID}/rotate`, { reason: 'first try' });
    await makerClient.get(`/console/webhooks/${endpointID}`);
    expect((await makerClient.post(`/console/webhooks/${endpointID}/rotation/withdraw`)).status).toBe(303);
    await makerClient.get(`/console/webhooks/${endpointID}/rotate`);
    await makerClient.post(`/console/webhooks/${endpointID}/rotate`, { reason: 'second try' });
    const checkerClient = await checker();
    await checkerClient.get(`/console/webhooks/${endpointID}`);
    expect(
      (await checkerClient.post(`/console/webhooks/${endpointID}/rotation/reject`, { reason: 'not needed' })).status,
    ).toBe(303);
    const page = await checkerClient.get(`/console/webhooks/${endpointID}`);
    expect(page.text).not.toContain('Approve rotation');
    expect(page.text).not.toContain('second try');
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findUserByEmail, requestApiKey } from '../../src/commands/back-office.ts';
import { requestWebhookEndpoint } from '../../src/commands/webhooks.ts';
import { safeReturnPath } from '../../src/console/login.ts';
import { call, startTestSystem, waitFor, type TestParty, type TestSystem } from '../support/system.ts';
import {
  CHECKER_PASSWORD,
  ConsoleClient,
  createCashIn,
  extraUser,
  fund,
  MAKER_PASSWORD,
  newPhone,
  OTHER_PASSWORD,
  waitForStatus,
} from './console-client.ts';

/**
 * The console as a back office people work in, over HTTP: a maker withdraws their own key request, the counts
 * of decisions waiting for a user, the way back after a re-login (never to another site), the friendly page of
 * a stale form, amounts with the currency, and the administrators' Parties and Users searches.
 */
let sys: TestSystem;
let dist: TestParty;
let bothEmail: string;
let adminEmail: string;
let secondAdminEmail: string;
let phone: string;

async function as(email: string, password: string): Promise<ConsoleClient> {
  const client = new ConsoleClient(sys.baseUrl);
  await client.loginOk(email, password);
  return client;
}

async function requestKey(email: string, label: string): Promise<string> {
  const user = await findUserByEmail(sys.backOffice, email);
  const { keyID } = await requestApiKey(sys.backOffice, user, { label, permissions: 'read-balance' }, 'test');
  await waitFor(() => sys.system.directory.get(keyID) !== undefined);
  return keyID;
}

const waiting = async (client: ConsoleClient) => {
  const page = await client.get('/console/waiting');
  expect(page.status).toBe(200);
  expect(page.headers.get('cache-control')).toBe('no-store');
  return JSON.parse(page.text) as Record<string, number>;
};

beforeAll(async () => {
  sys = await startTestSystem({ ASSET_CODE: 'NGN' });
  dist = await sys.party('distributor');
  bothEmail = await extraUser(sys.backOffice, dist.ref, ['maker', 'checker'], 'both');
  adminEmail = await extraUser(sys.backOffice, null, [], 'admin');
  secondAdminEmail = await extraUser(sys.backOffice, null, [], 'admin-2');
  phone = await sys.individual(newPhone());
  await fund(sys, dist.ref, '1234567.5');
});

afterAll(async () => {
  await sys?.close();
});

describe('withdrawing a key request', () => {
  it('when the maker withdraws their pending request in the console, then it is withdrawn and listed as inactive; nobody else may', async () => {
    const keyID = await requestKey(dist.makerEmail, 'second thoughts');
    const checker = await as(dist.checkerEmail, CHECKER_PASSWORD);
    await checker.get('/console/keys?tab=pending');
    expect((await checker.post(`/console/keys/${keyID}/withdraw`)).status).toBe(403);
    const other = await as(bothEmail, OTHER_PASSWORD);
    await other.get('/console/keys?tab=pending');
    const refused = await other.post(`/console/keys/${keyID}/withdraw`);
    expect(refused.status).toBe(403);
    expect(refused.text).toContain('Only the maker who requested the key can withdraw the request');
    expect(sys.system.directory.get(keyID)?.status).toBe('pending');

    const maker = await as(dist.makerEmail, MAKER_PASSWORD);
    const list = await maker.get('/console/keys?tab=pending');
    expect(list.text).toContain(`action="/console/keys/${keyID}/withdraw"`);
    const done = await maker.post(`/console/keys/${keyID}/withdraw`);
    expect(done.status).toBe(303);
    expect(done.location).toBe('/console/keys?tab=inactive');
    expect(sys.system.directory.get(keyID)?.status).toBe('withdrawn');
    const inactive = await maker.get('/console/keys?tab=inactive');
    expect(inactive.text).toContain('Key request “second thoughts” withdrawn.');
    expect(inactive.text).toMatch(new RegExp(`data-key-id="${keyID}"[\\s\\S]*?badge-withdrawn`));
    expect((await maker.post(`/console/keys/${keyID}/withdraw`)).status).toBe(409);
  });
});

describe('decisions waiting', () => {
  it('when operations, key requests and endpoints wait, then a checker’s counts name them, without their own requests or their own keys’ operations', async () => {
    const checker = await as(dist.checkerEmail, CHECKER_PASSWORD);
    const before = await waiting(checker);
    const both = await findUserByEmail(sys.backOffice, bothEmail);
    // The both-roles user's own key request and the operation made with a key they requested are not theirs to decide.
    await requestKey(bothEmail, 'both’s own');
    await requestKey(dist.makerEmail, 'for a checker');
    await requestWebhookEndpoint(
      { ...sys.backOffice, secretsKey: Buffer.alloc(32), allowInsecureLocalhost: false },
      await findUserByEmail(sys.backOffice, dist.makerEmail),
      { url: 'https://hooks.example/a', eventTypes: 'operation.completed' },
      'test',
    );
    const { apiKey } = await dist.key({ label: 'maker’s till' });
    const operationID = await createCashIn(sys, dist.ref.id, apiKey, phone, '12.00', 'count me');
    await waitForStatus(sys, operationID, 'pending');
    await waitFor(async () => (await waiting(checker)).webhooks === before.webhooks! + 1);

    const after = await waiting(checker);
    expect(after).toEqual({
      operations: before.operations! + 1,
      keys: before.keys! + 2,
      webhooks: before.webhooks! + 1,
      access: 0,
      total: before.total! + 4,
    });
    const bothClient = await as(bothEmail, OTHER_PASSWORD);
    const theirs = await waiting(bothClient);
    expect(theirs.keys).toBe(after.keys! - 1); // not their own request
    expect(both.userID).toMatch(/\S/);

    // A maker decides nothing; the page shows the same counts the endpoint gives.
    expect(await waiting(await as(dist.makerEmail, MAKER_PASSWORD))).toEqual({
      operations: 0,
      keys: 0,
      webhooks: 0,
      access: 0,
      total: 0,
    });
    const page = await checker.get('/console/');
    expect(page.text).toMatch(new RegExp(`data-waiting="operations"><span data-count>${after.operations}</span>`));
    expect(page.text).toMatch(new RegExp(`data-waiting="total"><span data-count>${after.total}</span>`));
  });

  it('when an administrator requests access, then the other administrator’s count has it and theirs does not', async () => {
    const first = await as(adminEmail, OTHER_PASSWORD);
    const second = await as(secondAdminEmail, OTHER_PASSWORD);
    const [a, b] = [await waiting(first), await waiting(second)];
    await first.get('/console/admin');
    expect(
      (
        await first.post('/console/admin/users', {
          partyType: 'platform',
          email: `new-admin-${Date.now()}@test.example`,
        })
      ).status,
    ).toBe(303);
    expect((await waiting(first)).access).toBe(a.access);
    expect((await waiting(second)).access).toBe(b.access! + 1);
  });

  it('when a distributor’s cash-in to a merchant waits for the distributor’s checker, then the merchant’s checker has nothing to decide: no count, no row', async () => {
    const merchant = await sys.party('merchant');
    const { apiKey } = await dist.key({ label: 'till to a shop' });
    const response = await call(sys.baseUrl, 'POST', `/api/v1/distributors/${dist.ref.id}/operations`, {
      apiKey,
      body: { operationType: 'cash-in', amount: '3.00', merchantToShortCode: merchant.shortCode, memo: 'stock' },
    });
    expect(response.status).toBe(200);
    const operationID = response.body.operationID as string;
    await waitFor(
      async () =>
        (await sys.system.stores.readStore.get('console_operations', `received:${operationID}`))?.status === 'pending',
    );
    const merchantChecker = await as(merchant.checkerEmail, CHECKER_PASSWORD);
    expect((await waiting(merchantChecker)).operations).toBe(0);
    const pending = await merchantChecker.get('/console/operations');
    expect(pending.text).not.toContain(operationID);
    expect(pending.text).toMatch(/Pending approval <span class="count">0<\/span>/);
    expect((await merchantChecker.get('/console/operations/history')).text).toMatch(
      /Pending approval <span class="count">0<\/span>/,
    );
    const distributorChecker = await as(dist.checkerEmail, CHECKER_PASSWORD);
    expect((await distributorChecker.get('/console/operations')).text).toContain(`data-operation-id="${operationID}"`);
  });

  it('when the session has ended or there is none, then the counts answer 401', async () => {
    expect((await new ConsoleClient(sys.baseUrl).get('/console/waiting')).status).toBe(401);
    const client = await as(dist.checkerEmail, CHECKER_PASSWORD);
    await waiting(client);
    await client.post('/console/logout');
    expect((await client.get('/console/waiting')).status).toBe(401);
  });
});

describe('coming back after a login', () => {
  it('when a page is asked for without a session, then the login returns to it after the password', async () => {
    const client = new ConsoleClient(sys.baseUrl);
    const redirect = await client.get('/console/operations/history?offset=50');
    expect(redirect.location).toBe('/console/login?next=%2Fconsole%2Foperations%2Fhistory%3Foffset%3D50');
    const form = await client.get(redirect.location!);
    expect(form.text).toContain('<input type="hidden" name="next" value="/console/operations/history?offset=50">');
    const login = await client.post('/console/login', {
      email: dist.checkerEmail,
      password: CHECKER_PASSWORD,
      next: '/console/operations/history?offset=50',
    });
    expect(login.status).toBe(303);
    expect(login.location).toBe('/console/operations/history?offset=50');
  });

  it('when the place to return to is another site or not a console page, then the login goes to the dashboard instead', async () => {
    for (const next of [
      'https://evil.example/console/',
      '//evil.example/console',
      '/\\evil.example',
      '/console/../../etc',
      'javascript:alert(1)',
      '/console/logout',
      '/console/login?next=/console/',
      '/api/v1/x',
      '/consolex',
      ' /console/keys',
    ]) {
      expect(safeReturnPath(next), next).toBeNull();
      const client = new ConsoleClient(sys.baseUrl);
      await client.get(`/console/login?next=${encodeURIComponent(next)}`);
      expect(client.lastPage).not.toContain('name="next"');
      const login = await client.post('/console/login', { email: dist.makerEmail, password: MAKER_PASSWORD, next });
      expect(login.location, next).toBe('/console/');
    }
    expect(safeReturnPath('/console/keys?tab=active')).toBe('/console/keys?tab=active');
    expect(safeReturnPath('/console')).toBe('/console');
  });

  it('when a form is sent after the session ended, then the page says so and links to a login that returns to the form’s page', async () => {
    const client = await as(dist.checkerEmail, CHECKER_PASSWORD);
    const token = client.csrf()!;
    await sys.system.stores.readStore.commit(
      (await sys.system.stores.readStore.find<{ id: string; userID: string }>('console_sessions')).map((s) => ({
        op: 'delete' as const,
        collection: 'console_sessions',
        id: s.id,
      })),
    );
    const page = await client.post(
      '/console/operations/op_00000000000000000000000000000000/reject',
      { _csrf: token, reason: 'typed before the session ended' },
      { referer: `${sys.baseUrl}/console/operations/op_00000000000000000000000000000000/reject` },
    );
    expect(page.status).toBe(401);
    expect(page.text).toContain('<title>Please log in again · wallet-ops console</title>');
    expect(page.text).toContain(
      'href="/console/login?ended=1&amp;next=%2Fconsole%2Foperations%2Fop_00000000000000000000000000000000%2Freject"',
    );
    expect(page.text).not.toContain('typed before the session ended');
  });

  it('when a form carries the token of an earlier session, then the answer is a “please try again” page with the way back, not “Not allowed”', async () => {
    const client = await as(dist.makerEmail, MAKER_PASSWORD);
    await client.get('/console/keys/new');
    const stale = client.csrf()!;
    // Another tab logs in again: the browser's cookie is now a new session's, with a new token.
    const tab = await as(dist.makerEmail, MAKER_PASSWORD);
    client.cookies.set('wo_console', tab.cookies.get('wo_console')!);
    const page = await client.post(
      '/console/keys',
      { _csrf: stale, label: 'stale' },
      { referer: `${sys.baseUrl}/console/keys/new` },
    );
    expect(page.status).toBe(403);
    expect(page.text).toContain('<h1>Please try again</h1>');
    expect(page.text).not.toContain('Not allowed');
    expect(page.text).toContain('href="/console/keys/new"');
  });

  it('when a login form is sent after its token expired, then a fresh form comes back with the email and a notice, and nobody is logged in', async () => {
    const client = new ConsoleClient(sys.baseUrl);
    await client.get('/console/login?next=%2Fconsole%2Fkeys');
    client.cookies.delete('wo_console_login');
    const page = await client.post('/console/login', {
      email: dist.makerEmail,
      password: MAKER_PASSWORD,
      next: '/console/keys',
    });
    expect(page.status).toBe(403);
    expect(page.text).toContain('This login form had expired');
    expect(page.text).not.toContain('Not allowed');
    expect(page.text).toContain(`value="${dist.makerEmail}"`);
    expect(page.text).not.toContain(MAKER_PASSWORD);
    expect(client.cookies.has('wo_console')).toBe(false);
    const retry = await client.post('/console/login', {
      email: dist.makerEmail,
      password: MAKER_PASSWORD,
      next: '/console/keys',
    });
    expect(retry.location).toBe('/console/keys');
  });
});

describe('amounts and administrators’ lists', () => {
  it('when the dashboard shows the balance, then its digits are grouped and the currency named', async () => {
    const client = await as(dist.makerEmail, MAKER_PASSWORD);
    const page = await client.get('/console/');
    expect(page.text).toContain('data-amount="1234567.50">1,234,567.50 <span class="currency">NGN</span></span>');
  });

  it('when an administrator searches parties and users, then only matches are listed; a malformed search is a 400 page', async () => {
    const admin = await as(adminEmail, OTHER_PASSWORD);
    const parties = await admin.get(`/console/admin/parties?q=${encodeURIComponent(dist.shortCode)}`);
    expect(parties.status).toBe(200);
    expect(parties.text).toContain(`data-party="distributor:${dist.ref.id}"`);
    expect((parties.text.match(/<tr data-party=/g) ?? []).length).toBe(1);
    const none = await admin.get('/console/admin/parties?q=no-such-party-anywhere');
    expect(none.text).toContain('No party matches.');

    const users = await admin.get(`/console/admin/users?q=${encodeURIComponent(bothEmail.slice(0, 12))}`);
    expect(users.text).toContain(bothEmail);
    expect(users.text).not.toContain(dist.checkerEmail);
    expect(users.text).toContain('Disable…');
    for (const bad of ['q=a&q=b', `q=${'x'.repeat(201)}`]) {
      const page = await admin.get(`/console/admin/users?${bad}`);
      expect(page.status).toBe(400);
      expect(page.text).toContain('The search is not one text');
    }
    expect((await (await as(dist.makerEmail, MAKER_PASSWORD)).get('/console/admin/parties')).status).toBe(403);
  });
});

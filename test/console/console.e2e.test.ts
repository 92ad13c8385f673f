import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { findUserByEmail, requestApiKey } from '../../src/commands/back-office.ts';
import { loadConfig } from '../../src/config.ts';
import { streams } from '../../src/domain/streams.ts';
import { createLogger } from '../../src/logger.ts';
import { buildWalletOps } from '../../src/wallet-ops.ts';
import { call, startTestSystem, waitFor, type TestParty, type TestSystem } from '../support/system.ts';
import { tempDir } from '../support/temp-dir.ts';
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
import type { AddressInfo } from 'node:net';

/**
 * The console's server side over HTTP, as a browser would use it: every refusal (role, party, CSRF,
 * self-approval, throttling, expired or ended sessions) and the protections of its responses.
 */
let offsetMs = 0;
const clock = () => new Date(Date.now() + offsetMs);

let sys: TestSystem;
let dist: TestParty;
let other: TestParty;
let bothEmail: string;
let adminEmail: string;
let secondAdminEmail: string;
let phone: string;

const sessionDocs = () => sys.system.stores.readStore.find('console_sessions');

async function as(email: string, password: string): Promise<ConsoleClient> {
  const client = new ConsoleClient(sys.baseUrl);
  await client.loginOk(email, password);
  return client;
}

const maker = () => as(dist.makerEmail, MAKER_PASSWORD);
const checker = () => as(dist.checkerEmail, CHECKER_PASSWORD);

async function requestKey(email: string, label: string): Promise<string> {
  const user = await findUserByEmail(sys.backOffice, email);
  const { keyID } = await requestApiKey(sys.backOffice, user, { label, permissions: 'read-balance' }, 'test');
  await waitFor(() => sys.system.directory.get(keyID) !== undefined);
  return keyID;
}

beforeAll(async () => {
  sys = await startTestSystem({}, clock);
  dist = await sys.party('distributor');
  other = await sys.party('distributor');
  bothEmail = await extraUser(sys.backOffice, dist.ref, ['maker', 'checker'], 'both');
  adminEmail = await extraUser(sys.backOffice, null, [], 'admin');
  secondAdminEmail = await extraUser(sys.backOffice, null, [], 'admin-2');
  phone = await sys.individual(newPhone());
  await fund(sys, dist.ref, '1000');
});

afterAll(async () => {
  await sys?.close();
});

describe('console pages and cookies', () => {
  it('when a page is served, then it carries the content security policy, nosniff, a same-origin referrer policy and no-store', async () => {
    const page = await new ConsoleClient(sys.baseUrl).get('/console/login');
    expect(page.status).toBe(200);
    expect(page.headers.get('content-security-policy')).toBe(
      "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'",
    );
    expect(page.headers.get('x-content-type-options')).toBe('nosniff');
    expect(page.headers.get('referrer-policy')).toBe('same-origin');
    expect(page.headers.get('cache-control')).toBe('no-store');
    expect(page.text).toMatch(/<html lang="en">/);
    expect(page.text).not.toMatch(/<script>|style="/); // nothing inline: the policy would block it
  });

  it('when a user logs in, then the session cookie is HttpOnly, SameSite=Strict, Path=/console, not Secure over plain HTTP, and the store keeps only its hash', async () => {
    const client = new ConsoleClient(sys.baseUrl);
    await client.get('/console/login');
    const response = await client.post('/console/login', { email: dist.makerEmail, password: MAKER_PASSWORD });
    expect(response.status).toBe(303);
    const cookie = response.headers.getSetCookie().find((c) => c.startsWith('wo_console='))!;
    expect(cookie).toMatch(/; HttpOnly/);
    expect(cookie).toMatch(/; SameSite=Strict/);
    expect(cookie).toMatch(/; Path=\/console/);
    expect(cookie).not.toMatch(/; Secure/);
    const token = client.cookies.get('wo_console')!;
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/); // 256 random bits
    const ids = (await sessionDocs()).map((d) => d.id);
    expect(ids).toContain(createHash('sha256').update(token).digest('hex'));
    expect(JSON.stringify(await sessionDocs())).not.toContain(token);
  });

  it('when the request came over TLS through a trusted proxy, then the cookie is Secure', async () => {
    const tls = await startTestSystem({ TRUST_PROXY: '1' });
    try {
      const party = await tls.party('merchant');
      const host = new URL(tls.baseUrl).host;
      const client = new ConsoleClient(tls.baseUrl, {
        origin: `https://${host}`,
        headers: { 'x-forwarded-proto': 'https' },
      });
      await client.get('/console/login');
      const response = await client.post('/console/login', { email: party.makerEmail, password: MAKER_PASSWORD });
      expect(response.status).toBe(303);
      // Over HTTPS the session cookie is a __Host- cookie (test/console/console-hardening.e2e.test.ts has the rest).
      expect(response.headers.getSetCookie().find((c) => c.startsWith('__Host-wo_console='))).toMatch(/; Secure/);
    } finally {
      await tls.close();
    }
  });

  it('when there is no session, then pages redirect to the login page and form posts are refused with 401', async () => {
    const client = new ConsoleClient(sys.baseUrl);
    expect((await client.get('/console/keys')).location).toBe('/console/login?next=%2Fconsole%2Fkeys');
    const post = await client.post('/console/keys', { _csrf: 'x', label: 'k' });
    expect(post.status).toBe(401);
  });

  it('when the password is wrong or the email unknown, then the answer is the same 401', async () => {
    const wrong = await new ConsoleClient(sys.baseUrl).login(dist.makerEmail, 'wrong password 1');
    const unknown = await new ConsoleClient(sys.baseUrl).login('nobody@test.example', 'wrong password 1');
    expect(wrong.status).toBe(401);
    expect(unknown.status).toBe(401);
    expect(wrong.text).toContain('The email or the password is wrong.');
    expect(unknown.text).toContain('The email or the password is wrong.');
  });

  it('when a label holds markup, then the page shows it as text', async () => {
    await requestKey(dist.makerEmail, '<img src=x onerror=alert(1)>"quoted"');
    const page = await (await maker()).get('/console/keys?tab=pending');
    expect(page.text).toContain('&lt;img src=x onerror=alert(1)&gt;&quot;quoted&quot;');
    expect(page.text).not.toContain('<img src=x');
  });

  it('when a maker sends a key request with bad terms, then the form comes back with a message per field', async () => {
    const client = await maker();
    await client.get('/console/keys/new');
    const page = await client.post('/console/keys', {
      label: '',
      maxTransactionAmount: '12.345',
      maxDailyVolume: 'lots',
      allowedIPs: '10.0.0.300',
      expiresInDays: '0',
    });
    expect(page.status).toBe(400);
    for (const id of [
      'label-error',
      'permissions-error',
      'maxTransactionAmount-error',
      'maxDailyVolume-error',
      'allowedIPs-error',
      'expiresInDays-error',
    ])
      expect(page.text).toContain(`id="${id}"`);
    expect(page.text).toContain('aria-invalid="true"');
  });
});

describe('roles are enforced on the server', () => {
  it('when a maker approves or rejects a key, then it is refused with 403 and the key stays pending', async () => {
    const keyID = await requestKey(dist.makerEmail, 'maker tries');
    const client = await maker();
    for (const action of ['approve', 'reject']) {
      const page = await client.post(`/console/keys/${keyID}/${action}`);
      expect(page.status).toBe(403);
      expect(page.text).toContain('This needs the checker role.');
    }
    expect(sys.system.directory.get(keyID)?.status).toBe('pending');
  });

  it('when a checker requests a key or a revocation, then it is refused with 403', async () => {
    const client = await checker();
    expect((await client.get('/console/keys/new')).status).toBe(403);
    expect((await client.post('/console/keys', { label: 'x', permissions: 'read-balance' })).status).toBe(403);
    const { keyID } = await dist.key();
    expect((await client.post(`/console/keys/${keyID}/revoke`, { reason: 'no' })).status).toBe(403);
    expect(sys.system.directory.get(keyID)?.status).toBe('active');
  });

  it('when a maker approves or rejects an operation, then it is refused with 403', async () => {
    const { apiKey } = await dist.key();
    const operationID = await createCashIn(sys, dist.ref.id, apiKey, phone, '1.00', 'role test');
    const client = await maker();
    expect((await client.post(`/console/operations/${operationID}/approve`)).status).toBe(403);
    expect((await client.post(`/console/operations/${operationID}/reject`, { reason: 'no' })).status).toBe(403);
    await waitForStatus(sys, operationID, 'pending');
  });

  it('when a party user opens the administration, then it is refused with 403; and an administrator has no party pages', async () => {
    const client = await checker();
    expect((await client.get('/console/admin')).status).toBe(403);
    expect(
      (await client.post('/console/admin/parties', { partyType: 'merchant', name: 'Sneaky', shortCode: '987654321' }))
        .status,
    ).toBe(403);
    const admin = await as(adminEmail, OTHER_PASSWORD);
    for (const path of ['/console/keys', '/console/operations', '/console/operations/history'])
      expect((await admin.get(path)).status).toBe(403);
  });

  it('when an administrator onboards a merchant and requests its user, and another approves, then that user can log in', async () => {
    const admin = await as(adminEmail, OTHER_PASSWORD);
    await admin.get('/console/admin');
    const code = String(300_000_000 + Math.floor(Math.random() * 1_000_000));
    expect(
      (await admin.post('/console/admin/parties', { partyType: 'merchant', name: 'Admin Shop', shortCode: code }))
        .status,
    ).toBe(303);
    const taken = await admin.post('/console/admin/parties', {
      partyType: 'merchant',
      name: 'Copy Shop',
      shortCode: code,
    });
    expect(taken.status).toBe(409);
    expect(taken.text).toContain('id="party-shortCode-error"');
    await admin.get('/console/admin');
    const email = `shop-${code}@test.example`;
    const requested = await admin.post('/console/admin/users', {
      partyType: 'merchant',
      shortCode: code,
      email,
      roles: ['maker', 'checker'],
    });
    expect(requested.status).toBe(303);
    const requestID = /acr_[0-9a-f]{32}/.exec((await admin.get(requested.location!)).text)![0];
    // The user exists once a second administrator approves; each administrator's next page shows their half of the temporary password.
    const second = await as(secondAdminEmail, OTHER_PASSWORD);
    const approval = await second.post(`/console/admin/access/${requestID}/approve`);
    const half = (text: string, which: string) =>
      new RegExp(`value="([^"]+)"[^>]*data-password-half="${which}"`).exec(text)![1]!;
    const temporary = `${half((await admin.get('/console/')).text, 'first')}-${half((await second.get(approval.location!)).text, 'second')}`;
    const shop = new ConsoleClient(sys.baseUrl);
    await shop.login(email, temporary);
    await shop.get('/console/password');
    expect(
      (
        await shop.post('/console/password', {
          currentPassword: temporary,
          newPassword: 'shop password 1',
          confirmPassword: 'shop password 1',
        })
      ).status,
    ).toBe(303);
    expect((await shop.get('/console/')).text).toContain('Admin Shop');
  });
});

describe('no user sees or acts on another party’s keys or operations', () => {
  it('when a user of another party lists keys and operations, then none of this party’s appear', async () => {
    const { keyID, apiKey } = await dist.key({ label: 'dist only' });
    const pendingKey = await requestKey(dist.makerEmail, 'dist pending');
    const operationID = await createCashIn(sys, dist.ref.id, apiKey, phone, '2.00', 'dist op');
    await waitForStatus(sys, operationID, 'pending');
    const client = await as(other.checkerEmail, CHECKER_PASSWORD);
    const pages = await Promise.all(
      [
        '/console/keys?tab=pending',
        '/console/keys?tab=active',
        '/console/keys?tab=inactive',
        '/console/operations',
        '/console/operations/history',
        '/console/',
      ].map((p) => client.get(p)),
    );
    for (const page of pages) {
      expect(page.status).toBe(200);
      for (const id of [keyID, pendingKey, operationID, dist.ref.id]) expect(page.text).not.toContain(id);
    }
  });

  it('when a user of another party acts on this party’s key or operation, then it is not found (404) and nothing changes', async () => {
    const pendingKey = await requestKey(dist.makerEmail, 'not yours');
    const { keyID: activeKey, apiKey } = await dist.key();
    const operationID = await createCashIn(sys, dist.ref.id, apiKey, phone, '3.00', 'not yours');
    const otherChecker = await as(other.checkerEmail, CHECKER_PASSWORD);
    const otherMaker = await as(other.makerEmail, MAKER_PASSWORD);
    expect((await otherChecker.post(`/console/keys/${pendingKey}/approve`)).status).toBe(404);
    expect((await otherChecker.post(`/console/keys/${pendingKey}/reject`)).status).toBe(404);
    expect((await otherMaker.get(`/console/keys/${activeKey}/revoke`)).status).toBe(404);
    expect((await otherMaker.post(`/console/keys/${activeKey}/revoke`, { reason: 'mine now' })).status).toBe(404);
    expect((await otherChecker.post(`/console/operations/${operationID}/approve`)).status).toBe(404);
    expect((await otherChecker.get(`/console/operations/${operationID}/reject`)).status).toBe(404);
    expect((await otherChecker.post(`/console/operations/${operationID}/reject`, { reason: 'mine now' })).status).toBe(
      404,
    );
    expect(sys.system.directory.get(pendingKey)?.status).toBe('pending');
    expect(sys.system.directory.get(activeKey)?.status).toBe('active');
    await waitForStatus(sys, operationID, 'pending');
  });
});

describe('CSRF', () => {
  it('when a state-changing form comes without the token, with a wrong one, or with another session’s, then it is refused with 403', async () => {
    const keyID = await requestKey(dist.makerEmail, 'csrf target');
    const client = await checker();
    const foreign = (await maker()).csrf()!;
    for (const _csrf of [null, '', 'not-the-token', foreign]) {
      const page = await client.post(`/console/keys/${keyID}/approve`, { _csrf });
      expect(page.status).toBe(403);
    }
    expect(sys.system.directory.get(keyID)?.status).toBe('pending');
  });

  it('when a form carries the token but comes from another site, then it is refused with 403', async () => {
    const keyID = await requestKey(dist.makerEmail, 'cross-site target');
    const client = await checker();
    expect((await client.post(`/console/keys/${keyID}/approve`, {}, { origin: 'https://evil.example' })).status).toBe(
      403,
    );
    expect((await client.post(`/console/keys/${keyID}/approve`, {}, { 'sec-fetch-site': 'cross-site' })).status).toBe(
      403,
    );
    expect((await client.post(`/console/keys/${keyID}/approve`, {}, { 'sec-fetch-site': 'same-site' })).status).toBe(
      403,
    );
    expect((await client.post('/console/logout', {}, { origin: 'null' })).status).toBe(403);
    expect(sys.system.directory.get(keyID)?.status).toBe('pending');
    expect((await client.get('/console/')).status).toBe(200); // still logged in
  });

  it('when the login form comes without its token, then it is refused with 403', async () => {
    const client = new ConsoleClient(sys.baseUrl);
    const page = await client.post('/console/login', { _csrf: null, email: dist.makerEmail, password: MAKER_PASSWORD });
    expect(page.status).toBe(403);
    expect(client.cookies.has('wo_console')).toBe(false);
  });
});

describe('maker-checker and the one-time secret', () => {
  it('when a user with both roles looks at their own request, then the approve control is disabled; and the server refuses it anyway', async () => {
    const client = await as(bothEmail, OTHER_PASSWORD);
    await client.get('/console/keys/new');
    expect(
      (
        await client.post('/console/keys', {
          label: 'my own',
          permissions: ['read-balance', 'read-transactions'],
          expiresInDays: '30',
        })
      ).status,
    ).toBe(303);
    const keyID = [...sys.system.directory.listByParty(dist.ref, new Date().toISOString())].find(
      (k) => k.label === 'my own',
    )!.keyID;
    const page = await client.get('/console/keys?tab=pending');
    const row = page.text.slice(page.text.indexOf(`data-key-id="${keyID}"`));
    expect(row.slice(0, row.indexOf('</tr>'))).toMatch(/<button type="button" disabled[^>]*>Approve<\/button>/);
    const refused = await client.post(`/console/keys/${keyID}/approve`);
    expect(refused.status).toBe(403);
    expect(refused.text).toContain('the maker of a request cannot also check it');
    expect(sys.system.directory.get(keyID)?.status).toBe('pending');
  });

  it('when a user with both roles asked for a revocation, then they cannot approve it themselves', async () => {
    const { keyID } = await dist.key({ label: 'revoke self' });
    const client = await as(bothEmail, OTHER_PASSWORD);
    await client.get(`/console/keys/${keyID}/revoke`);
    expect((await client.post(`/console/keys/${keyID}/revoke`, { reason: 'rotating' })).status).toBe(303);
    await client.get('/console/keys');
    const refused = await client.post(`/console/keys/${keyID}/revocation/approve`);
    expect(refused.status).toBe(403);
    expect(sys.system.directory.get(keyID)?.status).toBe('revocation_pending');
  });

  it('when a checker approves a key, then only the maker sees its secret, once, and it works against the API', async () => {
    const keyID = await requestKey(dist.makerEmail, 'secret once');
    const makerClient = await maker();
    const checkerClient = await checker();
    const approved = await checkerClient.post(`/console/keys/${keyID}/approve`);
    expect(approved.status).toBe(303);
    const checkerView = await checkerClient.get(approved.location!);
    expect(checkerView.text).not.toContain(`${keyID}.`);
    expect(checkerView.text).toContain('will see it once');

    const first = await makerClient.get('/console/keys?tab=active');
    const secret = new RegExp(`value="(wo_live_${keyID}\\.[A-Za-z0-9_-]{43})"`).exec(first.text)?.[1];
    expect(secret).toBeDefined();
    expect(first.text).toContain('<dialog class="secret" open data-modal');
    expect(
      (await call(sys.baseUrl, 'GET', `/api/v1/distributors/${dist.ref.id}/balance`, { apiKey: secret! })).status,
    ).toBe(200);
    const again = await makerClient.get('/console/keys?tab=active');
    expect(again.text).not.toContain(secret!);
    expect(again.text).not.toContain('<dialog');
  });

  it('when a checker rejects a pending operation with a reason, then it is rejected; and an approved one is no longer pending', async () => {
    const { apiKey } = await dist.key();
    const rejected = await createCashIn(sys, dist.ref.id, apiKey, phone, '4.00', 'reject me');
    const approved = await createCashIn(sys, dist.ref.id, apiKey, phone, '5.00', 'approve me');
    await waitForStatus(sys, approved, 'pending');
    const client = await checker();
    expect((await client.get('/console/operations')).text).toContain(rejected);
    expect((await client.post(`/console/operations/${rejected}/reject`, { reason: '' })).status).toBe(400);
    expect((await client.post(`/console/operations/${rejected}/reject`, { reason: 'wrong amount' })).status).toBe(303);
    expect((await client.post(`/console/operations/${approved}/approve`)).status).toBe(303);
    expect((await client.get('/console/operations')).text).not.toContain(`data-operation-id="${approved}"`);
    expect((await client.post(`/console/operations/${approved}/approve`)).status).toBe(409);
    await waitForStatus(sys, rejected, 'rejected');
    await waitForStatus(sys, approved, 'completed');
  });
});

describe('the pending list reads the read model', () => {
  it('when operations wait for a checker, then the page lists each from console_operations and reads none of their streams, however many there are', async () => {
    const { apiKey } = await dist.key({ label: 'pending till' });
    const ids: string[] = [];
    for (const [amount, memo] of [
      ['6.00', 'first of three'],
      ['7.00', 'second of three'],
      ['8.00', 'third of three'],
    ] as const)
      ids.push(await createCashIn(sys, dist.ref.id, apiKey, phone, amount, memo));
    await waitFor(async () =>
      (await Promise.all(ids.map((id) => sys.system.stores.readStore.get('console_operations', id)))).every(
        (doc) => doc?.status === 'pending',
      ),
    );
    const client = await checker();
    const reads = vi.spyOn(sys.system.stores.eventStore, 'readStream');
    try {
      const page = await client.get('/console/operations');
      expect(page.status).toBe(200);
      for (const id of ids) expect(page.text).toContain(`data-operation-id="${id}"`);
      for (const text of ['third of three', 'NGN', 'pending till', dist.name, phone]) expect(page.text).toContain(text);
      const streamsRead = reads.mock.calls.map(([stream]) => stream);
      expect(streamsRead.filter((stream) => ids.some((id) => stream === streams.operation(id)))).toEqual([]);
    } finally {
      reads.mockRestore();
    }
  });
});

describe('sessions end', () => {
  it('when a user logs out, then the session is gone and its cookie no longer works', async () => {
    const client = await maker();
    const token = client.cookies.get('wo_console')!;
    expect((await client.post('/console/logout')).location).toBe('/console/login?out=1');
    expect(client.cookies.has('wo_console')).toBe(false);
    expect((await sessionDocs()).map((d) => d.id)).not.toContain(createHash('sha256').update(token).digest('hex'));
    client.cookies.set('wo_console', token); // replayed
    expect((await client.get('/console/')).location).toBe('/console/login?ended=1');
  });

  it('when a session has been idle for more than 8 hours, then it has ended', async () => {
    const client = await maker();
    const token = client.cookies.get('wo_console')!;
    offsetMs += 7 * 3_600_000;
    expect((await client.get('/console/')).status).toBe(200); // still alive, and refreshed
    offsetMs += 8 * 3_600_000 + 60_000;
    expect((await client.get('/console/')).location).toBe('/console/login?ended=1');
    expect((await sessionDocs()).map((d) => d.id)).not.toContain(createHash('sha256').update(token).digest('hex'));
  });
});

describe('login throttling', () => {
  let throttled: TestSystem;
  let party: TestParty;
  let offset = 0;
  beforeAll(async () => {
    throttled = await startTestSystem({}, () => new Date(Date.now() + offset));
    party = await throttled.party('merchant');
  });
  afterAll(async () => {
    await throttled?.close();
  });

  it('when an email had 5 failed logins, then the next attempt is refused with 429 and Retry-After, even with the right password, until the window passes', async () => {
    for (let i = 0; i < 5; i += 1)
      expect((await new ConsoleClient(throttled.baseUrl).login(party.makerEmail, `wrong password ${i}`)).status).toBe(
        401,
      );
    const blocked = await new ConsoleClient(throttled.baseUrl).login(party.makerEmail, 'wrong password x');
    expect(blocked.status).toBe(429);
    expect(Number(blocked.headers.get('retry-after'))).toBeGreaterThan(0);
    const right = new ConsoleClient(throttled.baseUrl);
    expect((await right.login(party.makerEmail, MAKER_PASSWORD)).status).toBe(429);
    expect(right.cookies.has('wo_console')).toBe(false);
    // Another user from the same address is not blocked by this email's failures.
    expect((await new ConsoleClient(throttled.baseUrl).login(party.checkerEmail, CHECKER_PASSWORD)).status).toBe(303);
    offset += 15 * 60_000 + 1000;
    expect((await new ConsoleClient(throttled.baseUrl).login(party.makerEmail, MAKER_PASSWORD)).status).toBe(303);
  }, 120_000);

  it('when one address had 20 failed logins over many emails, then every login from it is refused with 429', async () => {
    for (let i = 0; i < 20; i += 1)
      await new ConsoleClient(throttled.baseUrl).login(`guess-${i}@test.example`, 'wrong password 1');
    const page = await new ConsoleClient(throttled.baseUrl).login(party.checkerEmail, CHECKER_PASSWORD);
    expect(page.status).toBe(429);
    expect(page.text).toContain('Too many failed attempts');
    offset += 15 * 60_000 + 1000;
    expect((await new ConsoleClient(throttled.baseUrl).login(party.checkerEmail, CHECKER_PASSWORD)).status).toBe(303);
  }, 120_000);
});

describe('restart and logs', () => {
  it('when wallet-ops restarts, then a session goes on', async () => {
    const dir = tempDir();
    const config = loadConfig({ DATA_DIR: dir.path, LOG_LEVEL: 'silent' });
    const start = async () => {
      const system = await buildWalletOps(config, createLogger('silent'));
      const server = await new Promise<import('node:http').Server>((resolve) => {
        const s = system.app.listen(0, '127.0.0.1', () => resolve(s));
      });
      return { system, server, baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
    };
    const stop = async (running: Awaited<ReturnType<typeof start>>) => {
      await new Promise<void>((resolve) => running.server.close(() => resolve()));
      running.server.closeAllConnections();
      await running.system.close();
    };
    try {
      const first = await start();
      const backOffice = {
        store: first.system.stores.eventStore,
        clock: () => new Date(),
        assetScale: config.ASSET_SCALE,
      };
      const { onboardParty } = await import('../../src/commands/back-office.ts');
      const { partyID } = await onboardParty(
        backOffice,
        { partyType: 'merchant', name: 'Restart Shop', shortCode: '77001' },
        { actor: 'operator:test', correlationId: 'c' },
      );
      const email = await extraUser(backOffice, { type: 'merchant', id: partyID }, ['maker'], 'restart');
      const client = new ConsoleClient(first.baseUrl);
      await client.loginOk(email, OTHER_PASSWORD);
      const token = client.cookies.get('wo_console')!;
      await stop(first);

      const second = await start();
      const again = new ConsoleClient(second.baseUrl);
      again.cookies.set('wo_console', token);
      const page = await again.get('/console/');
      expect(page.status).toBe(200);
      expect(page.text).toContain('Restart Shop');
      await stop(second);
    } finally {
      dir.cleanup();
    }
  });

  it('when a user logs in, a key is approved and its secret shown, then no log line carries the password, the secret or the session token', async () => {
    const lines: string[] = [];
    const dir = tempDir();
    const config = loadConfig({ DATA_DIR: dir.path, LOG_LEVEL: 'trace' });
    const system = await buildWalletOps(
      config,
      createLogger('trace', { write: (line: string) => void lines.push(line) }),
    );
    const server = await new Promise<import('node:http').Server>((resolve) => {
      const s = system.app.listen(0, '127.0.0.1', () => resolve(s));
    });
    try {
      const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const backOffice = { store: system.stores.eventStore, clock: () => new Date(), assetScale: config.ASSET_SCALE };
      const { onboardParty } = await import('../../src/commands/back-office.ts');
      const { partyID } = await onboardParty(
        backOffice,
        { partyType: 'merchant', name: 'Log Shop', shortCode: '77002' },
        { actor: 'operator:test', correlationId: 'c' },
      );
      const party = { type: 'merchant' as const, id: partyID };
      const makerEmail = await extraUser(backOffice, party, ['maker'], 'log-maker');
      const checkerEmail = await extraUser(backOffice, party, ['checker'], 'log-checker');
      const makerClient = new ConsoleClient(baseUrl);
      await makerClient.loginOk(makerEmail, OTHER_PASSWORD);
      await makerClient.get('/console/keys/new');
      await makerClient.post('/console/keys', { label: 'logged?', permissions: 'read-balance' });
      const keyID = system.directory.listByParty(party, new Date().toISOString())[0]!.keyID;
      const checkerClient = new ConsoleClient(baseUrl);
      await checkerClient.loginOk(checkerEmail, OTHER_PASSWORD);
      await checkerClient.get('/console/keys');
      expect((await checkerClient.post(`/console/keys/${keyID}/approve`)).status).toBe(303);
      const page = await makerClient.get('/console/keys?tab=active');
      const secret = new RegExp(`${keyID}\\.[A-Za-z0-9_-]{43}`).exec(page.text)?.[0];
      expect(secret).toBeDefined();
      await new ConsoleClient(baseUrl).login(makerEmail, 'a wrong password');
      const log = lines.join('');
      expect(lines.length).toBeGreaterThan(5);
      for (const value of [
        OTHER_PASSWORD,
        'a wrong password',
        secret!.split('.')[1]!,
        makerClient.cookies.get('wo_console')!,
        checkerClient.cookies.get('wo_console')!,
      ]) {
        expect(log).not.toContain(value);
      }
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await system.close();
      dir.cleanup();
    }
  });
});

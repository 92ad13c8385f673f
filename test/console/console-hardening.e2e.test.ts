import { randomBytes, randomUUID, scryptSync } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_HASH_COST, needsRehash, setPasswordHashCost, verifyPassword } from '../../src/domain/passwords.ts';
import { TEST_HASH_COST } from '../support/fast-passwords.ts';
import { streams } from '../../src/domain/streams.ts';
import { startTestSystem, type TestParty, type TestSystem } from '../support/system.ts';
import { ConsoleClient, MAKER_PASSWORD } from './console-client.ts';

/**
 * The console's hardening over HTTP: no 5xx for any asset name, HSTS and `__Host-` cookies when it is served
 * over HTTPS (TLS ended by a trusted proxy that says so in X-Forwarded-Proto), and a password hash stored with
 * the old scrypt cost replaced at the next successful login.
 */
let sys: TestSystem;
let party: TestParty;

beforeAll(async () => {
  // One trusted proxy in front (the test, at 127.0.0.1): X-Forwarded-Proto tells the scheme the browser used.
  sys = await startTestSystem({ TRUST_PROXY: '1' });
  party = await sys.party('merchant');
});
afterAll(async () => sys?.close());

const host = () => new URL(sys.baseUrl).host;
const overHttps = () =>
  new ConsoleClient(sys.baseUrl, { origin: `https://${host()}`, headers: { 'x-forwarded-proto': 'https' } });

describe('console assets', () => {
  it('when an asset path names a property every object has (__proto__, constructor, toString, ...), then the answer is 404, never 5xx', async () => {
    const client = new ConsoleClient(sys.baseUrl);
    const names = [
      ...Object.getOwnPropertyNames(Object.prototype),
      'prototype',
      '..%2fconsole.css',
      'console.css%00',
      'CONSOLE.CSS',
      'console.css.map',
    ];
    for (const name of names) {
      const page = await client.get(`/console/assets/${name}`);
      expect(page.status, `/console/assets/${name}`).toBe(404);
    }
    // A dot-dot segment is resolved by the URL itself (to /console/, the login redirect): still no 5xx.
    expect((await client.get('/console/assets/%2e%2e')).status).toBeLessThan(500);
    // A malformed percent-encoding cannot be decoded into a name: a 4xx too.
    expect((await client.get('/console/assets/%E0%A4%A')).status).toBe(400);
  });

  it('when a real asset is asked for, then it is served with its type', async () => {
    const client = new ConsoleClient(sys.baseUrl);
    const css = await client.get('/console/assets/console.css');
    expect(css.status).toBe(200);
    expect(css.headers.get('content-type')).toMatch(/^text\/css/);
    expect((await client.get('/console/assets/console.js')).headers.get('content-type')).toMatch(/^text\/javascript/);
  });
});

describe('the console over HTTPS', () => {
  it('when a page is served over HTTPS, then it carries Strict-Transport-Security; over plain HTTP it does not', async () => {
    const secure = await overHttps().get('/console/login');
    expect(secure.status).toBe(200);
    expect(secure.headers.get('strict-transport-security')).toBe('max-age=31536000');
    expect((await overHttps().get('/console/assets/console.css')).headers.get('strict-transport-security')).toBe(
      'max-age=31536000',
    );
    expect(
      (await new ConsoleClient(sys.baseUrl).get('/console/login')).headers.get('strict-transport-security'),
    ).toBeNull();
  });

  it('when a user logs in over HTTPS, then both cookies are __Host- cookies (Secure, Path=/, no Domain), and the session works with them', async () => {
    const client = overHttps();
    const form = await client.get('/console/login');
    const loginCookie = form.headers.getSetCookie().find((c) => c.startsWith('__Host-wo_console_login='));
    expect(loginCookie).toBeDefined();
    const login = await client.post('/console/login', { email: party.makerEmail, password: MAKER_PASSWORD });
    expect(login.status, login.text).toBe(303);
    const session = login.headers.getSetCookie().find((c) => c.startsWith('__Host-wo_console='))!;
    for (const cookie of [loginCookie!, session]) {
      expect(cookie).toMatch(/; Secure/);
      expect(cookie).toMatch(/; Path=\/(;|$)/);
      expect(cookie).toMatch(/; HttpOnly/);
      expect(cookie).toMatch(/; SameSite=Strict/);
      expect(cookie).not.toMatch(/; Domain=/i);
    }
    expect(login.headers.getSetCookie().some((c) => c.startsWith('wo_console='))).toBe(false);
    expect((await client.get('/console/')).status).toBe(200);

    // The same token under the unprefixed name is not a session over HTTPS: a cookie set by a sibling
    // subdomain or over plain HTTP cannot stand in for the __Host- one.
    const token = client.cookies.get('__Host-wo_console')!;
    const planted = new ConsoleClient(sys.baseUrl, {
      headers: { 'x-forwarded-proto': 'https', cookie: `wo_console=${token}` },
    });
    expect((await planted.get('/console/')).location).toBe('/console/login');

    const logout = await client.post('/console/logout');
    expect(logout.status).toBe(303);
    expect(logout.headers.getSetCookie().find((c) => c.startsWith('__Host-wo_console='))).toMatch(
      /Expires=Thu, 01 Jan 1970|Max-Age=0/i,
    );
    expect((await client.get('/console/')).location).toMatch(/^\/console\/login/);
  });

  it('when a user logs in over plain HTTP, then the cookies keep their plain names and Path=/console', async () => {
    const client = new ConsoleClient(sys.baseUrl);
    await client.get('/console/login');
    const login = await client.post('/console/login', { email: party.makerEmail, password: MAKER_PASSWORD });
    const session = login.headers.getSetCookie().find((c) => c.startsWith('wo_console='))!;
    expect(session).toMatch(/; Path=\/console/);
    expect(session).not.toMatch(/; Secure/);
  });
});

describe('password hashes of the old cost', () => {
  // This process hashes at production's cost here (the suite runs at 2^10, see test/support/fast-passwords.ts).
  beforeAll(() => setPasswordHashCost(DEFAULT_HASH_COST));
  afterAll(() => setPasswordHashCost(TEST_HASH_COST));
  /** A user as wallet-ops stored it before the scrypt cost was raised: N = 2^14. */
  async function legacyUser(password: string): Promise<{ userID: string; email: string }> {
    const userID = randomUUID();
    const email = `legacy-${userID.slice(0, 8)}@test.example`;
    const salt = randomBytes(16);
    const key = scryptSync(password.normalize('NFKC'), salt, 64, { N: 16384, r: 8, p: 1 });
    const passwordHash = ['scrypt', 16384, 8, 1, salt.toString('base64url'), key.toString('base64url')].join('$');
    const metadata = { actor: 'operator:test', correlationId: randomUUID() };
    await sys.system.stores.eventStore.appendMulti([
      {
        stream: streams.user(userID),
        expectedRevision: 'no_stream',
        events: [
          {
            type: 'UserAdded',
            data: {
              userID,
              party: party.ref,
              email,
              passwordHash,
              roles: ['maker'],
              platformAdmin: false,
              addedAt: new Date().toISOString(),
            },
            metadata,
          },
        ],
      },
      {
        stream: streams.userEmail(email),
        expectedRevision: 'no_stream',
        events: [{ type: 'EmailClaimed', data: { email, userID }, metadata }],
      },
    ]);
    return { userID, email };
  }

  const hashOf = async (userID: string) => {
    const events = await sys.system.stores.eventStore.readStream(streams.user(userID));
    return { events, hash: (events.at(-1)!.data as { passwordHash: string }).passwordHash };
  };

  it('when a user whose hash has the old cost logs in, then the hash is replaced by one of N = 2^17 for the same password, once', async () => {
    const password = 'legacy password 1';
    const { userID, email } = await legacyUser(password);

    const wrong = await new ConsoleClient(sys.baseUrl).login(email, 'not the password 1');
    expect(wrong.status).toBe(401);
    expect((await hashOf(userID)).events.map((e) => e.type)).toEqual(['UserAdded']);

    await new ConsoleClient(sys.baseUrl).loginOk(email, password);
    const after = await hashOf(userID);
    expect(after.events.map((e) => e.type)).toEqual(['UserAdded', 'UserPasswordHashUpgraded']);
    expect(after.events[1]!.metadata).toMatchObject({ actor: `user:${userID}` });
    expect(after.hash.split('$').slice(0, 4)).toEqual(['scrypt', '131072', '8', '1']);
    expect(needsRehash(after.hash)).toBe(false);
    await expect(verifyPassword(password, after.hash)).resolves.toBe(true);
    expect(JSON.stringify(after.events)).not.toContain(password);

    await new ConsoleClient(sys.baseUrl).loginOk(email, password);
    expect((await hashOf(userID)).events).toHaveLength(2);
  });
});

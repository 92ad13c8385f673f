import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { call, startTestSystem, type TestParty, type TestSystem, WITHOUT_EXECUTOR } from '../support/system.ts';

/**
 * Rate limits over HTTP, with a clock that stands still unless a test moves it: a token bucket per API key
 * (API_KEY_RATE_LIMIT per second, API_KEY_RATE_BURST at once) and one per client address for failed
 * authentications (AUTH_FAILURE_LIMIT a minute). Refusals are 429 /problems/rate-limited with Retry-After and
 * the RateLimit-Policy / RateLimit fields of draft-ietf-httpapi-ratelimit-headers.
 */
type Response = Awaited<ReturnType<typeof call>>;

function expectRateLimited(r: Response, policy: string, retryAfter: number): void {
  expect(r.status, JSON.stringify(r.body)).toBe(429);
  expect(r.headers.get('content-type') ?? '').toMatch(/^application\/problem\+json\b/);
  expect(r.body).toEqual({
    type: '/problems/rate-limited',
    status: 429,
    title: 'Too Many Requests',
    detail: expect.any(String),
    'violated-policies': [policy],
    requestId: r.headers.get('x-request-id'),
  });
  expect(r.headers.get('retry-after')).toBe(String(retryAfter));
  expect(r.headers.get('ratelimit')).toBe(`"${policy}";r=0;t=${retryAfter}`);
}

describe('rate limit per API key (5 per second, burst 5)', () => {
  let now = new Date('2030-06-01T12:00:00.000Z');
  const advance = (ms: number) => (now = new Date(now.getTime() + ms));
  let sys: TestSystem;
  let distributor: TestParty;

  beforeAll(async () => {
    sys = await startTestSystem({ API_KEY_RATE_LIMIT: '5', API_KEY_RATE_BURST: '5' }, () => now, WITHOUT_EXECUTOR);
    distributor = await sys.party('distributor');
  });
  afterAll(async () => sys?.close());

  const balance = (apiKey: string) =>
    call(sys.baseUrl, 'GET', `/api/v1/distributors/${distributor.ref.id}/balance`, { apiKey });
  const create = (apiKey: string) =>
    call(sys.baseUrl, 'POST', `/api/v1/distributors/${distributor.ref.id}/operations`, { apiKey, body: {} });

  it('when a key makes its burst of requests, then each is served and says how many remain; the next is 429 with Retry-After and the RateLimit fields', async () => {
    const { apiKey } = await distributor.key();
    for (let remaining = 4; remaining >= 0; remaining--) {
      const r = await balance(apiKey);
      expect(r.status).toBe(200);
      expect(r.headers.get('ratelimit-policy')).toBe('"per-key";q=5;w=1');
      expect(r.headers.get('ratelimit')).toBe(`"per-key";r=${remaining};t=1`);
    }
    const refused = await balance(apiKey);
    expectRateLimited(refused, 'per-key', 1);
    expect(refused.headers.get('ratelimit-policy')).toBe('"per-key";q=5;w=1');
    expect(refused.headers.get('x-request-id')).toBeTruthy();
  });

  it('when time passes, then tokens come back at the rate: one after 200 ms, the whole burst after a second', async () => {
    const { apiKey } = await distributor.key();
    for (let i = 0; i < 5; i++) expect((await balance(apiKey)).status).toBe(200);
    expect((await balance(apiKey)).status).toBe(429);
    advance(200);
    expect((await balance(apiKey)).status).toBe(200);
    expect((await balance(apiKey)).status).toBe(429);
    advance(1000);
    for (let i = 0; i < 5; i++) expect((await balance(apiKey)).status).toBe(200);
    expect((await balance(apiKey)).status).toBe(429);
  });

  it('when one key is over its limit, then another key of the same party is served', async () => {
    const busy = await distributor.key();
    const quiet = await distributor.key();
    for (let i = 0; i < 6; i++) await balance(busy.apiKey);
    expect((await balance(busy.apiKey)).status).toBe(429);
    expect((await balance(quiet.apiKey)).status).toBe(200);
  });

  it('when a key writes and reads, then both count against one bucket, and a refused create runs nothing', async () => {
    const { apiKey } = await distributor.key();
    for (let i = 0; i < 5; i++) expect((await create(apiKey)).status).toBe(400); // an empty body: refused after the limit
    expectRateLimited(await balance(apiKey), 'per-key', 1);
    expectRateLimited(await create(apiKey), 'per-key', 1);
  });

  it('when a request is refused for its permission, then it still counts: the key made it', async () => {
    const { apiKey } = await distributor.key({ permissions: 'read-balance' });
    for (let i = 0; i < 5; i++) expect((await create(apiKey)).status).toBe(403);
    expect((await balance(apiKey)).status).toBe(429);
  });
});

describe('failed authentications per client address (3 a minute)', () => {
  let now = new Date('2030-06-01T12:00:00.000Z');
  const advance = (ms: number) => (now = new Date(now.getTime() + ms));
  let sys: TestSystem;
  let distributor: TestParty;
  let good: string;

  beforeAll(async () => {
    sys = await startTestSystem({ AUTH_FAILURE_LIMIT: '3', TRUST_PROXY: '1' }, () => now, WITHOUT_EXECUTOR);
    distributor = await sys.party('distributor');
    good = (await distributor.key()).apiKey;
  });
  afterAll(async () => sys?.close());

  const wrongKey = () => `${good.split('.')[0]}.${randomBytes(32).toString('base64url')}`;
  /** From a client behind the one trusted proxy (the test itself, at 127.0.0.1). */
  const balance = (apiKey: string | undefined, client: string) =>
    call(sys.baseUrl, 'GET', `/api/v1/distributors/${distributor.ref.id}/balance`, {
      ...(apiKey ? { apiKey } : {}),
      headers: { 'x-forwarded-for': client },
    });

  it('when an address fails authentication more often than the limit, then it gets 429 instead of 401 until a failure has aged out; its valid keys still work', async () => {
    const client = '198.51.100.7';
    for (let remaining = 2; remaining >= 0; remaining--) {
      const r = await balance(wrongKey(), client);
      expect(r.status).toBe(401);
      expect(r.headers.get('www-authenticate')).toMatch(/^Bearer/);
      expect(r.headers.get('ratelimit-policy')).toBe('"failed-auth";q=3;w=60');
      expect(r.headers.get('ratelimit')).toBe(`"failed-auth";r=${remaining};t=20`);
    }
    expectRateLimited(await balance(wrongKey(), client), 'failed-auth', 20);
    expectRateLimited(await balance(undefined, client), 'failed-auth', 20);
    // A valid key is not refused for its address's failures.
    expect((await balance(good, client)).status).toBe(200);

    advance(20_000);
    expect((await balance(wrongKey(), client)).status).toBe(401);
    expectRateLimited(await balance(wrongKey(), client), 'failed-auth', 20);
  });

  it('when another address fails, then it has its own count; IPv6 clients are counted by their /64', async () => {
    for (let i = 0; i < 3; i++) expect((await balance(wrongKey(), '198.51.100.8')).status).toBe(401);
    expect((await balance(wrongKey(), '198.51.100.8')).status).toBe(429);
    expect((await balance(wrongKey(), '198.51.100.9')).status).toBe(401);

    for (let i = 1; i <= 3; i++) expect((await balance(wrongKey(), `2001:db8:1:2::${i}`)).status).toBe(401);
    expect((await balance(wrongKey(), '2001:db8:1:2:ffff::1')).status).toBe(429);
    expect((await balance(wrongKey(), '2001:db8:1:3::1')).status).toBe(401);
  });

  it('when a valid key is used from outside its allow-list, then that counts as a failure of the address', async () => {
    const { apiKey } = await distributor.key({ allowedIPs: '10.0.0.0/8' });
    const client = '198.51.100.20';
    for (let i = 0; i < 3; i++) expect((await balance(apiKey, client)).status).toBe(403);
    expectRateLimited(await balance(apiKey, client), 'failed-auth', 20);
    expect((await balance(apiKey, '10.1.2.3')).status).toBe(200);
  });
});

describe('rate limit configuration', () => {
  it('when nothing is set, then a key may make 20 requests a second with bursts of 40, and an address 30 failed authentications a minute', () => {
    expect(loadConfig({})).toMatchObject({ API_KEY_RATE_LIMIT: 20, API_KEY_RATE_BURST: 40, AUTH_FAILURE_LIMIT: 30 });
  });

  it('when a limit is not a whole number or the burst is 0, then the configuration is refused naming it', () => {
    expect(() => loadConfig({ API_KEY_RATE_LIMIT: '2.5' })).toThrow(/API_KEY_RATE_LIMIT/);
    expect(() => loadConfig({ API_KEY_RATE_LIMIT: '-1' })).toThrow(/API_KEY_RATE_LIMIT/);
    expect(() => loadConfig({ API_KEY_RATE_BURST: '0' })).toThrow(/API_KEY_RATE_BURST/);
    expect(() => loadConfig({ AUTH_FAILURE_LIMIT: 'many' })).toThrow(/AUTH_FAILURE_LIMIT/);
  });

  it('when a limit is 0, then it is off', async () => {
    const sys = await startTestSystem({ API_KEY_RATE_LIMIT: '0', AUTH_FAILURE_LIMIT: '0' }, undefined, ['read-api']);
    try {
      const distributor = await sys.party('distributor');
      const { apiKey } = await distributor.key();
      const responses = await Promise.all(
        Array.from({ length: 60 }, () =>
          call(sys.baseUrl, 'GET', `/api/v1/distributors/${distributor.ref.id}/balance`, { apiKey }),
        ),
      );
      expect(responses.map((r) => r.status)).toEqual(Array(60).fill(200));
      expect(responses[0]!.headers.get('ratelimit')).toBeNull();
    } finally {
      await sys.close();
    }
  });
});

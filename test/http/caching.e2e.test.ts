import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  call,
  startTestSystem,
  type TestParty,
  type TestSystem,
  waitFor,
  WITHOUT_EXECUTOR,
} from '../support/system.ts';

/**
 * What caches may keep of the API: nothing a request with an API key was answered (Cache-Control: no-store, so
 * a shared proxy or a browser never serves one client's balance to another); ETags only on GETs answered 200,
 * where a client may revalidate with If-None-Match; none on POST answers nor on problems, which no client can
 * revalidate.
 */
let sys: TestSystem;
let distributor: TestParty;
let apiKey: string;

beforeAll(async () => {
  sys = await startTestSystem({}, undefined, WITHOUT_EXECUTOR);
  distributor = await sys.party('distributor');
  await sys.credit(distributor.wallet, '100.00');
  ({ apiKey } = await distributor.key());
  await sys.individual('+2348123456789');
});
afterAll(async () => sys?.close());

const path = (tail: string) => `/api/v1/distributors/${distributor.ref.id}/${tail}`;
const cashIn = { operationType: 'cash-in', amount: '1.00', phoneTo: '+2348123456789' };

describe('caching of authenticated responses', () => {
  it('when a GET with an API key is answered 200, then it is no-store with a weak ETag, and If-None-Match with that ETag gets 304', async () => {
    for (const tail of ['balance', 'operations']) {
      const r = await call(sys.baseUrl, 'GET', path(tail), { apiKey });
      expect(r.status, tail).toBe(200);
      expect(r.headers.get('cache-control'), tail).toBe('no-store');
      const etag = r.headers.get('etag');
      expect(etag, tail).toMatch(/^W\/".+"$/);
      const again = await call(sys.baseUrl, 'GET', path(tail), { apiKey, headers: { 'if-none-match': etag! } });
      expect(again.status, tail).toBe(304);
    }
  });

  it("when Node's fetch (undici) revalidates with If-None-Match and its own Cache-Control: no-cache, then the answer is 304", async () => {
    for (const tail of ['balance', 'operations']) {
      const url = `${sys.baseUrl}${path(tail)}`;
      const authorization = `Bearer ${apiKey}`;
      const etag = (await fetch(url, { headers: { authorization } })).headers.get('etag')!;
      // What undici and browsers send on a conditional request, and what express's req.fresh answered 200 to.
      const again = await fetch(url, {
        headers: { authorization, 'if-none-match': etag, 'cache-control': 'no-cache' },
      });
      expect(again.status, tail).toBe(304);
      expect(await again.text(), tail).toBe('');
      const plain = await fetch(url, { headers: { authorization, 'if-none-match': `"x", ${etag}` } });
      expect(plain.status, tail).toBe(304);
      const other = await fetch(url, {
        headers: { authorization, 'if-none-match': 'W/"0-nope"', 'cache-control': 'no-cache' },
      });
      expect(other.status, tail).toBe(200);
    }
  });

  it('given a balance revalidated by its ETag, when the balance changes, then the old ETag gets 200 with the new balance and a new ETag, which then gets 304', async () => {
    const before = await call(sys.baseUrl, 'GET', path('balance'), { apiKey });
    expect(before.body.balance).toBe('100.00');
    const etag = before.headers.get('etag')!;
    const conditional = (tag: string) =>
      call(sys.baseUrl, 'GET', path('balance'), { apiKey, headers: { 'if-none-match': tag } });
    await sys.credit(distributor.wallet, '5.00');
    await waitFor(async () => (await conditional(etag)).status === 200);
    const changed = await conditional(etag);
    expect(changed.body.balance).toBe('105.00');
    const newTag = changed.headers.get('etag')!;
    expect(newTag).toMatch(/^W\/".+"$/);
    expect(newTag).not.toBe(etag);
    expect((await conditional(newTag)).status).toBe(304);
  });

  it('when a GET is asked as HEAD, or answered 304, then the headers say what the 200 would (HEAD: its length and type; 304: its ETag) and no body comes', async () => {
    for (const tail of ['balance', 'operations']) {
      const url = `${sys.baseUrl}${path(tail)}`;
      const authorization = `Bearer ${apiKey}`;
      const get = await fetch(url, { headers: { authorization } });
      const body = await get.text();
      // The 200 says its length too (Node measures the body it is given whole), not a chunked transfer.
      expect(get.headers.get('content-length'), tail).toBe(String(Buffer.byteLength(body)));
      expect(get.headers.get('transfer-encoding'), tail).toBeNull();
      const head = await fetch(url, { method: 'HEAD', headers: { authorization } });
      expect(head.status, tail).toBe(200);
      expect(head.headers.get('content-length'), tail).toBe(String(Buffer.byteLength(body)));
      expect(head.headers.get('content-type'), tail).toBe('application/json; charset=utf-8');
      expect(head.headers.get('etag'), tail).toBe(get.headers.get('etag'));
      expect(await head.text(), tail).toBe('');
      const notModified = await fetch(url, { headers: { authorization, 'if-none-match': get.headers.get('etag')! } });
      expect(notModified.status, tail).toBe(304);
      expect(notModified.headers.get('etag'), tail).toBe(get.headers.get('etag'));
      expect(notModified.headers.get('content-length'), tail).toBeNull();
      expect(await notModified.text(), tail).toBe('');
    }
  });

  it('when a create is answered 200, then it is no-store and carries no ETag', async () => {
    const r = await call(sys.baseUrl, 'POST', path('operations'), { apiKey, body: cashIn });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.headers.get('cache-control')).toBe('no-store');
    expect(r.headers.get('etag')).toBeNull();
  });

  it('when a request is refused (400, 401, 403), then the problem is no-store and carries no ETag', async () => {
    const refusals = [
      await call(sys.baseUrl, 'POST', path('operations'), { apiKey, body: { ...cashIn, amount: 'ten' } }),
      await call(sys.baseUrl, 'GET', path('balance'), { apiKey: 'key_nope.secret' }),
      await call(sys.baseUrl, 'GET', `/api/v1/distributors/someone-else/balance`, { apiKey }),
      await call(sys.baseUrl, 'GET', path('operations?limit=0'), { apiKey }),
    ];
    expect(refusals.map((r) => r.status)).toEqual([400, 401, 403, 400]);
    for (const r of refusals) {
      expect(r.headers.get('cache-control'), String(r.status)).toBe('no-store');
      expect(r.headers.get('etag'), String(r.status)).toBeNull();
    }
  });
});

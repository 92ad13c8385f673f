/**
 * The TypeScript client of clients/typescript against a live in-process server: every endpoint, pages as an
 * async iterator, an Idempotency-Key on every create, retries as Retry-After says, and webhook verification
 * against signatures made by the Standard Webhooks reference library.
 */
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createWalletClient,
  retryingFetch,
  verifyWebhook,
  WalletApiError,
  WebhookVerificationError,
} from '../../clients/typescript/src/index.ts';
import { startTestSystem, WITHOUT_EXECUTOR, type TestParty, type TestSystem } from '../support/system.ts';

const PHONE = '+2348123456781';

describe('given a live server and the TypeScript client', () => {
  let sys: TestSystem;
  let distributor: TestParty;
  let merchant: TestParty;
  let distributorKey: string;
  let merchantKey: string;
  const sent: Request[] = [];
  const observe = (request: Request) => {
    sent.push(request);
    return fetch(request);
  };
  beforeAll(async () => {
    sys = await startTestSystem({}, undefined, WITHOUT_EXECUTOR);
    distributor = await sys.party('distributor');
    merchant = await sys.party('merchant');
    await sys.individual(PHONE);
    await sys.credit(distributor.wallet, '1000.00');
    await sys.credit(merchant.wallet, '1000.00');
    distributorKey = (await distributor.key()).apiKey;
    merchantKey = (await merchant.key()).apiKey;
  });
  afterAll(async () => {
    await sys?.close();
  });

  it('when a distributor creates operations and reads them back, then every call is typed and pages iterate to the end', async () => {
    const client = createWalletClient({ baseUrl: sys.baseUrl, apiKey: distributorKey, fetch: observe }).distributor(
      distributor.ref.id,
    );
    const ids = [];
    for (let i = 0; i < 3; i++)
      ids.push(
        (await client.createOperation({ operationType: 'cash-in', amount: '10.00', phoneTo: PHONE, memo: `n${i}` }))
          .operationID,
      );
    ids.push(
      (
        await client.createOperation({
          operationType: 'cash-in',
          amount: '5.00',
          merchantToShortCode: merchant.shortCode,
          phoneTo: null,
        })
      ).operationID,
    );
    expect(new Set(ids).size).toBe(4);
    // Each create carried an Idempotency-Key of its own.
    const keys = sent.filter((r) => r.method === 'POST').map((r) => r.headers.get('idempotency-key'));
    expect(keys).toHaveLength(4);
    expect(new Set(keys).size).toBe(4);

    const seen = [];
    for await (const operation of client.allOperations({ pageSize: 3 })) seen.push(operation);
    expect(seen.map((o) => o.operationID).sort()).toEqual([...ids].sort());
    const toMerchant = seen.find((o) => o.operationType === 'cash-in' && o.merchantTo !== undefined);
    expect(toMerchant).toMatchObject({ merchantTo: merchant.ref.id, merchantShortCode: Number(merchant.shortCode) });
    expect(await client.operations({ limit: 1 })).toHaveLength(1);
    expect(await client.balance()).toEqual({ balance: '1000.00', available: '965.00', held: '35.00' });
  });

  it('when a create is repeated with its Idempotency-Key, then the same operation comes back', async () => {
    const client = createWalletClient({ baseUrl: sys.baseUrl, apiKey: merchantKey }).merchant(merchant.ref.id);
    const body = { operationType: 'pay-individual', amount: '1.00', phoneTo: PHONE } as const;
    const first = await client.createOperation(body, { idempotencyKey: 'order-42' });
    expect(await client.createOperation(body, { idempotencyKey: 'order-42' })).toEqual(first);
  });

  it('when a merchant uses every endpoint of its own, then each answers', async () => {
    const client = createWalletClient({ baseUrl: sys.baseUrl, apiKey: merchantKey }).merchant(merchant.ref.id);
    const payee = await sys.party('merchant');
    const paid = await client.createOperation({
      operationType: 'pay-merchant',
      amount: '2.00',
      merchantToShortCode: payee.shortCode,
    });
    const { operationID } = await client.createOperation({
      operationType: 'cash-out',
      amount: '3.00',
      distributorToShortCode: distributor.shortCode,
    });
    const operations = [];
    for await (const operation of client.allOperations()) operations.push(operation);
    expect(operations.find((o) => o.operationID === operationID)).toMatchObject({
      operationType: 'cash-out',
      distributorTo: distributor.ref.id,
      status: 'pending',
    });
    expect(operations.find((o) => o.operationID === paid.operationID)).toMatchObject({
      operationType: 'pay-merchant',
      merchantTo: payee.ref.id,
      merchantName: payee.name,
    });
    expect(await client.payments({ search: 'nothing like it' })).toEqual([]);
    const payments = [];
    for await (const payment of client.allPayments({ pageSize: 10 })) payments.push(payment);
    expect(payments).toEqual([]);
    expect((await client.balance()).held).not.toBe('0.00');
  });

  it('when the API refuses, then a WalletApiError carries the status, the typed problem and the request id', async () => {
    const client = createWalletClient({ baseUrl: sys.baseUrl, apiKey: distributorKey });
    const refused = await client
      .distributor('someone-else')
      .balance()
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(WalletApiError);
    expect(refused).toMatchObject({
      status: 403,
      problem: { type: '/problems/access-forbidden' },
      requestId: expect.any(String),
    });
    const invalid = await client
      .distributor(distributor.ref.id)
      .createOperation({ operationType: 'cash-in', amount: '1.001', phoneTo: PHONE })
      .catch((error: unknown) => error);
    expect(invalid).toMatchObject({
      status: 400,
      problem: { type: '/problems/input-validation-problems', errors: [{ field: 'amount' }] },
    });
  });
});

describe('given a server that rate-limits keys to one request a second', () => {
  let sys: TestSystem;
  let now = Date.parse('2026-11-21T10:00:00.000Z');
  let apiKey: string;
  let partyID: string;
  beforeAll(async () => {
    sys = await startTestSystem(
      { API_KEY_RATE_LIMIT: '1', API_KEY_RATE_BURST: '1' },
      () => new Date(now),
      WITHOUT_EXECUTOR,
    );
    const party = await sys.party('merchant');
    partyID = party.ref.id;
    apiKey = (await party.key()).apiKey;
  });
  afterAll(async () => {
    await sys?.close();
  });

  it("when a request gets 429, then the client waits Retry-After (on the server's clock) and the retry succeeds; with retries off it throws the 429", async () => {
    const waits: number[] = [];
    const sleep = async (ms: number) => {
      waits.push(ms);
      now += ms;
    };
    const client = createWalletClient({ baseUrl: sys.baseUrl, apiKey, retry: { sleep } }).merchant(partyID);
    await client.balance();
    expect((await client.balance()).balance).toBe('0.00');
    expect(waits).toEqual([1000]);
    const once = createWalletClient({ baseUrl: sys.baseUrl, apiKey, retry: { attempts: 1 } }).merchant(partyID);
    await expect(once.balance()).rejects.toMatchObject({ status: 429, problem: { type: '/problems/rate-limited' } });
  });
});

describe('the retry policy on 503', () => {
  const answers = (...responses: Array<() => Response>) => {
    const seen: Request[] = [];
    return { seen, fetch: async (request: Request) => (seen.push(request), responses[seen.length - 1]!()) };
  };
  const unavailable = (retryAfter?: string) => () =>
    new Response('{}', { status: 503, headers: retryAfter ? { 'retry-after': retryAfter } : {} });
  const ok = () => new Response('{}', { status: 200 });
  const sleep = async () => {};

  it('when a GET gets 503 with Retry-After, then it is retried; without one (a corrupted store) or above the bound, it is not', async () => {
    const retried = answers(unavailable('2'), ok);
    expect((await retryingFetch(retried.fetch, { sleep })(new Request('http://x/a'))).status).toBe(200);
    const corrupted = answers(unavailable());
    expect((await retryingFetch(corrupted.fetch, { sleep })(new Request('http://x/a'))).status).toBe(503);
    const tooLong = answers(unavailable('3600'));
    expect((await retryingFetch(tooLong.fetch, { sleep, maxDelaySeconds: 30 })(new Request('http://x/a'))).status).toBe(
      503,
    );
  });

  it('when a POST gets 503, then it is retried only with an Idempotency-Key, with the same body', async () => {
    const without = answers(unavailable('1'), ok);
    expect(
      (await retryingFetch(without.fetch, { sleep })(new Request('http://x/a', { method: 'POST', body: '{"a":1}' })))
        .status,
    ).toBe(503);
    const keyed = answers(unavailable('1'), ok);
    expect(
      (
        await retryingFetch(keyed.fetch, { sleep })(
          new Request('http://x/a', { method: 'POST', body: '{"a":1}', headers: { 'idempotency-key': 'k' } }),
        )
      ).status,
    ).toBe(200);
    expect(await Promise.all(keyed.seen.map((r) => r.text()))).toEqual(['{"a":1}', '{"a":1}']);
  });
});

describe('webhook verification (Standard Webhooks)', () => {
  const secret = `whsec_${Buffer.from('a secret of thirty-two bytes!!!!').toString('base64')}`;
  const body = JSON.stringify({
    id: 'evt_1',
    type: 'api_key.revoked',
    createdAt: '2026-11-21T10:00:00.000Z',
    party: { type: 'merchant', id: 'm' },
    data: {
      apiKey: { keyID: 'k', label: 'l', permissions: [], status: 'revoked', revokedAt: '2026-11-21T10:00:00.000Z' },
    },
  });
  const at = new Date('2026-11-21T10:00:00.000Z');
  const signed = (key = secret, when = at, payload = body) => ({
    'webhook-id': 'evt_1',
    'webhook-timestamp': String(Math.floor(when.getTime() / 1000)),
    'webhook-signature': new Webhook(key).sign('evt_1', when, payload),
  });

  it('when a delivery is signed with the secret, then it verifies and its event is returned', () => {
    expect(verifyWebhook(secret, signed(), body, { now: at })).toMatchObject({ id: 'evt_1', type: 'api_key.revoked' });
    expect(
      verifyWebhook(secret, new Headers(signed()), Buffer.from(body), { now: new Date(at.getTime() + 299_000) }).id,
    ).toBe('evt_1');
  });

  it('when the header carries signatures of a new and an old secret (a rotation), then a match with either verifies', () => {
    const other = `whsec_${Buffer.from('another secret, also 32 bytes!!!').toString('base64')}`;
    const headers = signed(other);
    headers['webhook-signature'] = `${headers['webhook-signature']} ${signed()['webhook-signature']}`;
    expect(verifyWebhook(secret, headers, body, { now: at }).id).toBe('evt_1');
  });

  it.each([
    ['the body was changed', () => [secret, signed(), body.replace('revoked', 'REVOKED'), at]],
    ['another secret signed it', () => [`whsec_${Buffer.from('x'.repeat(32)).toString('base64')}`, signed(), body, at]],
    ['it is more than 5 minutes old', () => [secret, signed(), body, new Date(at.getTime() + 301_000)]],
    ['a header is missing', () => [secret, { ...signed(), 'webhook-signature': '' }, body, at]],
  ] as const)('when %s, then it is refused', (_why, make) => {
    const [key, headers, payload, now] = make();
    expect(() =>
      verifyWebhook(key as string, headers as Record<string, string>, payload as string, { now: now as Date }),
    ).toThrow(WebhookVerificationError);
  });
});

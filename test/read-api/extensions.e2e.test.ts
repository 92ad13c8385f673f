import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decideOperation } from '../../src/commands/operation-handlers.ts';
import { actingUser, findUserByEmail, userContext } from '../../src/commands/back-office.ts';
import { completeOperation } from '../support/given-events.ts';
import {
  call,
  startTestSystem,
  waitFor,
  WITHOUT_EXECUTOR,
  type TestParty,
  type TestSystem,
} from '../support/system.ts';

/**
 * The read API's extensions beyond the contract (additive: the contract's five GETs answer as before): one
 * operation or payment by its id, with the key's party checks (another party's id is 404, as one that never
 * existed), and the lists' `status`, `createdFrom` and `createdTo` filters, validated like every parameter.
 */
type Response = Awaited<ReturnType<typeof call>>;
type Keyed = TestParty & { apiKey: string };

let sys: TestSystem;
let distributor: Keyed;
let otherDistributor: Keyed;
let merchant: Keyed;
let otherMerchant: Keyed;
let phone: string;
const ids = { toPhone: '', toMerchant: '', rejected: '', others: '', payment: '', paymentWo: '' };

const get = (path: string, apiKey: string): Promise<Response> => call(sys.baseUrl, 'GET', path, { apiKey });
const operations = (party: TestParty) => `/api/v1/${party.ref.type}s/${party.ref.id}/operations`;
const payments = (party: TestParty) => `/api/v1/merchants/${party.ref.id}/payments`;

async function keyed(type: 'distributor' | 'merchant'): Promise<Keyed> {
  const party = await sys.party(type);
  await sys.credit(party.wallet, '1000.00');
  const { apiKey } = await party.key({ permissions: 'read-balance,read-transactions,perform-operations' });
  return { ...party, apiKey };
}

async function create(party: Keyed, body: Record<string, unknown>): Promise<string> {
  const r = await call(sys.baseUrl, 'POST', operations(party), { apiKey: party.apiKey, body });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.operationID as string;
}

/** Polls a list until `accept` holds; returns its items. */
async function until(path: string, apiKey: string, accept: (items: any[]) => boolean): Promise<any[]> {
  let last: Response | undefined;
  await waitFor(async () => {
    last = await get(path, apiKey);
    return last.status === 200 && accept(last.body);
  });
  return last!.body;
}

function expectNotFound(r: Response): void {
  expect(r.status, JSON.stringify(r.body)).toBe(404);
  expect(r.body).toMatchObject({ type: '/problems/not-found', status: 404, title: 'Not Found' });
}

function expectInvalid(r: Response, fields: string[]): void {
  expect(r.status, JSON.stringify(r.body)).toBe(400);
  expect(r.body.type).toBe('/problems/input-validation-problems');
  expect((r.body.errors as Array<{ field: string }>).map((e) => e.field).sort()).toEqual([...fields].sort());
}

beforeAll(async () => {
  sys = await startTestSystem({}, undefined, WITHOUT_EXECUTOR);
  [distributor, otherDistributor, merchant, otherMerchant] = [
    await keyed('distributor'),
    await keyed('distributor'),
    await keyed('merchant'),
    await keyed('merchant'),
  ];
  phone = await sys.individual('+2348123499001');
  ids.toPhone = await create(distributor, { operationType: 'cash-in', amount: '10.00', phoneTo: phone, memo: 'first' });
  ids.toMerchant = await create(distributor, {
    operationType: 'cash-in',
    amount: '20.00',
    merchantToShortCode: merchant.shortCode,
  });
  ids.rejected = await create(distributor, { operationType: 'cash-in', amount: '30.00', phoneTo: phone });
  ids.others = await create(otherDistributor, { operationType: 'cash-in', amount: '40.00', phoneTo: phone });
  const checker = await findUserByEmail(sys.backOffice, distributor.checkerEmail);
  const deps = { store: sys.system.stores.eventStore, clock: () => new Date(), assetScale: sys.config.ASSET_SCALE };
  await decideOperation(
    deps,
    actingUser(checker),
    ids.rejected,
    { type: 'reject', reason: 'wrong amount' },
    userContext(checker, randomUUID()),
  );
  ids.payment = await create(otherMerchant, {
    operationType: 'pay-merchant',
    amount: '5.00',
    merchantToShortCode: merchant.shortCode,
  });
  ids.paymentWo = (await completeOperation(sys.system.stores.eventStore, ids.payment)).walletOperationID;
  await until(payments(merchant), merchant.apiKey, (items) => items.length === 1);
  await until(operations(distributor), distributor.apiKey, (items) =>
    items.some((i) => i.operationID === ids.rejected && i.status === 'rejected'),
  );
});
afterAll(async () => sys?.close());

describe('GET .../operations/{operationID} and .../payments/{operationID} (extensions)', () => {
  it("when a distributor reads one of its operations by id, then it is the list's object, with an ETag that gets 304", async () => {
    const listed = (await get(operations(distributor), distributor.apiKey)).body as any[];
    for (const id of [ids.toPhone, ids.toMerchant, ids.rejected]) {
      const r = await get(`${operations(distributor)}/${id}`, distributor.apiKey);
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body).toEqual(listed.find((item) => item.operationID === id));
      expect(r.headers.get('cache-control')).toBe('no-store');
      const etag = r.headers.get('etag')!;
      const again = await call(sys.baseUrl, 'GET', `${operations(distributor)}/${id}`, {
        apiKey: distributor.apiKey,
        headers: { 'if-none-match': etag },
      });
      expect(again.status).toBe(304);
    }
  });

  it("when a merchant reads a cash-in it received, or a payment by its wo_ id, then each is the list's object", async () => {
    const listedOperations = (await get(operations(merchant), merchant.apiKey)).body as any[];
    const operation = await get(`${operations(merchant)}/${ids.toMerchant}`, merchant.apiKey);
    expect(operation.status).toBe(200);
    expect(operation.body).toEqual(listedOperations.find((item) => item.operationID === ids.toMerchant));
    expect(operation.body).toMatchObject({
      operationType: 'cash-in',
      merchantID: merchant.ref.id,
      distributorTo: distributor.ref.id,
    });

    const [listedPayment] = (await get(payments(merchant), merchant.apiKey)).body as any[];
    const payment = await get(`${payments(merchant)}/${ids.paymentWo}`, merchant.apiKey);
    expect(payment.status).toBe(200);
    expect(payment.body).toEqual(listedPayment);
    expect(payment.body).toMatchObject({
      operationID: ids.paymentWo,
      sourceOperationID: ids.payment,
      fromType: 'merchant',
    });
  });

  it("when a key asks under its own path for another party's item, then it is 404, the same as an id that does not exist", async () => {
    expectNotFound(await get(`${operations(distributor)}/${ids.others}`, distributor.apiKey));
    expectNotFound(await get(`${operations(distributor)}/op_00000000000000000000000000000000`, distributor.apiKey));
    expectNotFound(await get(`${operations(distributor)}/${'x'.repeat(300)}`, distributor.apiKey));
    // The payer's own operation is not the payee's, nor is the payment under the payer's path.
    expectNotFound(await get(`${operations(merchant)}/${ids.payment}`, merchant.apiKey));
    expectNotFound(await get(`${payments(otherMerchant)}/${ids.paymentWo}`, otherMerchant.apiKey));
    // A payment is named by its wo_ id only; the cash-in to the merchant is an operation, not a listed payment.
    expectNotFound(await get(`${payments(merchant)}/${ids.payment}`, merchant.apiKey));
    expectNotFound(await get(`${operations(otherMerchant)}/${ids.toMerchant}`, otherMerchant.apiKey));
  });

  it('when the path names another party, then it is 403 as for the lists; without Read Transactions, 403; with a query parameter, 400', async () => {
    const r = await get(`${operations(otherDistributor)}/${ids.others}`, distributor.apiKey);
    expect(r.status).toBe(403);
    expect(r.body.type).toBe('/problems/access-forbidden');
    const { apiKey: balanceOnly } = await distributor.key({ permissions: 'read-balance' });
    expect((await get(`${operations(distributor)}/${ids.toPhone}`, balanceOnly)).status).toBe(403);
    expectInvalid(await get(`${operations(distributor)}/${ids.toPhone}?limit=1`, distributor.apiKey), ['limit']);
  });
});

describe('status, createdFrom and createdTo on the lists (extensions)', () => {
  it('when a list is filtered by status, then only operations in that status come, newest first', async () => {
    const pending = (await get(`${operations(distributor)}?status=pending`, distributor.apiKey)).body as any[];
    expect(pending.map((i) => i.operationID)).toEqual([ids.toMerchant, ids.toPhone]);
    const rejected = (await get(`${operations(distributor)}?status=rejected&limit=10`, distributor.apiKey))
      .body as any[];
    expect(rejected.map((i) => i.operationID)).toEqual([ids.rejected]);
    expect((await get(`${operations(distributor)}?status=completed`, distributor.apiKey)).body).toEqual([]);
    const merchantPending = (await get(`${operations(merchant)}?status=pending`, merchant.apiKey)).body as any[];
    expect(merchantPending.map((i) => i.operationID)).toEqual([ids.toMerchant]);
  });

  it('when a list is filtered by creation time, then createdFrom is inclusive and createdTo exclusive, and a date means midnight UTC', async () => {
    const all = (await get(operations(distributor), distributor.apiKey)).body as any[];
    const first = all.find((i) => i.operationID === ids.toPhone);
    const from = await get(
      `${operations(distributor)}?createdFrom=${encodeURIComponent(first.createdAt)}`,
      distributor.apiKey,
    );
    expect(from.body).toEqual(all.filter((i) => i.createdAt >= first.createdAt));
    const to = await get(
      `${operations(distributor)}?createdTo=${encodeURIComponent(first.createdAt)}`,
      distributor.apiKey,
    );
    expect(to.body).toEqual(all.filter((i) => i.createdAt < first.createdAt));
    // The same instant at another offset is the same bound.
    const inLagos = new Date(Date.parse(first.createdAt) + 3600_000).toISOString().replace('Z', '+01:00');
    expect(
      (await get(`${operations(distributor)}?createdFrom=${encodeURIComponent(inLagos)}`, distributor.apiKey)).body,
    ).toEqual(from.body);
    const today = first.createdAt.slice(0, 10);
    const tomorrow = new Date(Date.parse(today) + 86_400_000).toISOString().slice(0, 10);
    expect(
      (
        await get(
          `${operations(distributor)}?createdFrom=${today}&createdTo=${tomorrow}&status=pending`,
          distributor.apiKey,
        )
      ).body,
    ).toEqual(all.filter((i) => i.status === 'pending' && i.createdAt >= today && i.createdAt < tomorrow));
    expect((await get(`${operations(distributor)}?createdFrom=${tomorrow}`, distributor.apiKey)).body).toEqual([]);
    const paid = (await get(payments(merchant), merchant.apiKey)).body as any[];
    expect(
      (await get(`${payments(merchant)}?createdFrom=${today}&createdTo=${tomorrow}`, merchant.apiKey)).body,
    ).toEqual(paid);
    expect((await get(`${payments(merchant)}?createdTo=${today}`, merchant.apiKey)).body).toEqual([]);
  });

  it('when a filter is malformed, repeated or out of order, then it is refused with 400 naming it; other unknown parameters are still 400', async () => {
    const path = operations(distributor);
    const key = distributor.apiKey;
    expectInvalid(await get(`${path}?status=done`, key), ['status']);
    expectInvalid(await get(`${path}?status=executing`, key), ['status']);
    expectInvalid(await get(`${path}?status=pending&status=failed`, key), ['status']);
    expectInvalid(await get(`${path}?createdFrom=yesterday`, key), ['createdFrom']);
    expectInvalid(await get(`${path}?createdFrom=2026-11-21T10:15:00`, key), ['createdFrom']); // no offset
    expectInvalid(await get(`${path}?createdTo=2026-02-30`, key), ['createdTo']);
    expectInvalid(await get(`${path}?createdFrom=2026-11-22&createdTo=2026-11-21`, key), ['createdTo']);
    expectInvalid(await get(`${path}?sort=asc`, key), ['sort']);
    expectInvalid(await get(`${payments(merchant)}?status=completed`, merchant.apiKey), ['status']);
    expectInvalid(await get(`${payments(merchant)}?createdFrom=1`, merchant.apiKey), ['createdFrom']);
  });
});

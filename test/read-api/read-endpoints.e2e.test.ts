import { randomUUID } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decideOperation } from '../../src/commands/operation-handlers.ts';
import { actingUser, findUserByEmail, userContext } from '../../src/commands/back-office.ts';
import { issueFloat } from '../../src/commands/channel-operations.ts';
import { PartyLookup } from '../../src/commands/party-lookup.ts';
import type { OperationRequested } from '../../src/domain/events.ts';
import { streams } from '../../src/domain/streams.ts';
import type { EventStore, StreamAppend } from '../../src/ports/event-store.ts';
import type { Scalar } from '../../src/ports/read-store.ts';
import {
  completeOperation,
  failOperation,
  individualPayment,
  newOperationID,
  requestOperation,
  type Completion,
} from '../support/given-events.ts';
import { call, startTestSystem, waitFor, type TestParty, type TestSystem } from '../support/system.ts';

/**
 * The five GET endpoints of the contract end to end over HTTP: balances, the distributor and merchant
 * operation lists, the merchant payments list with its search, permissions, and pagination. Operations are
 * created through the POST endpoints where one exists. A checker's approval is carried out by the real
 * executor on the embedded ledger; other completions and failures are the executor's events appended by
 * test/support/given-events.ts. Lists are read once the projections have caught up, by polling the API.
 */

type Response = Awaited<ReturnType<typeof call>>;
type Keyed = TestParty & { apiKey: string };

const VALIDATION = '/problems/input-validation-problems';
const FORBIDDEN = '/problems/access-forbidden';
/** The ledger answers after this long, so that an approved operation stays approved a moment before the executor settles it. */
const LEDGER_LATENCY_MS = '1000';
const FEE_SCHEDULE = JSON.stringify({
  'pay-merchant': { flat: '0.50' },
  'cash-out': { flat: '1.00' },
  'pay-individual': { flat: '0.25' },
});

let phoneSeq = 0;
/** A fresh valid Nigerian mobile number in E.164 (+234 812 31x xxxx). */
const newPhone = () => `+2348123${String(100_000 + phoneSeq++)}`;
/** The same number with spaces: +234 812 310 0001. */
const spaced = (e164: string) => `${e164.slice(0, 4)} ${e164.slice(4, 7)} ${e164.slice(7, 10)} ${e164.slice(10)}`;

let sys: TestSystem;
let store: EventStore;

beforeAll(async () => {
  sys = await startTestSystem({ FEE_SCHEDULE, LEDGER_LATENCY_MS });
  store = sys.system.stores.eventStore;
});
afterAll(async () => sys.close());

const get = (path: string, apiKey?: string): Promise<Response> =>
  call(sys.baseUrl, 'GET', path, apiKey === undefined ? {} : { apiKey });
const balancePath = (party: TestParty) => `/api/v1/${party.ref.type}s/${party.ref.id}/balance`;
const operationsPath = (party: TestParty) => `/api/v1/${party.ref.type}s/${party.ref.id}/operations`;
const paymentsPath = (party: TestParty) => `/api/v1/merchants/${party.ref.id}/payments`;
/** A balance body with nothing held: the contract's `balance` and the extensions `available` (= balance) and `held` (0.00). */
const unheld = (balance: string) => ({ balance, available: balance, held: '0.00' });

async function keyed(type: 'distributor' | 'merchant', balance?: string, permissions?: string): Promise<Keyed> {
  const party = await sys.party(type);
  if (balance) await sys.credit(party.wallet, balance);
  const { apiKey } = await party.key(permissions ? { permissions } : {});
  return { ...party, apiKey };
}

async function create(party: Keyed, body: Record<string, unknown>): Promise<string> {
  const r = await call(sys.baseUrl, 'POST', operationsPath(party), { apiKey: party.apiKey, body });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.operationID as string;
}

async function eventData<T = Record<string, any>>(operationID: string, type: string): Promise<T> {
  const events = await store.readStream(streams.operation(operationID));
  const found = events.find((e) => e.type === type);
  if (!found) throw new Error(`${operationID} has no ${type}`);
  return found.data as T;
}
const requestedOf = (operationID: string) => eventData<OperationRequested['data']>(operationID, 'OperationRequested');

async function decide(
  party: TestParty,
  operationID: string,
  decision: { type: 'approve' } | { type: 'reject'; reason: string },
) {
  const checker = await findUserByEmail(sys.backOffice, party.checkerEmail);
  await decideOperation(
    { store, clock: () => new Date(), assetScale: sys.config.ASSET_SCALE },
    actingUser(checker),
    operationID,
    decision,
    userContext(checker, randomUUID()),
  );
}

/** Polls a GET until it answers 200 with a body that `accept`s; returns that body. */
async function until(path: string, apiKey: string, accept: (body: any) => boolean, timeoutMs = 5000): Promise<any> {
  let last: Response | undefined;
  try {
    await waitFor(async () => {
      last = await get(path, apiKey);
      return last.status === 200 && accept(last.body);
    }, timeoutMs);
  } catch {
    throw new Error(
      `GET ${path} never gave the expected body; last ${last?.status}: ${JSON.stringify(last?.body).slice(0, 1000)}`,
    );
  }
  return last!.body;
}
/** Polls a list until the item with this operationID equals `expected`; returns the whole list. */
const untilListed = (path: string, apiKey: string, expected: Record<string, unknown>) =>
  until(path, apiKey, (items: any[]) =>
    items.some((item) => item.operationID === expected.operationID && isDeepStrictEqual(item, expected)),
  ).then((items: any[]) => {
    expect(items.find((item) => item.operationID === expected.operationID)).toEqual(expected);
    return items;
  });

/** E-money issued to a distributor's float through the treasury channel, carried out by the real executor on the ledger. */
async function issue(distributor: TestParty, amount: string): Promise<void> {
  const deps = { store, lookup: new PartyLookup(store), clock: () => new Date(), assetScale: sys.config.ASSET_SCALE };
  const { operationID } = await issueFloat(
    deps,
    { to: distributor.ref, amount },
    { actor: 'operator:test', correlationId: randomUUID() },
  );
  expect((await settled(operationID)).type).toBe('OperationCompleted');
}

/** Waits for the executor to settle an operation; returns its OperationCompleted or OperationFailed event. */
async function settled(operationID: string): Promise<{ type: string; data: Record<string, any> }> {
  let last: { type: string; data: any } | undefined;
  await waitFor(async () => {
    last = (await store.readStream(streams.operation(operationID))).at(-1);
    return last?.type === 'OperationCompleted' || last?.type === 'OperationFailed';
  }, 10_000);
  return last!;
}

/** The lists' order: createdAt descending, then the operation id descending. */
const newestCreationFirst = (a: Record<string, unknown>, b: Record<string, unknown>) => {
  const [x, y] = [String(a.createdAt), String(b.createdAt)];
  if (x !== y) return x < y ? 1 : -1;
  return String(a.operationID) < String(b.operationID) ? 1 : -1;
};

/** Every projection has applied every event of interest up to the head (as /ready reports it). */
async function caughtUp(): Promise<void> {
  await waitFor(async () => {
    const r = await get('/ready');
    return r.status === 200 && (r.body.projections as Array<{ lagEvents: number }>).every((p) => p.lagEvents === 0);
  }, 10_000);
}

function expectProblem(r: Response, status: number, type: string): void {
  expect(r.status, JSON.stringify(r.body)).toBe(status);
  expect(r.headers.get('content-type') ?? '').toMatch(/^application\/problem\+json\b/);
  expect(r.body).toMatchObject({ type, status });
}

function expectValidation(r: Response, fields: string[]): void {
  expectProblem(r, 400, VALIDATION);
  expect(r.body.title).toBe('There are some validation errors');
  for (const item of r.body.errors)
    expect(item).toEqual({
      type: `${VALIDATION}/invalid-field`,
      field: expect.any(String),
      detail: expect.any(String),
    });
  expect((r.body.errors as Array<{ field: string }>).map((e) => e.field).sort()).toEqual([...fields].sort());
}

// ---------------------------------------------------------------------------------------------------------
describe('GET .../balance', () => {
  it('given a distributor and a merchant credited 5000, when each reads its balance, then it is {"balance":"5000.00"} at the asset scale, with the extensions available and held', async () => {
    const distributor = await keyed('distributor', '5000');
    const merchant = await keyed('merchant', '5000');
    for (const party of [distributor, merchant]) {
      const body = await until(balancePath(party), party.apiKey, (b) => b.balance !== '0.00');
      expect(body).toEqual(unheld('5000.00'));
      expect(Object.keys(body)).toEqual(['balance', 'available', 'held']);
    }
  });

  it('given a distributor and a merchant nothing has moved for, when they read their balance, then it is "0.00"', async () => {
    for (const type of ['distributor', 'merchant'] as const) {
      const party = await keyed(type);
      await caughtUp();
      const r = await get(balancePath(party), party.apiKey);
      expect(r.status).toBe(200);
      expect(r.body).toEqual(unheld('0.00'));
    }
  });

  it('when a cash-in is created, then no balance moves but the distributor holds it; when it completes, then the distributor is debited and the merchant credited', async () => {
    const distributor = await keyed('distributor', '5000');
    const merchant = await keyed('merchant', '250.50');
    await until(balancePath(distributor), distributor.apiKey, (b) => b.balance === '5000.00');
    await until(balancePath(merchant), merchant.apiKey, (b) => b.balance === '250.50');

    const id = await create(distributor, {
      operationType: 'cash-in',
      amount: '1200.25',
      merchantToShortCode: merchant.shortCode,
    });
    await until(operationsPath(distributor), distributor.apiKey, (items: any[]) =>
      items.some((i) => i.operationID === id),
    );
    await caughtUp();
    expect((await get(balancePath(distributor), distributor.apiKey)).body).toEqual({
      balance: '5000.00',
      available: '3799.75',
      held: '1200.25',
    });
    expect((await get(balancePath(merchant), merchant.apiKey)).body).toEqual(unheld('250.50'));

    await completeOperation(store, id);
    expect(await until(balancePath(distributor), distributor.apiKey, (b) => b.balance !== '5000.00')).toEqual(
      unheld('3799.75'),
    );
    expect(await until(balancePath(merchant), merchant.apiKey, (b) => b.balance !== '250.50')).toEqual(
      unheld('1450.75'),
    );
  });

  it('when a pay-merchant with a fee completes, then the payer pays amount and fee and the payee receives the amount', async () => {
    const payer = await keyed('merchant', '1000');
    const payee = await keyed('merchant');
    const id = await create(payer, {
      operationType: 'pay-merchant',
      amount: '100',
      merchantToShortCode: payee.shortCode,
    });
    await completeOperation(store, id);
    expect(
      await until(balancePath(payer), payer.apiKey, (b) => b.balance !== '0.00' && b.balance !== '1000.00'),
    ).toEqual(unheld('899.50'));
    expect(await until(balancePath(payee), payee.apiKey, (b) => b.balance !== '0.00')).toEqual(unheld('100.00'));
  });

  it('when a failed operation released its hold, then the balance is unchanged and nothing is held', async () => {
    const distributor = await keyed('distributor', '300');
    const phone = await sys.individual(newPhone());
    const id = await create(distributor, { operationType: 'cash-in', amount: '200', phoneTo: phone });
    await failOperation(store, id, 'ledger timeout');
    await until(operationsPath(distributor), distributor.apiKey, (items: any[]) => items[0]?.status === 'failed');
    await caughtUp();
    expect((await get(balancePath(distributor), distributor.apiKey)).body).toEqual(unheld('300.00'));
  });

  it('when the balance is read with a query parameter, then it is refused with 400 naming it', async () => {
    const merchant = await keyed('merchant');
    expectValidation(await get(`${balancePath(merchant)}?limit=1`, merchant.apiKey), ['limit']);
  });

  it('when pending operations hold most of the balance, then available explains the insufficient-balance refusal, whose detail names it; a rejection gives it back', async () => {
    const distributor = await keyed('distributor', '235');
    const merchant = await keyed('merchant', '40');
    const phone = await sys.individual(newPhone());
    const first = await create(distributor, { operationType: 'cash-in', amount: '200', phoneTo: phone });
    await create(distributor, { operationType: 'cash-in', amount: '25', merchantToShortCode: merchant.shortCode });
    const read = await until(balancePath(distributor), distributor.apiKey, (b) => b.held === '225.00');
    expect(read).toEqual({ balance: '235.00', available: '10.00', held: '225.00' });

    const refused = await call(sys.baseUrl, 'POST', operationsPath(distributor), {
      apiKey: distributor.apiKey,
      body: { operationType: 'cash-in', amount: '15', phoneTo: phone },
    });
    expectProblem(refused, 403, '/problems/insufficient-balance');
    expect(refused.body.detail).toBe(
      `the payer’s available balance of ${read.available} does not cover the amount and its fee (15.00)`,
    );

    // A merchant's hold includes the fee (pay-individual: 0.25).
    await create(merchant, { operationType: 'pay-individual', amount: '10', phoneTo: phone });
    expect(await until(balancePath(merchant), merchant.apiKey, (b) => b.held !== '0.00')).toEqual({
      balance: '40.00',
      available: '29.75',
      held: '10.25',
    });

    await decide(distributor, first, { type: 'reject', reason: 'not today' });
    expect(await until(balancePath(distributor), distributor.apiKey, (b) => b.held !== '225.00')).toEqual({
      balance: '235.00',
      available: '210.00',
      held: '25.00',
    });
  });
});

// ---------------------------------------------------------------------------------------------------------
describe('authentication and permissions', () => {
  let distributor: TestParty;
  let merchant: TestParty;
  let other: { distributor: TestParty; merchant: TestParty };
  const fivePaths = () => ({
    balance: [balancePath(distributor), balancePath(merchant)],
    lists: [operationsPath(distributor), operationsPath(merchant), paymentsPath(merchant)],
  });
  const keyFor = async (party: TestParty, permissions: string) => (await party.key({ permissions })).apiKey;
  const keyOf = (path: string, keys: { distributor: string; merchant: string }) =>
    path.includes('/distributors/') ? keys.distributor : keys.merchant;

  beforeAll(async () => {
    distributor = await sys.party('distributor');
    merchant = await sys.party('merchant');
    other = { distributor: await sys.party('distributor'), merchant: await sys.party('merchant') };
  });

  it('when a key with only Read Balance reads, then the balance is served and every list is refused with 403 access-forbidden', async () => {
    const keys = {
      distributor: await keyFor(distributor, 'read-balance'),
      merchant: await keyFor(merchant, 'read-balance'),
    };
    for (const path of fivePaths().balance) expect((await get(path, keyOf(path, keys))).status).toBe(200);
    for (const path of fivePaths().lists) expectProblem(await get(path, keyOf(path, keys)), 403, FORBIDDEN);
  });

  it('when a key with only Read Transactions reads, then the lists are served and the balance is refused with 403 access-forbidden', async () => {
    const keys = {
      distributor: await keyFor(distributor, 'read-transactions'),
      merchant: await keyFor(merchant, 'read-transactions'),
    };
    for (const path of fivePaths().lists) {
      const r = await get(path, keyOf(path, keys));
      expect(r.status).toBe(200);
      expect(r.body).toEqual([]);
    }
    for (const path of fivePaths().balance) {
      const r = await get(path, keyOf(path, keys));
      expectProblem(r, 403, FORBIDDEN);
      expect(r.body.title).toBe('Access Forbidden');
    }
  });

  it('when a key with only Perform Operations reads any of the five endpoints, then it is refused with 403 access-forbidden', async () => {
    const keys = {
      distributor: await keyFor(distributor, 'perform-operations'),
      merchant: await keyFor(merchant, 'perform-operations'),
    };
    const { balance, lists } = fivePaths();
    for (const path of [...balance, ...lists]) expectProblem(await get(path, keyOf(path, keys)), 403, FORBIDDEN);
  });

  it("when the path names another party's ID, then every endpoint is refused with 403 access-forbidden", async () => {
    const all = 'read-balance,read-transactions';
    const keys = { distributor: await keyFor(distributor, all), merchant: await keyFor(merchant, all) };
    const paths = [
      [balancePath(other.distributor), keys.distributor],
      [operationsPath(other.distributor), keys.distributor],
      [balancePath(other.merchant), keys.merchant],
      [operationsPath(other.merchant), keys.merchant],
      [paymentsPath(other.merchant), keys.merchant],
      // the right ID under the other party type
      [`/api/v1/merchants/${distributor.ref.id}/balance`, keys.distributor],
      [`/api/v1/distributors/${merchant.ref.id}/operations`, keys.merchant],
    ] as const;
    for (const [path, key] of paths) expectProblem(await get(path, key), 403, FORBIDDEN);
  });

  it('when a cache buster (a parameter starting with _) is sent to any of the five endpoints, then it is ignored; any other unknown parameter is refused with 400', async () => {
    const all = 'read-balance,read-transactions';
    const keys = { distributor: await keyFor(distributor, all), merchant: await keyFor(merchant, all) };
    const { balance, lists } = fivePaths();
    for (const path of [...balance, ...lists]) {
      const key = keyOf(path, keys);
      const plain = await get(path, key);
      expect(plain.status, path).toBe(200);
      for (const query of ['_=1732312345678', '_=1&_=2', '_ts=x&__cb=']) {
        const r = await get(`${path}?${query}`, key);
        expect(r.status, `${path}?${query}: ${JSON.stringify(r.body)}`).toBe(200);
        expect(r.body).toEqual(plain.body);
      }
      expectValidation(await get(`${path}?cb=1&_=1`, key), ['cb']);
    }
    for (const path of lists) {
      const r = await get(`${path}?limit=1&_=1732312345678`, keyOf(path, keys));
      expect(r.status).toBe(200);
      expectValidation(await get(`${path}?limit=0&_=1`, keyOf(path, keys)), ['limit']);
    }
  });

  it('when there is no key, a wrong key or no Bearer prefix, then every endpoint answers 401', async () => {
    const key = await keyFor(merchant, 'read-balance,read-transactions');
    const wrong = `${key.slice(0, -1)}${key.endsWith('A') ? 'B' : 'A'}`;
    for (const path of [
      balancePath(merchant),
      operationsPath(merchant),
      paymentsPath(merchant),
      balancePath(distributor),
      operationsPath(distributor),
    ]) {
      expect((await get(path)).status).toBe(401);
      expect((await get(path, wrong)).status).toBe(401);
      expect((await call(sys.baseUrl, 'GET', path, { headers: { authorization: key } })).status).toBe(401);
    }
  });
});

// ---------------------------------------------------------------------------------------------------------
describe('GET /api/v1/distributors/{distributorID}/operations', () => {
  let distributor: Keyed;
  let merchant: TestParty;
  let phone: string;
  const expected: Record<string, Record<string, unknown>> = {};
  const ids: Record<'toPhone' | 'toMerchant' | 'fulfillment' | 'extra', string> = {
    toPhone: '',
    toMerchant: '',
    fulfillment: '',
    extra: '',
  };
  const listed = (id: string) => untilListed(operationsPath(distributor), distributor.apiKey, expected[id]!);

  beforeAll(async () => {
    distributor = await keyed('distributor');
    await issue(distributor, '100000');
    merchant = await sys.party('merchant', { name: 'Ikeja Groceries' });
    phone = await sys.individual(newPhone(), 'Ada Obi');
    await sys.credit({ kind: 'individual', id: phone }, '1000');
  });

  it('when a cash-in to a phone, a cash-in to a merchant and a cash-out-fulfillment are created, then each is listed pending right after as the contract object', async () => {
    ids.toPhone = await create(distributor, {
      operationType: 'cash-in',
      amount: '150',
      phoneTo: spaced(phone),
      memo: 'till 4',
    });
    ids.toMerchant = await create(distributor, {
      operationType: 'cash-in',
      amount: '75.5',
      merchantToShortCode: merchant.shortCode,
    });
    ids.fulfillment = await create(distributor, {
      operationType: 'cash-out-fulfillment',
      amount: '20',
      phoneFrom: phone,
      cashOutFulfillmentType: 'cash',
      cashOutFulfillmentID: 'rcpt-42',
    });
    ids.extra = await create(distributor, { operationType: 'cash-in', amount: '1', phoneTo: phone });
    const pending = {
      walletOperationID: '',
      sequenceNumber: null,
      blockchainID: '',
      lastError: null,
      rejectionReason: null,
      status: 'pending',
    };
    const common = async (id: string) => {
      const { createdAt } = await requestedOf(id);
      return { operationID: id, distributorID: distributor.ref.id, createdAt, updatedAt: createdAt, ...pending };
    };
    expected[ids.toPhone] = {
      ...(await common(ids.toPhone)),
      operationType: 'cash-in',
      amount: '150.00',
      phoneTo: phone,
      memo: 'till 4',
    };
    expected[ids.toMerchant] = {
      ...(await common(ids.toMerchant)),
      operationType: 'cash-in',
      amount: '75.50',
      merchantTo: merchant.ref.id,
      merchantName: 'Ikeja Groceries',
      merchantShortCode: Number(merchant.shortCode),
    };
    expected[ids.fulfillment] = {
      ...(await common(ids.fulfillment)),
      operationType: 'cash-out-fulfillment',
      amount: '20.00',
      phoneFrom: phone,
      cashOutFulfillmentType: 'cash',
      cashOutFulfillmentID: 'rcpt-42',
    };
    expected[ids.extra] = { ...(await common(ids.extra)), operationType: 'cash-in', amount: '1.00', phoneTo: phone };

    const items = await until(operationsPath(distributor), distributor.apiKey, (list: any[]) => list.length === 4);
    expect(items).toEqual(
      Object.values(ids)
        .map((id) => expected[id]!)
        .sort(newestCreationFirst),
    );
  });

  it("when the checker approves one and rejects another, then they are listed approved, and rejected with the decision time and the checker's rejectionReason", async () => {
    await decide(distributor, ids.toPhone, { type: 'approve' });
    await decide(distributor, ids.extra, { type: 'reject', reason: 'duplicate' });
    const { approvedAt } = await eventData(ids.toPhone, 'OperationApproved');
    const { rejectedAt } = await eventData(ids.extra, 'OperationRejected');
    expected[ids.toPhone] = { ...expected[ids.toPhone], status: 'approved', updatedAt: approvedAt };
    expected[ids.extra] = {
      ...expected[ids.extra],
      status: 'rejected',
      rejectionReason: 'duplicate',
      updatedAt: rejectedAt,
    };
    // The executor takes LEDGER_LATENCY_MS to carry the approved one out: it is listed approved meanwhile.
    await listed(ids.toPhone);
    await listed(ids.extra);
  });

  it("when the executor carries out the approved one, then it is listed completed with the ledger's blockchainID, its wo_ walletOperationID and sequenceNumber", async () => {
    const done = await settled(ids.toPhone);
    expect(done.type).toBe('OperationCompleted');
    const tx = await sys.system.ledger.findByOperationID(ids.toPhone);
    expect(tx).not.toBeNull();
    expect(done.data).toMatchObject({
      blockchainID: tx!.blockchainID,
      sequenceNumber: tx!.sequenceNumber,
      walletOperationID: expect.stringMatching(/^wo_/),
    });
    expected[ids.toPhone] = {
      ...expected[ids.toPhone],
      status: 'completed',
      blockchainID: tx!.blockchainID,
      walletOperationID: done.data.walletOperationID,
      sequenceNumber: tx!.sequenceNumber,
      updatedAt: done.data.completedAt,
    };
    await listed(ids.toPhone);
  });

  it("when an operation completes through the executor's events, then it is listed completed with blockchainID, walletOperationID and sequenceNumber", async () => {
    const done: Completion = await completeOperation(store, ids.toMerchant);
    expect(done.walletOperationID).toMatch(/^wo_/);
    expected[ids.toMerchant] = {
      ...expected[ids.toMerchant],
      status: 'completed',
      blockchainID: done.blockchainID,
      walletOperationID: done.walletOperationID,
      sequenceNumber: done.sequenceNumber,
      updatedAt: done.completedAt,
    };
    await listed(ids.toMerchant);
  });

  it('when an operation fails, then it is listed failed with its lastError and sequence number', async () => {
    const { failedAt, sequenceNumber } = await failOperation(store, ids.fulfillment, 'ledger refused: account frozen');
    expected[ids.fulfillment] = {
      ...expected[ids.fulfillment],
      status: 'failed',
      lastError: 'ledger refused: account frozen',
      sequenceNumber,
      updatedAt: failedAt,
    };
    const items = await listed(ids.fulfillment);
    expect(items).toEqual(
      Object.values(ids)
        .map((id) => expected[id]!)
        .sort(newestCreationFirst),
    );
  });
});

// ---------------------------------------------------------------------------------------------------------
describe('GET /api/v1/merchants/{merchantID}/operations', () => {
  let merchant: Keyed;
  let distributor: Keyed;
  let payee: TestParty;
  let phone: string;
  const expected: Record<string, Record<string, unknown>> = {};
  const listed = (id: string) => untilListed(operationsPath(merchant), merchant.apiKey, expected[id]!);
  const pending = {
    blockchainID: '',
    walletOperationID: '',
    sequenceNumber: null,
    lastError: null,
    rejectionReason: null,
    status: 'pending',
  };
  const own: string[] = [];

  beforeAll(async () => {
    merchant = await keyed('merchant', '10000');
    distributor = await keyed('distributor');
    await issue(distributor, '10000');
    payee = await sys.party('merchant', { name: 'Yaba Books' });
    phone = await sys.individual(newPhone());
  });

  it("when the merchant creates a cash-out, a pay-merchant and a pay-individual, then each is listed pending with its fee and its kind's fields", async () => {
    own.push(
      await create(merchant, {
        operationType: 'cash-out',
        amount: '500',
        distributorToShortCode: distributor.shortCode,
        memo: 'weekly sweep',
      }),
    );
    own.push(
      await create(merchant, { operationType: 'pay-merchant', amount: '40', merchantToShortCode: payee.shortCode }),
    );
    own.push(await create(merchant, { operationType: 'pay-individual', amount: '12.5', phoneTo: phone }));
    const [cashOut, payMerchant, payIndividual] = own as [string, string, string];
    const common = async (id: string) => {
      const { createdAt } = await requestedOf(id);
      return { operationID: id, merchantID: merchant.ref.id, createdAt, updatedAt: createdAt, ...pending };
    };
    expected[cashOut] = {
      ...(await common(cashOut)),
      operationType: 'cash-out',
      amount: '500.00',
      fee: '1.00',
      distributorTo: distributor.ref.id,
      distributorName: distributor.name,
      memo: 'weekly sweep',
    };
    expected[payMerchant] = {
      ...(await common(payMerchant)),
      operationType: 'pay-merchant',
      amount: '40.00',
      fee: '0.50',
      merchantTo: payee.ref.id,
      merchantName: 'Yaba Books',
    };
    expected[payIndividual] = {
      ...(await common(payIndividual)),
      operationType: 'pay-individual',
      amount: '12.50',
      fee: '0.25',
      phoneTo: phone,
    };
    const items = await until(operationsPath(merchant), merchant.apiKey, (list: any[]) => list.length === 3);
    expect(items).toEqual(own.map((id) => expected[id]!).sort(newestCreationFirst));
  });

  it('when its operations are rejected, completed and failed, then the list shows rejected, completed with blockchainID and sequenceNumber, and failed with lastError', async () => {
    const [cashOut, payMerchant, payIndividual] = own as [string, string, string];
    await decide(merchant, cashOut, { type: 'reject', reason: 'wrong distributor' });
    const { rejectedAt } = await eventData(cashOut, 'OperationRejected');
    expected[cashOut] = {
      ...expected[cashOut],
      status: 'rejected',
      rejectionReason: 'wrong distributor',
      updatedAt: rejectedAt,
    };
    const done = await completeOperation(store, payMerchant);
    expected[payMerchant] = {
      ...expected[payMerchant],
      status: 'completed',
      blockchainID: done.blockchainID,
      walletOperationID: done.walletOperationID,
      sequenceNumber: done.sequenceNumber,
      updatedAt: done.completedAt,
    };
    const { failedAt, sequenceNumber } = await failOperation(store, payIndividual, 'recipient wallet closed');
    expected[payIndividual] = {
      ...expected[payIndividual],
      status: 'failed',
      lastError: 'recipient wallet closed',
      sequenceNumber,
      updatedAt: failedAt,
    };
    for (const id of own) await listed(id);
  });

  it('when a distributor cashes in to the merchant, then it is listed at once, pending, at its request, and keeps its place and createdAt through approval and completion, with fee 0.00 and the distributor as source', async () => {
    const id = await create(distributor, {
      operationType: 'cash-in',
      amount: '300',
      merchantToShortCode: merchant.shortCode,
      memo: 'float top-up',
    });
    const { createdAt } = await requestedOf(id);
    expected[id] = {
      operationID: id,
      merchantID: merchant.ref.id,
      operationType: 'cash-in',
      amount: '300.00',
      fee: '0.00',
      distributorTo: distributor.ref.id,
      distributorName: distributor.name,
      memo: 'float top-up',
      ...pending,
      createdAt,
      updatedAt: createdAt,
    };
    const order = () =>
      [id, ...own]
        .map((x) => expected[x]!)
        .sort(newestCreationFirst)
        .map((i) => i.operationID);
    expect((await listed(id)).map((i: any) => i.operationID)).toEqual(order());
    await decide(distributor, id, { type: 'approve' });
    // Approved (the executor waits on the ledger a moment): still listed, in the same place, with the same createdAt.
    const approved = await until(operationsPath(merchant), merchant.apiKey, (items: any[]) =>
      items.some((i) => i.operationID === id && i.status !== 'pending'),
    );
    expect(approved.map((i: any) => i.operationID)).toEqual(order());
    expect(approved.find((i: any) => i.operationID === id).createdAt).toBe(createdAt);

    const done = (await settled(id)).data;
    expected[id] = {
      ...expected[id],
      blockchainID: done.blockchainID,
      walletOperationID: done.walletOperationID,
      sequenceNumber: done.sequenceNumber,
      status: 'completed',
      updatedAt: done.completedAt,
    };
    const items = await listed(id);
    expect(items.map((i: any) => i.operationID)).toEqual(order());
    own.push(id);
  });

  it('when a cash-in to the merchant is rejected or fails, then it stays listed with its status (rejected, or failed with lastError)', async () => {
    const rejected = await create(distributor, {
      operationType: 'cash-in',
      amount: '5',
      merchantToShortCode: merchant.shortCode,
    });
    const failed = await create(distributor, {
      operationType: 'cash-in',
      amount: '6',
      merchantToShortCode: merchant.shortCode,
    });
    await decide(distributor, rejected, { type: 'reject', reason: 'no' });
    await failOperation(store, failed, 'ledger down');
    await until(
      operationsPath(distributor),
      distributor.apiKey,
      (items: any[]) => items.filter((i) => i.status === 'rejected' || i.status === 'failed').length === 2,
    );
    await caughtUp();
    const items = (await get(operationsPath(merchant), merchant.apiKey)).body as any[];
    expect(items).toHaveLength(6);
    expect(items.find((i) => i.operationID === rejected)).toMatchObject({
      operationType: 'cash-in',
      status: 'rejected',
      rejectionReason: 'no',
      blockchainID: '',
    });
    expect(items.find((i) => i.operationID === failed)).toMatchObject({
      operationType: 'cash-in',
      status: 'failed',
      lastError: 'ledger down',
    });
    expect(items.map((i) => i.operationID).slice(0, 2)).toEqual([failed, rejected]);
  });
});

// ---------------------------------------------------------------------------------------------------------
describe('GET /api/v1/merchants/{merchantID}/payments', () => {
  let payee: Keyed;
  let payer: Keyed;
  let distributor: Keyed;
  let phones: [string, string];
  const payments: Record<string, Record<string, unknown>> = {};
  const list = (query = '') => get(`${paymentsPath(payee)}${query}`, payee.apiKey);
  const search = async (text: string) => {
    const r = await list(`?search=${encodeURIComponent(text)}`);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return (r.body as Array<{ operationID: string }>).map((p) => p.operationID).sort();
  };
  const woOf = (...memos: Array<string | null>) =>
    Object.values(payments)
      .filter((p) => memos.includes(p.memo as string | null))
      .map((p) => p.operationID as string)
      .sort();
  const byPhone = (phone: string) =>
    Object.values(payments)
      .filter((p) => p.from === phone)
      .map((p) => p.operationID as string)
      .sort();

  beforeAll(async () => {
    payee = await keyed('merchant', undefined, 'read-transactions');
    payer = await keyed('merchant', '10000');
    distributor = await keyed('distributor', '10000');
    phones = [await sys.individual(newPhone()), await sys.individual(newPhone())];
  });

  it('when another merchant pays it, then nothing is listed until completed, then a payment from that merchant by name with its integer short code under the wo_ id', async () => {
    const id = await create(payer, {
      operationType: 'pay-merchant',
      amount: '42',
      merchantToShortCode: payee.shortCode,
      memo: 'Invoice ABC-42',
    });
    await caughtUp();
    expect((await list()).body).toEqual([]);
    const done = await completeOperation(store, id);
    const payment = {
      operationID: done.walletOperationID,
      type: 'payment',
      amount: '42.00',
      from: payer.name,
      fromType: 'merchant',
      fromShortCode: Number(payer.shortCode),
      memo: 'Invoice ABC-42',
      blockchainID: done.blockchainID,
      createdAt: (await requestedOf(id)).createdAt,
      completedAt: done.completedAt,
      sourceOperationID: id,
    };
    payments[id] = payment;
    expect(await until(paymentsPath(payee), payee.apiKey, (items: any[]) => items.length === 1)).toEqual([payment]);
    expect(Number.isInteger(payment.fromShortCode)).toBe(true);
    expect(payment.operationID).toMatch(/^wo_[0-9a-f]+$/);
  });

  it('when a distributor cash-in to it completes, then it is listed as a cash-in from the distributor by name', async () => {
    const id = await create(distributor, {
      operationType: 'cash-in',
      amount: '250',
      merchantToShortCode: payee.shortCode,
    });
    const done = await completeOperation(store, id);
    payments[id] = {
      operationID: done.walletOperationID,
      type: 'cash-in',
      amount: '250.00',
      from: distributor.name,
      fromType: 'distributor',
      memo: null,
      blockchainID: done.blockchainID,
      createdAt: (await requestedOf(id)).createdAt,
      completedAt: done.completedAt,
      sourceOperationID: id,
    };
    await untilListed(paymentsPath(payee), payee.apiKey, payments[id]!);
  });

  it('when individuals pay it from the wallet app and the payments complete, then each is listed as a payment from the phone', async () => {
    for (const [phone, memo] of [
      [phones[0], null],
      [phones[1], 'Rent for June'],
    ] as const) {
      const id = await requestOperation(
        store,
        individualPayment({
          phone,
          merchant: { id: payee.ref.id, name: payee.name, shortCode: payee.shortCode },
          amount: '9.99',
          memo,
        }),
      );
      await caughtUp();
      expect((await list()).body).toHaveLength(Object.keys(payments).length); // not listed while pending
      const done = await completeOperation(store, id);
      payments[id] = {
        operationID: done.walletOperationID,
        type: 'payment',
        amount: '9.99',
        from: phone,
        fromType: 'individual',
        memo,
        blockchainID: done.blockchainID,
        createdAt: (await requestedOf(id)).createdAt,
        completedAt: done.completedAt,
        sourceOperationID: id,
      };
      await untilListed(paymentsPath(payee), payee.apiKey, payments[id]!);
    }
  });

  it('when memos carry %, _ and regex characters and some payments are still pending or failed, then the list holds exactly the completed payments, newest completion first', async () => {
    for (const memo of ['100% off_sale (x+y).*[1]', 'percent offXsale xxy ab1']) {
      const id = await create(payer, {
        operationType: 'pay-merchant',
        amount: '1',
        merchantToShortCode: payee.shortCode,
        memo,
      });
      const done = await completeOperation(store, id);
      payments[id] = {
        operationID: done.walletOperationID,
        type: 'payment',
        amount: '1.00',
        from: payer.name,
        fromType: 'merchant',
        fromShortCode: Number(payer.shortCode),
        memo,
        blockchainID: done.blockchainID,
        createdAt: (await requestedOf(id)).createdAt,
        completedAt: done.completedAt,
        sourceOperationID: id,
      };
    }
    await create(payer, {
      operationType: 'pay-merchant',
      amount: '2',
      merchantToShortCode: payee.shortCode,
      memo: 'still pending',
    });
    await failOperation(
      store,
      await create(payer, {
        operationType: 'pay-merchant',
        amount: '3',
        merchantToShortCode: payee.shortCode,
        memo: 'failed one',
      }),
      'no',
    );
    const all = Object.values(payments);
    const items = await until(paymentsPath(payee), payee.apiKey, (list: any[]) => list.length >= all.length);
    await caughtUp();
    const final = (await list()).body;
    expect(final).toEqual(items);
    const newestFirst = [...all].sort((a, b) => {
      const [x, y] = [a.completedAt as string, b.completedAt as string];
      return x === y ? 0 : x < y ? 1 : -1;
    });
    expect(final).toHaveLength(all.length);
    expect(final.map((p: any) => p.completedAt)).toEqual(newestFirst.map((p) => p.completedAt));
    const byID = (a: any, b: any) => (a.operationID < b.operationID ? -1 : 1);
    expect([...final].sort(byID)).toEqual([...all].sort(byID));
  });

  it("when searching by the sender phone with or without spaces and leading +, then only that individual's payments match", async () => {
    const [first, second] = phones;
    expect(byPhone(first)).toHaveLength(1);
    for (const text of [
      first,
      first.slice(1),
      spaced(first),
      spaced(first).slice(1),
      ` ${spaced(first)} `,
      first.slice(-7),
      spaced(first).slice(-8),
    ]) {
      expect(await search(text), text).toEqual(byPhone(first));
    }
    expect(await search(spaced(second))).toEqual(byPhone(second));
  });

  it('when searching by memo in another case, then it matches case-insensitively', async () => {
    expect(await search('abc-42')).toEqual(woOf('Invoice ABC-42'));
    expect(await search('INVOICE abc')).toEqual(woOf('Invoice ABC-42'));
    expect(await search('rent FOR')).toEqual(woOf('Rent for June'));
  });

  it('when the search text holds %, _ or regex characters, then it matches them literally', async () => {
    const special = woOf('100% off_sale (x+y).*[1]');
    for (const text of ['%', '_', 'off_sale', '.*', '(x+y)', '[1]', 'x+y', '% off'])
      expect(await search(text), text).toEqual(special);
    expect(await search('^percent')).toEqual([]);
    expect(await search('still pending')).toEqual([]);
    expect(await search('failed one')).toEqual([]);
  });

  it('when the search is empty or blank, then every payment is listed; when it is longer than 100 characters or repeated, then 400 naming search', async () => {
    const all = (await list()).body;
    expect((await list('?search=')).body).toEqual(all);
    expect((await list('?search=%20%20')).body).toEqual(all);
    expectValidation(await list(`?search=${'a'.repeat(101)}`), ['search']);
    expectValidation(await list('?search=a&search=b'), ['search']);
  });

  it('when paged with limit 2, then the pages are the list cut in order', async () => {
    const all = (await list()).body as unknown[];
    const pages = [];
    for (let offset = 0; offset < all.length + 2; offset += 2)
      pages.push(...(await list(`?limit=2&offset=${offset}`)).body);
    expect(pages).toEqual(all);
  });
});

// ---------------------------------------------------------------------------------------------------------
describe('one movement, one createdAt; a poller of the first page never misses an item (issue 18)', () => {
  let merchant: Keyed;
  let payer: Keyed;
  let distributor: Keyed;
  const firstPage = (path: string, apiKey: string) =>
    get(`${path}?limit=2`, apiKey).then((r) => {
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      return (r.body as Array<Record<string, any>>).map((i) => i.operationID as string);
    });

  beforeAll(async () => {
    merchant = await keyed('merchant', '10000');
    payer = await keyed('merchant', '10000');
    distributor = await keyed('distributor', '10000');
  });

  it("when a distributor's cash-in to a merchant completes, then /operations, /payments and the distributor's list carry the same createdAt (the request time), and /payments its completion as completedAt", async () => {
    const id = await create(distributor, {
      operationType: 'cash-in',
      amount: '70',
      merchantToShortCode: merchant.shortCode,
    });
    const { createdAt } = await requestedOf(id);
    await new Promise((resolve) => setTimeout(resolve, 20)); // the completion is visibly later than the request
    const done = await completeOperation(store, id);
    expect(done.completedAt > createdAt).toBe(true);
    const operation = (
      await until(operationsPath(merchant), merchant.apiKey, (items: any[]) =>
        items.some((i) => i.operationID === id && i.status === 'completed'),
      )
    ).find((i: any) => i.operationID === id);
    const payment = (
      await until(paymentsPath(merchant), merchant.apiKey, (items: any[]) =>
        items.some((i) => i.operationID === done.walletOperationID),
      )
    ).find((i: any) => i.operationID === done.walletOperationID);
    const sent = (
      await until(operationsPath(distributor), distributor.apiKey, (items: any[]) =>
        items.some((i) => i.operationID === id && i.status === 'completed'),
      )
    ).find((i: any) => i.operationID === id);
    expect(operation.createdAt).toBe(createdAt);
    expect(payment.createdAt).toBe(createdAt);
    expect(sent.createdAt).toBe(createdAt);
    expect(payment.completedAt).toBe(done.completedAt);
    expect(operation).not.toHaveProperty('completedAt'); // the operation lists keep the contract's fields; updatedAt tells the completion
    expect(operation.updatedAt).toBe(done.completedAt);
  });

  it("given a poller of page 1 of /operations (limit 2), when a cash-in requested before the merchant's own operations completes after them, then the poller has seen every item", async () => {
    const path = operationsPath(merchant);
    const seen = new Set<string>();
    const poll = async () => {
      await caughtUp();
      for (const id of await firstPage(path, merchant.apiKey)) seen.add(id);
    };
    await poll();
    const cashIn = await create(distributor, {
      operationType: 'cash-in',
      amount: '11',
      merchantToShortCode: merchant.shortCode,
    });
    await poll();
    expect(seen).toContain(cashIn); // listed from its request, pending
    const a = await create(merchant, {
      operationType: 'pay-merchant',
      amount: '1',
      merchantToShortCode: payer.shortCode,
    });
    await poll();
    const b = await create(merchant, {
      operationType: 'pay-merchant',
      amount: '2',
      merchantToShortCode: payer.shortCode,
    });
    await poll();
    expect(await firstPage(path, merchant.apiKey)).toEqual([b, a]);
    await completeOperation(store, cashIn);
    await poll();
    const later = await create(distributor, {
      operationType: 'cash-in',
      amount: '12',
      merchantToShortCode: merchant.shortCode,
    });
    await poll();
    await completeOperation(store, later);
    await poll();
    const all = (await get(path, merchant.apiKey)).body.map((i: any) => i.operationID);
    expect([...seen].sort()).toEqual([...all].sort());
  });

  it('given a poller of page 1 of /payments (limit 2), when a payment requested before two others completes after them, then it lands on top and the poller has seen every payment', async () => {
    const path = paymentsPath(merchant);
    const before = new Set<string>((await get(path, merchant.apiKey)).body.map((i: any) => i.operationID));
    const seen = new Set<string>();
    const poll = async () => {
      await caughtUp();
      for (const id of await firstPage(path, merchant.apiKey)) seen.add(id);
    };
    await poll();
    const early = await create(payer, {
      operationType: 'pay-merchant',
      amount: '5',
      merchantToShortCode: merchant.shortCode,
      memo: 'early',
    });
    await new Promise((resolve) => setTimeout(resolve, 5)); // the others are requested visibly later
    const wo: string[] = [];
    for (const amount of ['6', '7']) {
      const id = await create(payer, {
        operationType: 'pay-merchant',
        amount,
        merchantToShortCode: merchant.shortCode,
      });
      wo.push((await completeOperation(store, id)).walletOperationID);
      await poll();
    }
    expect(await firstPage(path, merchant.apiKey)).toEqual([wo[1], wo[0]]);
    const done = await completeOperation(store, early);
    await poll();
    const page = (await get(`${path}?limit=2`, merchant.apiKey)).body as any[];
    expect(page.map((p) => p.operationID)).toEqual([done.walletOperationID, wo[1]]);
    // Requested first, so an order by createdAt would have put it below the two others.
    expect(page[0].createdAt < page[1].createdAt).toBe(true);
    expect(page[0].completedAt >= page[1].completedAt).toBe(true);
    const all = ((await get(path, merchant.apiKey)).body as any[])
      .map((i) => i.operationID)
      .filter((id: string) => !before.has(id));
    expect(all.filter((id: string) => !seen.has(id))).toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------------------------
describe('pagination of the lists', () => {
  const TOTAL = 2_500;
  let distributor: Keyed;
  let merchant: Keyed;
  /** The seeded operation IDs in the list's order: createdAt desc, then id desc. */
  let order: string[];

  /** 2,500 cash-ins appended straight to the store, five per millisecond so that ties need the id. */
  async function seed(): Promise<void> {
    const base = Date.parse('2025-06-01T00:00:00.000Z');
    const phone = await sys.individual(newPhone());
    const seeded: Array<{ id: string; createdAt: string }> = [];
    for (let start = 0; start < TOTAL; start += 500) {
      const requests: StreamAppend[] = [];
      for (let i = start; i < Math.min(TOTAL, start + 500); i++) {
        const operationID = newOperationID();
        const createdAt = new Date(base + Math.floor(i / 5)).toISOString();
        seeded.push({ id: operationID, createdAt });
        const data: OperationRequested['data'] = {
          operationID,
          party: distributor.ref,
          keyID: null,
          operationType: 'cash-in',
          amount: `${1 + (i % 50)}.00`,
          fee: '0.00',
          payer: distributor.wallet,
          payee: { kind: 'individual', id: phone },
          payerName: distributor.name,
          payerShortCode: distributor.shortCode,
          counterparty: { kind: 'individual', id: phone, name: 'Test Individual' },
          memo: `seed ${i}`,
          cashOutFulfillmentType: null,
          cashOutFulfillmentID: null,
          volumeDay: null,
          createdAt,
        };
        requests.push({
          stream: streams.operation(operationID),
          events: [{ type: 'OperationRequested', data }],
          expectedRevision: 'no_stream',
        });
      }
      await store.appendMulti(requests);
    }
    order = seeded
      .sort((a, b) => (a.createdAt === b.createdAt ? (a.id < b.id ? 1 : -1) : a.createdAt < b.createdAt ? 1 : -1))
      .map((s) => s.id);
  }

  const path = (query: string) => `${operationsPath(distributor)}${query}`;
  const lists = () =>
    [
      [operationsPath(distributor), distributor.apiKey],
      [operationsPath(merchant), merchant.apiKey],
      [paymentsPath(merchant), merchant.apiKey],
    ] as const;

  beforeAll(async () => {
    distributor = await keyed('distributor');
    merchant = await keyed('merchant');
    await seed();
    await until(path(`?limit=1&offset=${TOTAL - 1}`), distributor.apiKey, (items: any[]) => items.length === 1, 20_000);
  });

  it('when no limit is given, then the first 100 are returned, newest creation first with the id breaking ties', async () => {
    const r = await get(path(''), distributor.apiKey);
    expect(r.status).toBe(200);
    expect(r.body.map((i: any) => i.operationID)).toEqual(order.slice(0, 100));
    for (const [a, b] of r.body.slice(1).map((item: any, i: number) => [r.body[i], item])) {
      expect(a.createdAt > b.createdAt || (a.createdAt === b.createdAt && a.operationID > b.operationID)).toBe(true);
    }
  });

  it('when limit is 1000, then 1000 items are returned', async () => {
    const r = await get(path('?limit=1000&offset=1000'), distributor.apiKey);
    expect(r.status).toBe(200);
    expect(r.body.map((i: any) => i.operationID)).toEqual(order.slice(1000, 2000));
  });

  it.each([
    ['limit=1001', 'limit'],
    ['limit=0', 'limit'],
    ['limit=-1', 'limit'],
    ['limit=1.5', 'limit'],
    ['limit=abc', 'limit'],
    ['limit=', 'limit'],
    ['limit=1e2', 'limit'],
    ['offset=-1', 'offset'],
    ['offset=abc', 'offset'],
    ['offset=', 'offset'],
    ['limit=1&limit=2', 'limit'],
    ['offset=0&offset=1', 'offset'],
    ['page=2', 'page'],
    ['sort=createdAt', 'sort'],
  ])('when a list is asked for ?%s, then it answers 400 input-validation-problems naming %s', async (query, field) => {
    for (const [listPath, key] of lists()) expectValidation(await get(`${listPath}?${query}`, key), [field]);
  });

  it('when the operations lists are given search, then it is an unknown parameter (only payments search)', async () => {
    for (const [listPath, key] of lists().slice(0, 2))
      expectValidation(await get(`${listPath}?search=x`, key), ['search']);
  });

  it('when the offset is at or past the end, then the page is empty', async () => {
    for (const query of [`?offset=${TOTAL}`, `?offset=${TOTAL + 1}&limit=5`, '?offset=10000000']) {
      const r = await get(path(query), distributor.apiKey);
      expect(r.status).toBe(200);
      expect(r.body).toEqual([]);
    }
  });

  it.each([100, 37])(
    'when all 2,500 are walked by offset with limit %i, then each is seen exactly once, in order, and the last page is short',
    async (limit) => {
      const seen: string[] = [];
      let last: number;
      for (let offset = 0; ; offset += limit) {
        const r = await get(path(`?limit=${limit}&offset=${offset}`), distributor.apiKey);
        expect(r.status).toBe(200);
        seen.push(...r.body.map((i: any) => i.operationID));
        last = r.body.length;
        if (last < limit) break;
      }
      expect(last).toBe(TOTAL % limit);
      expect(seen).toHaveLength(TOTAL);
      expect(new Set(seen).size).toBe(TOTAL);
      expect(seen).toEqual(order);
    },
  );
});

// ---------------------------------------------------------------------------------------------------------
describe('lists of documents stored before they kept their API text (issue 28)', () => {
  /** The answer as the client gets it: the exact bytes and the ETag. */
  const raw = async (path: string, apiKey: string) => {
    const response = await fetch(`${sys.baseUrl}${path}`, { headers: { authorization: `Bearer ${apiKey}` } });
    return { status: response.status, etag: response.headers.get('etag'), text: await response.text() };
  };

  it("given each list's documents stored without apiText, all or every other one, when the lists are read, then they answer the very bytes and ETag they answer with it", async () => {
    const merchant = await keyed('merchant', '10000');
    const distributor = await keyed('distributor', '10000');
    const phone = await sys.individual(newPhone());
    const cashIns = [
      await create(distributor, {
        operationType: 'cash-in',
        amount: '70',
        merchantToShortCode: merchant.shortCode,
        memo: 'Zoë "float" \\ 😀',
      }),
      await create(distributor, { operationType: 'cash-in', amount: '12.5', merchantToShortCode: merchant.shortCode }),
      await create(distributor, { operationType: 'cash-in', amount: '3', phoneTo: phone }),
    ];
    await create(merchant, { operationType: 'pay-individual', amount: '1.25', phoneTo: phone, memo: 'tip' });
    for (const id of cashIns.slice(0, 2)) await completeOperation(store, id);
    await until(paymentsPath(merchant), merchant.apiKey, (items: any[]) => items.length === 2);
    await until(
      operationsPath(merchant),
      merchant.apiKey,
      (items: any[]) => items.length === 3 && items.filter((i) => i.status === 'completed').length === 2,
    );
    await until(
      operationsPath(distributor),
      distributor.apiKey,
      (items: any[]) => items.length === 3 && items.filter((i) => i.status === 'completed').length === 2,
    );

    const lists: Array<{ path: string; apiKey: string; collection: string; where: Record<string, Scalar> }> = [
      {
        path: operationsPath(distributor),
        apiKey: distributor.apiKey,
        collection: 'distributor_operations',
        where: { distributorID: distributor.ref.id },
      },
      {
        path: operationsPath(merchant),
        apiKey: merchant.apiKey,
        collection: 'merchant_operations',
        where: { merchantID: merchant.ref.id },
      },
      {
        path: paymentsPath(merchant),
        apiKey: merchant.apiKey,
        collection: 'merchant_payments',
        where: { merchantID: merchant.ref.id, visible: true },
      },
    ];
    const { readStore } = sys.system.stores;
    for (const { path, apiKey, collection, where } of lists) {
      const withText = await raw(path, apiKey);
      expect(withText.status, path).toBe(200);
      const docs = await readStore.find(collection, { where, sort: [['id', 'asc']] });
      expect(
        docs.every((doc) => typeof doc.apiText === 'string'),
        path,
      ).toBe(true);
      for (const old of [docs.filter((_, i) => i % 2 === 0), docs]) {
        await readStore.commit(old.map(({ apiText: _, ...doc }) => ({ op: 'upsert' as const, collection, doc })));
        const ids = new Set(old.map((doc) => doc.id));
        expect(
          (await readStore.find(collection, { where }))
            .filter((doc) => !('apiText' in doc))
            .map((doc) => doc.id)
            .sort(),
          path,
        ).toEqual([...ids].sort());
        expect(await raw(path, apiKey), `${path}, ${old.length} of ${docs.length} without apiText`).toEqual(withText);
      }
    }
  });

  it('given a list document whose stored text says something else, when the list is read, then it answers the stored text as it is (the read neither parses nor serializes)', async () => {
    const distributor = await keyed('distributor', '10000');
    const id = await create(distributor, {
      operationType: 'cash-in',
      amount: '5',
      phoneTo: await sys.individual(newPhone()),
    });
    const [item] = await until(operationsPath(distributor), distributor.apiKey, (items: any[]) => items.length === 1);
    const { readStore } = sys.system.stores;
    const doc = (await readStore.get('distributor_operations', id))!;
    const stored = JSON.stringify({ ...item, memo: 'from the stored text' });
    await readStore.commit([{ op: 'upsert', collection: 'distributor_operations', doc: { ...doc, apiText: stored } }]);
    expect((await raw(operationsPath(distributor), distributor.apiKey)).text).toBe(`[${stored}]`);
  });
});

// ---------------------------------------------------------------------------------------------------------
describe('/health and /ready', () => {
  it('when probed, then /health answers 200 and /ready 200 listing every projection caught up', async () => {
    const health = await get('/health');
    expect(health.status).toBe(200);
    expect(health.body).toMatchObject({ status: 'ok' });
    await caughtUp();
    const ready = await get('/ready');
    expect(ready.status).toBe(200);
    expect(ready.body).toMatchObject({ status: 'ready', ready: true });
    const projections = ready.body.projections as Array<{
      projection: string;
      position: number | null;
      head: number;
      lagEvents: number;
    }>;
    expect(projections.map((p) => p.projection).sort()).toEqual([
      'balances',
      'console-operations',
      'distributor-operations',
      'merchant-operations',
      'merchant-payments',
      'pending-operations',
      'unsettled-operations',
      'webhook-endpoints',
    ]);
    for (const p of projections) {
      // A projection no event has fed yet has no checkpoint (null); caught up either way.
      expect(p).toEqual({
        projection: p.projection,
        position: p.position === null ? null : expect.any(Number),
        head: expect.any(Number),
        lagEvents: 0,
        lagSeconds: 0,
      });
      if (p.position !== null) expect(p.position).toBeLessThanOrEqual(p.head);
    }
  });
});

import { expect } from 'vitest';
import { call, waitFor, type TestParty, type TestSystem } from '../support/system.ts';
import { approve, issue, waitUntilSettled, type PartsTestSystem } from '../support/executor-system.ts';

/** What the executor's end-to-end files share: parties with API keys, creates and lists over HTTP. */

export const FEE_SCHEDULE = JSON.stringify({
  'pay-merchant': { flat: '1.00', percent: '0' },
  'cash-out': { flat: '0', percent: '1' },
});

let phoneSeq = 0;
export const newPhone = () => `+2348124${String(100_000 + phoneSeq++)}`;

export type Keyed = TestParty & { apiKey: string };

export async function keyed(sys: Pick<TestSystem, 'party'>, type: 'distributor' | 'merchant'): Promise<Keyed> {
  const party = await sys.party(type);
  const { apiKey } = await party.key();
  return { ...party, apiKey };
}

const operationsPath = (party: TestParty) => `/api/v1/${party.ref.type}s/${party.ref.id}/operations`;

export async function create(
  sys: Pick<TestSystem, 'baseUrl'>,
  party: Keyed,
  body: Record<string, unknown>,
): Promise<string> {
  const r = await call(sys.baseUrl, 'POST', operationsPath(party), { apiKey: party.apiKey, body });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.operationID as string;
}

export async function list(
  sys: Pick<TestSystem, 'baseUrl'>,
  party: Keyed,
  what: 'operations' | 'payments',
): Promise<any[]> {
  const r = await call(sys.baseUrl, 'GET', `/api/v1/${party.ref.type}s/${party.ref.id}/${what}?limit=1000`, {
    apiKey: party.apiKey,
  });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body as any[];
}

/** Waits until the party's operations list shows the operation settled (completed or failed), and returns it. */
export async function listedSettled(
  sys: Pick<TestSystem, 'baseUrl'>,
  party: Keyed,
  operationID: string,
  timeoutMs = 20_000,
): Promise<any> {
  let item: any;
  await waitFor(async () => {
    item = (await list(sys, party, 'operations')).find((op) => op.operationID === operationID);
    return item?.status === 'completed' || item?.status === 'failed';
  }, timeoutMs);
  return item;
}

/** A distributor with 1000 issued and a merchant with `merchantFunds` cashed in, all executed by a healthy executor that is then stopped. */
export async function funded(
  sys: PartsTestSystem,
  merchantFunds: string,
): Promise<{ distributor: Keyed; merchant: Keyed }> {
  const distributor = await keyed(sys, 'distributor');
  const merchant = await keyed(sys, 'merchant');
  const healthy = await sys.startExecutor();
  expect((await waitUntilSettled(sys, await issue(sys, distributor.ref, '1000'))).status).toBe('completed');
  const cashIn = await create(sys, distributor, {
    operationType: 'cash-in',
    amount: merchantFunds,
    merchantToShortCode: merchant.shortCode,
  });
  await approve(sys, distributor, cashIn);
  expect((await waitUntilSettled(sys, cashIn)).status).toBe('completed');
  await healthy.stop();
  return { distributor, merchant };
}

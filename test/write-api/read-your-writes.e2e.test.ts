import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ReadStore } from '../../src/ports/read-store.ts';
import { call, startTestSystem, type TestParty, type TestSystem, WITHOUT_EXECUTOR } from '../support/system.ts';

/**
 * Read-your-writes: a create is answered once its operation is in the creating party's operation list of this
 * process, within READ_YOUR_WRITES_TIMEOUT_MS, so a GET sent right after the 200 always shows it (before, the
 * list showed it 3 times in 5). The operation lists' projections commit HOLD_MS late here, as a loaded store
 * does, so that a create answered before its projection committed would be seen missing every time.
 */
const PHONE = '+2348123456780';
const TIMES = 20;
const HOLD_MS = 40;
const LISTS = new Set(['distributor-operations', 'merchant-operations']);

/** The read store, with each commit of the two operation lists' checkpoints held back HOLD_MS, or until the gate opens. */
let gate: Promise<void> | undefined;
const holdingListCommits = (store: ReadStore): ReadStore =>
  new Proxy(store, {
    get(target, property, receiver) {
      if (property === 'commit') {
        return async (...args: Parameters<ReadStore['commit']>) => {
          if (args[1] && LISTS.has(args[1].projection))
            await (gate ?? new Promise((resolve) => setTimeout(resolve, HOLD_MS)));
          return target.commit(...args);
        };
      }
      const value = Reflect.get(target, property, receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });

async function keyed(sys: TestSystem, type: 'distributor' | 'merchant'): Promise<TestParty & { apiKey: string }> {
  const party = await sys.party(type);
  await sys.credit(party.wallet, '1000.00');
  return { ...party, apiKey: (await party.key()).apiKey };
}

describe('read-your-writes', () => {
  let sys: TestSystem;
  beforeAll(async () => {
    sys = await startTestSystem({ READ_YOUR_WRITES_TIMEOUT_MS: '2000' }, undefined, WITHOUT_EXECUTOR, {
      decorateReadStore: holdingListCommits,
    });
    await sys.individual(PHONE);
  });
  afterAll(async () => sys?.close());

  for (const [type, body] of [
    ['distributor', { operationType: 'cash-in', amount: '1.00', phoneTo: PHONE }],
    ['merchant', { operationType: 'pay-individual', amount: '1.00', phoneTo: PHONE }],
  ] as const) {
    it(`when a ${type} creates an operation and lists its operations at once, then the new operation is listed, ${TIMES} times in ${TIMES}`, async () => {
      const party = await keyed(sys, type);
      const path = `/api/v1/${type}s/${party.ref.id}/operations`;
      const missing: number[] = [];
      for (let i = 0; i < TIMES; i++) {
        const created = await call(sys.baseUrl, 'POST', path, { apiKey: party.apiKey, body });
        expect(created.status, JSON.stringify(created.body)).toBe(200);
        const listed = await call(sys.baseUrl, 'GET', `${path}?limit=1`, { apiKey: party.apiKey });
        if (listed.body[0]?.operationID !== created.body.operationID) missing.push(i);
      }
      expect(missing).toEqual([]);
    });
  }

  it('when the list cannot catch up within the bound, then the committed create is still answered 200, after about the bound', async () => {
    const party = await keyed(sys, 'distributor');
    let open = () => {};
    gate = new Promise((resolve) => (open = resolve)); // the list's next commit waits until the test is done
    try {
      const path = `/api/v1/distributors/${party.ref.id}/operations`;
      const started = performance.now();
      const created = await call(sys.baseUrl, 'POST', path, {
        apiKey: party.apiKey,
        body: { operationType: 'cash-in', amount: '1.00', phoneTo: PHONE },
      });
      expect(created.status, JSON.stringify(created.body)).toBe(200);
      expect(created.body.operationID).toMatch(/^op_/);
      expect(performance.now() - started).toBeGreaterThanOrEqual(1900);
    } finally {
      gate = undefined;
      open();
    }
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestSystem, type TestParty, type TestSystem, WITHOUT_EXECUTOR } from '../support/system.ts';
import { CHECKER_PASSWORD, ConsoleClient } from '../console/console-client.ts';
import { decorateReadStore, listGate } from '../support/hold-list-commits.ts';

/**
 * Read-your-writes (src/projections/read-your-writes.ts): a create is answered as soon as its append is committed,
 * and a read of the same process right after it (the party's list, the operation by its id, the payer's balance)
 * waits, within READ_YOUR_WRITES_TIMEOUT_MS, until the model holds it, so it always shows it. The operation lists'
 * projections commit HOLD_MS late here, as a loaded store does, so that a read that did not wait would miss the
 * operation every time (test/support/hold-list-commits.ts). Twice: every part on one event loop, and laid out as
 * `npm start` runs it, the projections on a thread of their own whose positions the API's thread waits on
 * (src/followers-thread.ts).
 */
const PHONE = '+2348123456780';
const TIMES = 20;
const BOUND_MS = 2000;
const HOOKS = new URL('../support/hold-list-commits.ts', import.meta.url);

async function keyed(sys: TestSystem, type: 'distributor' | 'merchant'): Promise<TestParty & { apiKey: string }> {
  const party = await sys.party(type);
  await sys.credit(party.wallet, '1000.00');
  return { ...party, apiKey: (await party.key()).apiKey };
}

export function readYourWritesEndToEnd(): void {
  for (const followersThread of [false, true]) readYourWrites(followersThread);
}

function readYourWrites(followersThread: boolean): void {
  describe(followersThread ? 'read-your-writes, the followers on a thread' : 'read-your-writes', () => {
    let sys: TestSystem;
    beforeAll(async () => {
      sys = await startTestSystem(
        { READ_YOUR_WRITES_TIMEOUT_MS: String(BOUND_MS) },
        undefined,
        WITHOUT_EXECUTOR,
        followersThread ? { followersThread: { hooks: HOOKS } } : { decorateReadStore },
      );
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

    it(`when a distributor creates an operation and reads it by its id and its balance at once, then both show it, ${TIMES} times in ${TIMES}`, async () => {
      const party = await keyed(sys, 'distributor');
      const base = `/api/v1/distributors/${party.ref.id}`;
      const wrong: string[] = [];
      for (let i = 1; i <= TIMES; i++) {
        const created = await call(sys.baseUrl, 'POST', `${base}/operations`, {
          apiKey: party.apiKey,
          body: { operationType: 'cash-in', amount: '1.00', phoneTo: PHONE },
        });
        expect(created.status, JSON.stringify(created.body)).toBe(200);
        const [one, balance] = await Promise.all([
          call(sys.baseUrl, 'GET', `${base}/operations/${created.body.operationID}`, { apiKey: party.apiKey }),
          call(sys.baseUrl, 'GET', `${base}/balance`, { apiKey: party.apiKey }),
        ]);
        if (one.status !== 200) wrong.push(`${i}: GET by id ${one.status}`);
        // Each create holds 1.00 of the 1000.00 credited: what is available drops by one each time.
        if (balance.body.held !== `${i}.00`) wrong.push(`${i}: held ${balance.body.held}`);
      }
      expect(wrong).toEqual([]);
    });

    it(`when a checker approves in the console, then the party's history there shows it approved at once, and its list in the API, ${TIMES / 4} times in ${TIMES / 4}`, async () => {
      const party = await keyed(sys, 'distributor');
      const path = `/api/v1/distributors/${party.ref.id}/operations`;
      const checker = new ConsoleClient(sys.baseUrl);
      await checker.loginOk(party.checkerEmail, CHECKER_PASSWORD);
      const wrong: string[] = [];
      for (let i = 0; i < TIMES / 4; i++) {
        const created = await call(sys.baseUrl, 'POST', path, {
          apiKey: party.apiKey,
          body: { operationType: 'cash-in', amount: '1.00', phoneTo: PHONE },
        });
        const { operationID } = created.body as { operationID: string };
        await checker.get('/console/operations');
        const approved = await checker.post(`/console/operations/${operationID}/approve`);
        expect(approved.status, approved.text).toBe(303);
        const history = await checker.get('/console/operations/history?status=approved');
        if (!history.text.includes(`data-operation-id="${operationID}"`))
          wrong.push(`${i}: not in the console's approved history`);
        const listed = await call(sys.baseUrl, 'GET', `${path}/${operationID}`, { apiKey: party.apiKey });
        if (listed.body.status !== 'approved') wrong.push(`${i}: ${listed.body.status} in the API`);
      }
      expect(wrong).toEqual([]);
    });

    it('when the list cannot catch up, then the create is answered at once, and a list right after it answers after about the bound with what the model holds', async () => {
      const party = await keyed(sys, 'distributor');
      await listGate('close'); // the lists' next commits wait until the test is done
      try {
        const path = `/api/v1/distributors/${party.ref.id}/operations`;
        const started = performance.now();
        const created = await call(sys.baseUrl, 'POST', path, {
          apiKey: party.apiKey,
          body: { operationType: 'cash-in', amount: '1.00', phoneTo: PHONE },
        });
        expect(created.status, JSON.stringify(created.body)).toBe(200);
        expect(created.body.operationID).toMatch(/^op_/);
        expect(performance.now() - started).toBeLessThan(BOUND_MS / 2);
        const listing = performance.now();
        const listed = await call(sys.baseUrl, 'GET', path, { apiKey: party.apiKey });
        expect(listed.status).toBe(200);
        expect(performance.now() - listing).toBeGreaterThanOrEqual(BOUND_MS - 100);
        expect(listed.body.map((item: { operationID: string }) => item.operationID)).not.toContain(
          created.body.operationID,
        );
      } finally {
        await listGate('open');
      }
    });
  });
}

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { streams } from '../../src/domain/streams.ts';
import { runCliProcess } from '../support/cli.ts';
import { call, startTestSystem, type TestParty, type TestSystem, WITHOUT_EXECUTOR } from '../support/system.ts';

/**
 * Limits under concurrency, over HTTP: no interleaving of concurrent creates may let two of them share
 * the same remaining volume or balance; idempotent retries create one operation; two checker processes
 * cannot both decide one operation.
 */

type Response = Awaited<ReturnType<typeof call>>;
type Keyed = TestParty & { apiKey: string; keyID: string };

let phoneSeq = 0;
const newPhone = () => `+2348125${String(100_000 + phoneSeq++)}`;

function checkEnvelope(r: Response): Response {
  expect(r.status, `unexpected server error: ${JSON.stringify(r.body)}`).toBeLessThan(500);
  if (r.status >= 400) {
    expect(r.headers.get('content-type') ?? '').toMatch(/^application\/problem\+json\b/);
    expect(r.headers.get('x-request-id') ?? '').not.toBe('');
  }
  return r;
}

function tally(responses: Response[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const r of responses) {
    const label = r.status === 200 ? '200' : `${r.status} ${String(r.body?.type)}`;
    counts[label] = (counts[label] ?? 0) + 1;
  }
  return counts;
}

describe('concurrent creates', () => {
  let sys: TestSystem;
  let phone: string;

  beforeAll(async () => {
    sys = await startTestSystem({}, undefined, WITHOUT_EXECUTOR);
    phone = await sys.individual(newPhone());
  });
  afterAll(async () => sys.close());

  const pathOf = (party: TestParty) => `/api/v1/${party.ref.type}s/${party.ref.id}/operations`;
  const cashIn = (amount: string, memo?: string) => ({
    operationType: 'cash-in',
    amount,
    phoneTo: phone,
    ...(memo ? { memo } : {}),
  });

  async function post(party: Keyed, body: unknown, headers?: Record<string, string>): Promise<Response> {
    return checkEnvelope(
      await call(sys.baseUrl, 'POST', pathOf(party), { apiKey: party.apiKey, body, ...(headers ? { headers } : {}) }),
    );
  }

  async function withKey(
    type: 'distributor' | 'merchant',
    balance?: string,
    terms: Record<string, string> = {},
  ): Promise<Keyed> {
    const party = await sys.party(type);
    if (balance) await sys.credit(party.wallet, balance);
    const { apiKey, keyID } = await party.key(terms);
    return { ...party, apiKey, keyID };
  }

  /** The operations holding funds in a payer's wallet: one FundsHeld per operation created. */
  async function holdsOf(party: TestParty): Promise<string[]> {
    const events = await sys.system.stores.eventStore.readStream(streams.wallet(party.wallet));
    return events.filter((e) => e.type === 'FundsHeld').map((e) => (e.data as { operationID: string }).operationID);
  }

  describe('limits', () => {
    it('when 200 creates of 100 race against a max daily volume of 10000, then exactly 100 are created and 100 are daily-volume-exceeded', async () => {
      const d = await withKey('distributor', '1000000', { maxDailyVolume: '10000' });
      const responses = await Promise.all(Array.from({ length: 200 }, () => post(d, cashIn('100'))));
      expect(tally(responses)).toEqual({ '200': 100, '403 /problems/daily-volume-exceeded': 100 });
      const ids = responses.filter((r) => r.status === 200).map((r) => r.body.operationID as string);
      expect(new Set(ids).size).toBe(100);
      expect(new Set(await holdsOf(d))).toEqual(new Set(ids));
      // the volume is used up exactly: not one cent more fits today
      expect((await post(d, cashIn('0.01'))).body.type).toBe('/problems/daily-volume-exceeded');
    }, 20_000);

    it('when 200 creates of 100 race against an available balance of 5000, then exactly 50 are created and 150 are insufficient-balance', async () => {
      const d = await withKey('distributor', '5000');
      const responses = await Promise.all(Array.from({ length: 200 }, () => post(d, cashIn('100'))));
      expect(tally(responses)).toEqual({ '200': 50, '403 /problems/insufficient-balance': 150 });
      const ids = responses.filter((r) => r.status === 200).map((r) => r.body.operationID as string);
      expect(new Set(ids).size).toBe(50);
      expect(new Set(await holdsOf(d))).toEqual(new Set(ids));
      expect((await post(d, cashIn('0.01'))).body.type).toBe('/problems/insufficient-balance');
    }, 20_000);

    it('when one payer is debited through two keys at once, then together they cannot overdraw it', async () => {
      const m = await sys.party('merchant');
      await sys.credit(m.wallet, '1000');
      const a: Keyed = { ...m, ...(await m.key()) };
      const b: Keyed = { ...m, ...(await m.key()) };
      const body = { operationType: 'pay-individual', amount: '100', phoneTo: phone };
      const responses = await Promise.all(Array.from({ length: 40 }, (_, i) => post(i % 2 ? a : b, body)));
      expect(tally(responses)).toEqual({ '200': 10, '403 /problems/insufficient-balance': 30 });
    }, 20_000);

    it('when an individual is debited by two distributors at once (cash-out-fulfillment), then the individual cannot be overdrawn', async () => {
      const individual = await sys.individual(newPhone());
      await sys.credit({ kind: 'individual', id: individual }, '500');
      const d1 = await withKey('distributor');
      const d2 = await withKey('distributor');
      const body = (i: number) => ({
        operationType: 'cash-out-fulfillment',
        amount: '100',
        phoneFrom: individual,
        cashOutFulfillmentType: 'cash',
        cashOutFulfillmentID: `r-${i}`,
      });
      const responses = await Promise.all(Array.from({ length: 30 }, (_, i) => post(i % 2 ? d1 : d2, body(i))));
      expect(tally(responses)).toEqual({ '200': 5, '403 /problems/insufficient-balance': 25 });
    }, 20_000);
  });

  describe('idempotency', () => {
    it('when the same Idempotency-Key and body are sent 20 times at once, then one operation is created and every response carries its operationID', async () => {
      const d = await withKey('distributor', '500');
      const headers = { 'idempotency-key': 'retry-storm-1' };
      const responses = await Promise.all(Array.from({ length: 20 }, () => post(d, cashIn('100'), headers)));
      expect(tally(responses)).toEqual({ '200': 20 });
      const ids = new Set(responses.map((r) => r.body.operationID as string));
      expect(ids.size).toBe(1);
      expect([...ids][0]).toMatch(/^op_/);
      const replayed = responses.filter((r) => r.headers.get('idempotent-replayed') === 'true').length;
      expect(replayed).toBeGreaterThanOrEqual(19);
      expect(await holdsOf(d)).toEqual([...ids]);
      // one hold of 100 only: the remaining 400 can be spent, and not a cent more
      expect((await post(d, cashIn('400'))).status).toBe(200);
      expect((await post(d, cashIn('0.01'))).body.type).toBe('/problems/insufficient-balance');
    });

    it('when a request is repeated later with the same Idempotency-Key and body, then it gets the same operationID with Idempotent-Replayed: true', async () => {
      const d = await withKey('distributor', '100');
      const headers = { 'idempotency-key': 'order-42' };
      const first = await post(d, cashIn('100', 'order 42'), headers);
      expect(first.status).toBe(200);
      expect(first.headers.get('idempotent-replayed')).toBeNull();
      const again = await post(d, cashIn('100', 'order 42'), headers);
      expect(again.status).toBe(200);
      expect(again.body).toEqual(first.body);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      // the replay is answered even though the balance is now fully held: it decides nothing again
      expect(await holdsOf(d)).toEqual([first.body.operationID]);
    });

    it('when the same body is sent with its keys in another order, then it is the same request and is replayed', async () => {
      const d = await withKey('distributor', '100');
      const headers = { 'idempotency-key': 'reordered' };
      const first = await post(d, { operationType: 'cash-in', amount: '10', phoneTo: phone }, headers);
      const again = await post(d, { phoneTo: phone, amount: '10', operationType: 'cash-in' }, headers);
      expect(again.body).toEqual(first.body);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
    });

    it('when the same Idempotency-Key comes with another body, then 422 idempotency-key-reused and nothing is created', async () => {
      const d = await withKey('distributor', '1000');
      const headers = { 'idempotency-key': 'order-43' };
      const first = await post(d, cashIn('100'), headers);
      expect(first.status).toBe(200);
      const other = await post(d, cashIn('101'), headers);
      expect(other.status).toBe(422);
      expect(other.body.type).toBe('/problems/idempotency-key-reused');
      expect(other.body.status).toBe(422);
      expect(await holdsOf(d)).toEqual([first.body.operationID]);
    });

    it('when the same Idempotency-Key is reused with another body concurrently, then one wins and the others get 422', async () => {
      const d = await withKey('distributor', '1000');
      const headers = { 'idempotency-key': 'clash' };
      const responses = await Promise.all(
        Array.from({ length: 10 }, (_, i) => post(d, cashIn(String(10 + i)), headers)),
      );
      expect(tally(responses)).toEqual({ '200': 1, '422 /problems/idempotency-key-reused': 9 });
      expect(await holdsOf(d)).toHaveLength(1);
    });

    it('when the same Idempotency-Key is used under a different API key, then it is independent and creates its own operation', async () => {
      const d = await sys.party('distributor');
      await sys.credit(d.wallet, '1000');
      const a: Keyed = { ...d, ...(await d.key()) };
      const b: Keyed = { ...d, ...(await d.key()) };
      const headers = { 'idempotency-key': 'shared-key-value' };
      const fromA = await post(a, cashIn('100'), headers);
      const fromB = await post(b, cashIn('100'), headers);
      expect(fromA.status).toBe(200);
      expect(fromB.status).toBe(200);
      expect(fromB.body.operationID).not.toBe(fromA.body.operationID);
      expect(fromB.headers.get('idempotent-replayed')).toBeNull();
      // and under another party's key, another body with the same Idempotency-Key is not a reuse either
      const otherParty = await withKey('distributor', '1000');
      const fromOther = await post(otherParty, cashIn('7'), headers);
      expect(fromOther.status).toBe(200);
      expect(fromOther.headers.get('idempotent-replayed')).toBeNull();
    });

    it('when no Idempotency-Key is sent, then the same body twice creates two operations', async () => {
      const d = await withKey('distributor', '1000');
      const a = await post(d, cashIn('100'));
      const b = await post(d, cashIn('100'));
      expect(a.body.operationID).not.toBe(b.body.operationID);
      expect(b.headers.get('idempotent-replayed')).toBeNull();
    });

    it.each([
      ['empty', ''],
      ['300 characters long', 'k'.repeat(300)],
      ['non-ASCII', 'clé-1'],
    ])('when the Idempotency-Key is %s, then 400 and nothing is created', async (_what, value) => {
      const d = await withKey('distributor', '100');
      const r = await post(d, cashIn('100'), { 'idempotency-key': value });
      expect(r.status).toBe(400);
      expect(r.body.type).toBe('/problems/input-validation-problems');
      expect(r.body.errors).toEqual([
        expect.objectContaining({
          type: '/problems/input-validation-problems/invalid-field',
          field: expect.any(String),
          detail: expect.any(String),
        }),
      ]);
      expect(await holdsOf(d)).toEqual([]);
      expect((await post(d, cashIn('100'))).status).toBe(200);
    });

    it('when the Idempotency-Key is 255 visible ASCII characters, then it is accepted', async () => {
      const d = await withKey('distributor', '100');
      const r = await post(d, cashIn('100'), { 'idempotency-key': `${'!~'.repeat(127)}z` });
      expect(r.status).toBe(200);
    });
  });

  describe('checkers in two processes', () => {
    it('when two CLI processes approve the same operation at once, then exactly one succeeds', async () => {
      const d = await withKey('distributor', '100');
      const created = await post(d, cashIn('100'));
      expect(created.status).toBe(200);
      const id = created.body.operationID as string;
      const args = ['operation', 'approve', id, '--as', d.checkerEmail, '--json', '--data-dir', sys.config.DATA_DIR];
      const results = await Promise.all([runCliProcess(args), runCliProcess(args)]);
      expect(results.map((r) => r.code).sort()).toEqual([0, 1]);
      const winner = results.find((r) => r.code === 0)!;
      expect(JSON.parse(winner.stdout)).toEqual({ operationID: id, state: 'approved' });
      const loser = results.find((r) => r.code === 1)!;
      expect(loser.stdout).toBe('');
      expect(loser.stderr.trim().split('\n')).toHaveLength(1);
      const events = await sys.system.stores.eventStore.readStream(streams.operation(id));
      expect(events.map((e) => e.type)).toEqual(['OperationRequested', 'OperationApproved']);
    });

    it('when one CLI process approves and another rejects the same operation at once, then exactly one decision is recorded', async () => {
      const d = await withKey('distributor', '100');
      const created = await post(d, cashIn('100'));
      const id = created.body.operationID as string;
      const data = ['--json', '--data-dir', sys.config.DATA_DIR];
      const results = await Promise.all([
        runCliProcess(['operation', 'approve', id, '--as', d.checkerEmail, ...data]),
        runCliProcess(['operation', 'reject', id, '--as', d.checkerEmail, '--reason', 'race', ...data]),
      ]);
      expect(results.map((r) => r.code).sort()).toEqual([0, 1]);
      const events = await sys.system.stores.eventStore.readStream(streams.operation(id));
      expect(events).toHaveLength(2);
      const decided = events[1]!.type;
      expect(['OperationApproved', 'OperationRejected']).toContain(decided);
      // the wallet agrees with the one decision: released only if rejected
      const next = await post(d, cashIn('100'));
      expect(next.status).toBe(decided === 'OperationRejected' ? 200 : 403);
    });
  });
});

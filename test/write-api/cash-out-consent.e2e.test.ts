import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { embeddedSecretsKey } from '../../src/adapters/secrets-key-file.ts';
import { issueCashOutCode } from '../../src/commands/cash-out-consent.ts';
import { PartyLookup } from '../../src/commands/party-lookup.ts';
import { CASH_OUT_CODE_TTL_MS, MAX_WRONG_CASH_OUT_CODES } from '../../src/domain/cash-out-codes.ts';
import { streams } from '../../src/domain/streams.ts';
import { runCliJson } from '../support/cli.ts';
import { call, startTestSystem, type TestParty, type TestSystem, WITHOUT_EXECUTOR } from '../support/system.ts';

/**
 * A distributor's cash-out-fulfillment debits an individual's wallet. By the contract (CASH_OUT_CONSENT=none,
 * the default) the distributor's key is enough; with CASH_OUT_CONSENT=individual-code the request must also
 * carry authorizationCode, a one-time code the individual got from their wallet app (here the CLI's
 * `individual cash-out-code`), used once, before it expires, up to the amount it was issued for.
 */

const NOT_AUTHORIZED = '/problems/cash-out-not-authorized';
let phoneSeq = 0;
const newPhone = () => `+2348124${String(100_000 + phoneSeq++)}`;

interface Setup {
  sys: TestSystem;
  distributor: TestParty;
  apiKey: string;
}

async function setup(env: Record<string, string>): Promise<Setup> {
  const sys = await startTestSystem(env, undefined, WITHOUT_EXECUTOR);
  const distributor = await sys.party('distributor');
  const { apiKey } = await distributor.key();
  return { sys, distributor, apiKey };
}

async function fundedIndividual({ sys }: Setup, amount = '10000.00'): Promise<string> {
  const phone = await sys.individual(newPhone());
  await sys.credit({ kind: 'individual', id: phone }, amount);
  return phone;
}

function cashOut({ sys, distributor, apiKey }: Setup, phone: string, amount: string, authorizationCode?: string) {
  return call(sys.baseUrl, 'POST', `/api/v1/distributors/${distributor.ref.id}/operations`, {
    apiKey,
    body: {
      operationType: 'cash-out-fulfillment',
      amount,
      phoneFrom: phone,
      cashOutFulfillmentType: 'cash',
      cashOutFulfillmentID: `RCPT-${randomUUID().slice(0, 8)}`,
      ...(authorizationCode === undefined ? {} : { authorizationCode }),
    },
  });
}

/** `count` different 8-digit codes, none of them `code`: what a guesser tries. */
function wrongCodes(code: string, count: number): string[] {
  const codes = new Set<string>();
  while (codes.size < count) {
    const guess = String(Math.floor(Math.random() * 1e8)).padStart(8, '0');
    if (guess !== code) codes.add(guess);
  }
  return [...codes];
}

/** A code as the individual's wallet app would hand it out: the operator CLI, on the system's data directory. */
const codeFromTheApp = (sys: TestSystem, phone: string, amount?: string) =>
  runCliJson<{ phone: string; code: string; maxAmount: string | null; expiresAt: string }>([
    'individual',
    'cash-out-code',
    '--phone',
    phone,
    ...(amount ? ['--amount', amount] : []),
    '--data-dir',
    sys.config.DATA_DIR,
  ]);

describe("cash-out-fulfillment and the individual's consent", () => {
  describe("given CASH_OUT_CONSENT=none (the default, the contract's rule)", () => {
    let off: Setup;
    beforeAll(async () => {
      off = await setup({});
    });
    afterAll(() => off.sys.close());

    it('when a distributor cashes out from a registered individual without any code, then the operation is created', async () => {
      const phone = await fundedIndividual(off);
      const r = await cashOut(off, phone, '4000.00');
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body.operationID).toMatch(/^op_/);
    });
  });

  describe('given CASH_OUT_CONSENT=individual-code', () => {
    let on: Setup;
    beforeAll(async () => {
      on = await setup({ CASH_OUT_CONSENT: 'individual-code' });
    });
    afterAll(() => on.sys.close());

    it('when the request carries no code, then it is refused 403 cash-out-not-authorized, and nothing is held', async () => {
      const phone = await fundedIndividual(on);
      const r = await cashOut(on, phone, '4000.00');
      expect(r.status).toBe(403);
      expect(r.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(r.body).toMatchObject({
        type: NOT_AUTHORIZED,
        title: 'Cash-Out Not Authorized',
        status: 403,
        detail: expect.stringMatching(/authorizationCode.*is required/),
      });
      expect(
        await on.sys.system.stores.eventStore.readStream(streams.wallet({ kind: 'individual', id: phone })),
      ).toHaveLength(1); // the credit only
    });

    it("when the request carries a wrong code, then it is refused 403; with the individual's code it is created; with the same code again it is refused", async () => {
      const phone = await fundedIndividual(on);
      const { code } = await codeFromTheApp(on.sys, phone);
      const wrong = code === '00000000' ? '00000001' : '00000000';

      const refused = await cashOut(on, phone, '4000.00', wrong);
      expect(refused.status).toBe(403);
      expect(refused.body).toMatchObject({
        type: NOT_AUTHORIZED,
        detail: expect.stringMatching(/not a live cash-out code of this individual/),
      });

      const accepted = await cashOut(on, phone, '4000.00', code);
      expect(accepted.status, JSON.stringify(accepted.body)).toBe(200);

      const reused = await cashOut(on, phone, '100.00', code);
      expect(reused.status).toBe(403);
      expect(reused.body.type).toBe(NOT_AUTHORIZED);

      // The code is in no event: the store keeps its keyed hash, and which operation used it.
      const consent = await on.sys.system.stores.eventStore.readStream(streams.cashOutConsent(phone));
      expect(consent.map((event) => event.type)).toEqual([
        'CashOutCodeIssued',
        'WrongCashOutCodePresented',
        'CashOutCodeUsed',
      ]);
      expect(consent[1]!.data).toMatchObject({ wrongCount: 1 });
      expect(consent[2]!.data).toMatchObject({ operationID: accepted.body.operationID });
      const all = await on.sys.system.stores.eventStore.readAll();
      expect(all.filter((event) => JSON.stringify(event).includes(code))).toEqual([]);
    });

    it("when another individual's code is presented, then it is refused 403 (a code is bound to its individual)", async () => {
      const phone = await fundedIndividual(on);
      const other = await fundedIndividual(on);
      const { code } = await codeFromTheApp(on.sys, other);
      expect((await cashOut(on, phone, '10.00', code)).status).toBe(403);
      expect((await cashOut(on, other, '10.00', code)).status).toBe(200);
    });

    it('when two cash-outs present the same code at once, then exactly one is created', async () => {
      const phone = await fundedIndividual(on);
      const { code } = await codeFromTheApp(on.sys, phone);
      const results = await Promise.all([cashOut(on, phone, '10.00', code), cashOut(on, phone, '20.00', code)]);
      expect(results.map((r) => r.status).sort()).toEqual([200, 403]);
    });

    it('when the code was issued for at most 100.00, then 150.00 is refused and 100.00 is created', async () => {
      const phone = await fundedIndividual(on);
      const { code, maxAmount } = await codeFromTheApp(on.sys, phone, '100');
      expect(maxAmount).toBe('100.00');
      const over = await cashOut(on, phone, '150.00', code);
      expect(over.status).toBe(403);
      expect(over.body.detail).toMatch(/at most 100\.00/);
      expect((await cashOut(on, phone, '100.00', code)).status).toBe(200);
    });

    it('when the code expired, then it is refused 403', async () => {
      const phone = await fundedIndividual(on);
      const issuedLongAgo = new Date(Date.now() - CASH_OUT_CODE_TTL_MS - 1000);
      const { store } = on.sys.backOffice;
      const { code } = await issueCashOutCode(
        {
          store,
          lookup: new PartyLookup(store),
          clock: () => issuedLongAgo,
          assetScale: 2,
          secretsKey: embeddedSecretsKey(on.sys.config.DATA_DIR),
        },
        { phone },
        { actor: `individual:${phone}`, correlationId: randomUUID() },
      );
      expect((await cashOut(on, phone, '10.00', code)).status).toBe(403);
    });

    it('when the code is not 8 digits, then it is refused 400 naming authorizationCode', async () => {
      const phone = await fundedIndividual(on);
      const r = await cashOut(on, phone, '10.00', '12ab');
      expect(r.status).toBe(400);
      expect(r.body.errors).toEqual([
        expect.objectContaining({ field: 'authorizationCode', detail: expect.stringMatching(/8-digit cash-out code/) }),
      ]);
    });

    it('when a cash-in carries an authorizationCode, then it is refused 400 (the field belongs to cash-out-fulfillment only)', async () => {
      const phone = await fundedIndividual(on);
      const r = await call(on.sys.baseUrl, 'POST', `/api/v1/distributors/${on.distributor.ref.id}/operations`, {
        apiKey: on.apiKey,
        body: { operationType: 'cash-in', amount: '10.00', phoneTo: phone, authorizationCode: '12345678' },
      });
      expect(r.status).toBe(400);
      expect(r.body.errors).toEqual([expect.objectContaining({ field: 'authorizationCode' })]);
    });

    it('when the app asks a code for a phone that is not registered, then the CLI refuses it and exits 1', async () => {
      await expect(codeFromTheApp(on.sys, newPhone())).rejects.toThrow(
        /exited 1: refused \(NOT_FOUND\): .* is not a registered individual wallet/,
      );
    });

    it(`when ${MAX_WRONG_CASH_OUT_CODES} wrong codes are presented, then every live code of the individual is void: the right one is refused, and a new code works`, async () => {
      const phone = await fundedIndividual(on);
      const { code } = await codeFromTheApp(on.sys, phone);
      const guesses = wrongCodes(code, MAX_WRONG_CASH_OUT_CODES);
      const answers = [];
      for (const guess of guesses) answers.push(await cashOut(on, phone, '10.00', guess));
      expect(answers.map((r) => r.status)).toEqual(Array(MAX_WRONG_CASH_OUT_CODES).fill(403));
      expect(answers.at(-1)!.body.detail).toMatch(/every live code of this individual is void: they ask for a new one/);

      const right = await cashOut(on, phone, '10.00', code);
      expect(right.status).toBe(403);
      expect(right.body.detail).toMatch(/not a live cash-out code/);
      const { code: fresh } = await codeFromTheApp(on.sys, phone);
      expect((await cashOut(on, phone, '10.00', fresh)).status).toBe(200);
    });
  });

  describe('given CASH_OUT_CONSENT=individual-code on two servers sharing the data, and three keys', () => {
    let on: Setup;
    let other: TestSystem;
    let keys: string[];
    beforeAll(async () => {
      on = await setup({ CASH_OUT_CONSENT: 'individual-code' });
      other = await startTestSystem(
        { DATA_DIR: on.sys.config.DATA_DIR, CASH_OUT_CONSENT: 'individual-code' },
        undefined,
        WITHOUT_EXECUTOR,
      );
      keys = [on.apiKey, (await on.distributor.key()).apiKey, (await on.distributor.key()).apiKey];
    });
    afterAll(async () => {
      await other?.close();
      await on?.sys.close();
    });

    it(`when 24 wrong codes and the right one are sent at once from every key to both servers, then at most ${MAX_WRONG_CASH_OUT_CODES} are counted against the live code, and the right one is used only if it came before the last`, async () => {
      const phone = await fundedIndividual(on);
      const { code } = await codeFromTheApp(on.sys, phone);
      const guesses = [...wrongCodes(code, 24)];
      guesses.splice(Math.floor(Math.random() * guesses.length), 0, code);
      const answers = await Promise.all(
        guesses.map((guess, i) =>
          cashOut({ ...on, sys: i % 2 === 0 ? on.sys : other, apiKey: keys[i % keys.length]! }, phone, '10.00', guess),
        ),
      );
      const right = answers[guesses.indexOf(code)]!;
      expect(answers.filter((r) => r !== right).map((r) => r.status)).toEqual(Array(24).fill(403));

      // The count, as every process sees it: 1, 2, … in order, never past the limit, nothing counted once void.
      const types = (await on.sys.system.stores.eventStore.readStream(streams.cashOutConsent(phone))).map((event) => ({
        type: event.type,
        data: event.data as { wrongCount?: number },
      }));
      const counted = types
        .filter((event) => event.type === 'WrongCashOutCodePresented')
        .map((event) => event.data.wrongCount);
      expect(counted).toEqual(Array.from({ length: counted.length }, (_, i) => i + 1));
      expect(counted.length).toBeLessThanOrEqual(MAX_WRONG_CASH_OUT_CODES);
      const order = types.map((event) => event.type);
      const usedAt = order.indexOf('CashOutCodeUsed');
      const voidedAt = order.indexOf('CashOutCodesVoided');
      if (right.status === 200) {
        // The right one came first: it spent the only live code, so later wrong codes had nothing to guess at.
        expect(counted.length).toBeLessThan(MAX_WRONG_CASH_OUT_CODES);
        expect(voidedAt).toBe(-1);
      } else {
        expect(right.status).toBe(403);
        expect(usedAt).toBe(-1);
        expect(counted.length).toBe(MAX_WRONG_CASH_OUT_CODES);
        expect(voidedAt).toBe(order.length - 1);
      }
      // Either way the right code does not work now.
      expect((await cashOut(on, phone, '10.00', code)).status).toBe(403);
    }, 60_000);
  });
});

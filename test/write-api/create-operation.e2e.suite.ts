import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { streams } from '../../src/domain/streams.ts';
import { runCli } from '../support/cli.ts';
import { call, startTestSystem, type TestParty, type TestSystem, WITHOUT_EXECUTOR } from '../support/system.ts';

/**
 * The two create-operation endpoints of the contract (POST /api/v1/distributors/{id}/operations and
 * POST /api/v1/merchants/{id}/operations) end to end over HTTP, and the checker's decisions on the
 * operations they create through the operator CLI, with stores of its own on the same data directory.
 *
 * Run by create-operation.e2e.test.ts on the embedded stores and ledger, by create-operation.on-postgres.e2e.test.ts on PostgreSQL.
 */
export function createOperationEndToEnd(): void {
  type Response = Awaited<ReturnType<typeof call>>;
  type Keyed = TestParty & { apiKey: string; keyID: string };

  const VALIDATION = '/problems/input-validation-problems';
  const FIELD_ITEM = '/problems/input-validation-problems/invalid-field';

  let phoneSeq = 0;
  /** A fresh valid Nigerian mobile number in E.164 (+234 812 31x xxxx). */
  const newPhone = () => `+2348123${String(100_000 + phoneSeq++)}`;
  /** The same number written with spaces, as a client might send it. */
  const spaced = (e164: string) => `${e164.slice(0, 4)} ${e164.slice(4, 7)} ${e164.slice(7, 10)} ${e164.slice(10)}`;

  /** Contract rules that hold for every response: never a 5xx; an error is a problem+json with an X-Request-Id. */
  function checkEnvelope(r: Response): Response {
    expect(r.status, `unexpected server error: ${JSON.stringify(r.body)}`).toBeLessThan(500);
    if (r.status >= 400) {
      expect(r.headers.get('content-type') ?? '').toMatch(/^application\/problem\+json\b/);
      expect(r.headers.get('x-request-id') ?? '').not.toBe('');
      expect(r.body).toMatchObject({
        status: r.status,
        type: expect.any(String),
        title: expect.any(String),
        detail: expect.any(String),
      });
    }
    return r;
  }

  function expectOperationCreated(r: Response): string {
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toEqual({ operationID: expect.stringMatching(/^op_[0-9a-f]+$/) });
    // The answer is written without express's res.json: the same headers, Content-Length measured by Node.
    expect(r.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(r.headers.get('content-length')).toBe(String(Buffer.byteLength(JSON.stringify(r.body))));
    expect(r.headers.get('x-request-id') ?? '').not.toBe('');
    return r.body.operationID as string;
  }

  /** A 400 validation problem with exactly one errors[] item per named field. */
  function expectValidation(r: Response, fields: string[]): void {
    expect(r.status, JSON.stringify(r.body)).toBe(400);
    expect(r.body.type).toBe(VALIDATION);
    expect(r.body.title).toBe('There are some validation errors');
    expect(Array.isArray(r.body.errors)).toBe(true);
    for (const item of r.body.errors) {
      expect(item).toEqual({ type: FIELD_ITEM, field: expect.any(String), detail: expect.any(String) });
      expect(item.detail.length).toBeGreaterThan(0);
    }
    expect((r.body.errors as Array<{ field: string }>).map((e) => e.field).sort()).toEqual([...fields].sort());
  }

  function expectProblem(r: Response, status: number, type: string, title?: string): void {
    expect(r.status, JSON.stringify(r.body)).toBe(status);
    expect(r.body.type).toBe(type);
    if (title) expect(r.body.title).toBe(title);
  }

  describe('create-operation endpoints', () => {
    let sys: TestSystem;
    let data: string[];

    beforeAll(async () => {
      sys = await startTestSystem({}, undefined, WITHOUT_EXECUTOR);
      data = ['--data-dir', sys.config.DATA_DIR];
    });
    afterAll(async () => sys.close());

    const pathOf = (party: TestParty) => `/api/v1/${party.ref.type}s/${party.ref.id}/operations`;

    async function post(
      party: Keyed,
      body: unknown,
      options: { headers?: Record<string, string>; path?: string } = {},
    ): Promise<Response> {
      return checkEnvelope(
        await call(sys.baseUrl, 'POST', options.path ?? pathOf(party), {
          apiKey: party.apiKey,
          body,
          ...(options.headers ? { headers: options.headers } : {}),
        }),
      );
    }

    async function postRaw(party: Keyed, rawBody: string, contentType = 'application/json'): Promise<Response> {
      return checkEnvelope(
        await call(sys.baseUrl, 'POST', pathOf(party), {
          apiKey: party.apiKey,
          rawBody,
          headers: { 'content-type': contentType },
        }),
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

    async function requested(operationID: string) {
      const events = await sys.system.stores.eventStore.readStream(streams.operation(operationID));
      expect(events[0]?.type).toBe('OperationRequested');
      return events[0]!.data as Record<string, any>;
    }

    const cli = (args: string[]) => runCli([...args, '--json', ...data]);

    // ---------------------------------------------------------------------------------------------------------
    describe('200: each of the five operation types', () => {
      let distributor: Keyed;
      let merchant: Keyed;
      let otherMerchant: TestParty;
      let otherDistributor: TestParty;
      let phone: string;

      beforeAll(async () => {
        distributor = await withKey('distributor', '10000');
        merchant = await withKey('merchant', '10000');
        otherMerchant = await sys.party('merchant');
        otherDistributor = await sys.party('distributor');
        phone = await sys.individual(newPhone());
        await sys.credit({ kind: 'individual', id: phone }, '10000');
      });

      it('when a distributor cashes in to a registered phone, then it gets 200 with an op_ operationID and the operation is pending for that individual', async () => {
        const id = expectOperationCreated(
          await post(distributor, { operationType: 'cash-in', amount: '100', phoneTo: phone, memo: 'till 4' }),
        );
        const op = await requested(id);
        expect(op).toMatchObject({
          operationType: 'cash-in',
          amount: '100.00',
          fee: '0.00',
          payer: distributor.wallet,
          payee: { kind: 'individual', id: phone },
          memo: 'till 4',
        });
      });

      it('when a distributor cashes in to a phone written with spaces, then the phone is accepted and normalized', async () => {
        const id = expectOperationCreated(
          await post(distributor, { operationType: 'cash-in', amount: '5.5', phoneTo: spaced(phone) }),
        );
        expect(await requested(id)).toMatchObject({ amount: '5.50', payee: { kind: 'individual', id: phone } });
      });

      it('when a distributor cashes in to a merchant short code, then it gets 200 and the merchant is the payee', async () => {
        const id = expectOperationCreated(
          await post(distributor, {
            operationType: 'cash-in',
            amount: '100.00',
            merchantToShortCode: otherMerchant.shortCode,
          }),
        );
        expect(await requested(id)).toMatchObject({
          operationType: 'cash-in',
          payer: distributor.wallet,
          payee: otherMerchant.wallet,
        });
      });

      it('when a distributor creates a cash-out-fulfillment, then it gets 200 and the individual is the payer', async () => {
        const id = expectOperationCreated(
          await post(distributor, {
            operationType: 'cash-out-fulfillment',
            amount: '20',
            phoneFrom: spaced(phone),
            cashOutFulfillmentType: 'cash',
            cashOutFulfillmentID: 'rcpt-1',
          }),
        );
        expect(await requested(id)).toMatchObject({
          operationType: 'cash-out-fulfillment',
          payer: { kind: 'individual', id: phone },
          payee: distributor.wallet,
          cashOutFulfillmentType: 'cash',
          cashOutFulfillmentID: 'rcpt-1',
        });
      });

      it('when a merchant creates a cash-out to a distributor short code, then it gets 200', async () => {
        const id = expectOperationCreated(
          await post(merchant, {
            operationType: 'cash-out',
            amount: '10',
            distributorToShortCode: otherDistributor.shortCode,
          }),
        );
        expect(await requested(id)).toMatchObject({
          operationType: 'cash-out',
          payer: merchant.wallet,
          payee: otherDistributor.wallet,
        });
      });

      it('when a merchant pays another merchant, then it gets 200', async () => {
        const id = expectOperationCreated(
          await post(merchant, {
            operationType: 'pay-merchant',
            amount: '10',
            merchantToShortCode: otherMerchant.shortCode,
            memo: 'invoice 7',
          }),
        );
        expect(await requested(id)).toMatchObject({
          operationType: 'pay-merchant',
          payer: merchant.wallet,
          payee: otherMerchant.wallet,
        });
      });

      it('when a merchant pays an individual by a phone with spaces, then it gets 200', async () => {
        const id = expectOperationCreated(
          await post(merchant, { operationType: 'pay-individual', amount: '10', phoneTo: spaced(phone) }),
        );
        expect(await requested(id)).toMatchObject({
          operationType: 'pay-individual',
          payer: merchant.wallet,
          payee: { kind: 'individual', id: phone },
        });
      });

      it('when two operations are created, then each gets its own operationID', async () => {
        const a = expectOperationCreated(
          await post(distributor, { operationType: 'cash-in', amount: '1', phoneTo: phone }),
        );
        const b = expectOperationCreated(
          await post(distributor, { operationType: 'cash-in', amount: '1', phoneTo: phone }),
        );
        expect(a).not.toBe(b);
      });
    });

    // ---------------------------------------------------------------------------------------------------------
    describe('400: input validation', () => {
      let distributor: Keyed;
      let merchant: Keyed;
      let otherMerchant: TestParty;
      let phone: string;

      beforeAll(async () => {
        distributor = await withKey('distributor', '100000');
        merchant = await withKey('merchant', '100000');
        otherMerchant = await sys.party('merchant');
        phone = await sys.individual(newPhone());
        await sys.credit({ kind: 'individual', id: phone }, '100000');
      });

      const cashIn = (extra: Record<string, unknown>) => ({
        operationType: 'cash-in',
        amount: '10',
        phoneTo: phone,
        ...extra,
      });

      it.each([
        ['an exponent', '1e2'],
        ['a minus sign', '-10'],
        ['a plus sign', '+10'],
        ['three decimals where ASSET_SCALE is 2', '10.001'],
        ['zero', '0'],
        ['zero with decimals', '0.00'],
        ['an empty string', ''],
        ['letters', 'ten'],
        ['spaces', ' 10 '],
        ['a comma', '1,000'],
      ])('when amount has %s (%j), then 400 names the field amount', async (_what, amount) => {
        expectValidation(await post(distributor, cashIn({ amount })), ['amount']);
      });

      it.each([
        ['a JSON number', 10],
        ['null', null],
        ['an object', { value: '10' }],
        ['a boolean', true],
      ])('when amount is %s instead of a string, then 400 names the field amount', async (_what, amount) => {
        expectValidation(await post(distributor, cashIn({ amount })), ['amount']);
      });

      it('when amount has two decimals, then it is accepted (the scale is the limit, not less)', async () => {
        expectOperationCreated(await post(distributor, cashIn({ amount: '10.25' })));
      });

      it('when operationType is unknown, then 400 names operationType', async () => {
        expectValidation(await post(distributor, cashIn({ operationType: 'cash-out-everything' })), ['operationType']);
      });

      it('when operationType is missing, then 400 names operationType', async () => {
        expectValidation(await post(distributor, { amount: '10', phoneTo: phone }), ['operationType']);
      });

      it('when operationType is not a string, then 400 names operationType', async () => {
        expectValidation(await post(distributor, cashIn({ operationType: 7 })), ['operationType']);
      });

      it.each(['cash-out', 'pay-merchant', 'pay-individual'])(
        'when a distributor sends the merchant operationType %s, then 400 names operationType',
        async (operationType) => {
          expectValidation(
            await post(distributor, {
              operationType,
              amount: '10',
              phoneTo: phone,
              merchantToShortCode: otherMerchant.shortCode,
            }),
            ['operationType'],
          );
        },
      );

      it.each(['cash-in', 'cash-out-fulfillment'])(
        'when a merchant sends the distributor operationType %s, then 400 names operationType',
        async (operationType) => {
          expectValidation(await post(merchant, { operationType, amount: '10', phoneTo: phone }), ['operationType']);
        },
      );

      it('when a cash-out-fulfillment has only its operationType, then 400 lists one item per missing field', async () => {
        expectValidation(await post(distributor, { operationType: 'cash-out-fulfillment' }), [
          'amount',
          'phoneFrom',
          'cashOutFulfillmentType',
          'cashOutFulfillmentID',
        ]);
      });

      it('when a pay-merchant has only its operationType, then 400 lists amount and merchantToShortCode', async () => {
        expectValidation(await post(merchant, { operationType: 'pay-merchant' }), ['amount', 'merchantToShortCode']);
      });

      it('when a cash-out has only its operationType, then 400 lists amount and distributorToShortCode', async () => {
        expectValidation(await post(merchant, { operationType: 'cash-out' }), ['amount', 'distributorToShortCode']);
      });

      it('when a pay-individual has only its operationType, then 400 lists amount and phoneTo', async () => {
        expectValidation(await post(merchant, { operationType: 'pay-individual' }), ['amount', 'phoneTo']);
      });

      it('when a cash-in has neither amount nor a destination, then 400 lists both amount and phoneTo', async () => {
        expectValidation(await post(distributor, { operationType: 'cash-in' }), ['amount', 'phoneTo']);
      });

      it('when a cash-in gives both phoneTo and merchantToShortCode, then 400 names phoneTo', async () => {
        expectValidation(await post(distributor, cashIn({ merchantToShortCode: otherMerchant.shortCode })), [
          'phoneTo',
        ]);
      });

      it('when a cash-in gives neither phoneTo nor merchantToShortCode, then 400 names phoneTo', async () => {
        expectValidation(await post(distributor, { operationType: 'cash-in', amount: '10' }), ['phoneTo']);
      });

      it('when a cash-in has a bad amount and both destinations, then 400 lists both amount and phoneTo', async () => {
        expectValidation(
          await post(distributor, cashIn({ amount: '1e2', merchantToShortCode: otherMerchant.shortCode })),
          ['amount', 'phoneTo'],
        );
      });

      it('when a cash-in phoneTo is a valid number of no registered individual, then 400 names phoneTo', async () => {
        expectValidation(await post(distributor, cashIn({ phoneTo: newPhone() })), ['phoneTo']);
      });

      it.each([
        ['a national number without +', '08123456781'],
        ['letters', '+234 CALL ME'],
        ['an invalid number', '+1234'],
        ['a number', 2348123456781],
      ])('when phoneTo is %s, then 400 names phoneTo', async (_what, phoneTo) => {
        expectValidation(await post(distributor, cashIn({ phoneTo })), ['phoneTo']);
      });

      it('when a cash-out-fulfillment phoneFrom is no registered individual, then 400 names phoneFrom', async () => {
        expectValidation(
          await post(distributor, {
            operationType: 'cash-out-fulfillment',
            amount: '1',
            phoneFrom: newPhone(),
            cashOutFulfillmentType: 'cash',
            cashOutFulfillmentID: 'r-2',
          }),
          ['phoneFrom'],
        );
      });

      it('when a pay-individual phoneTo is no registered individual, then 400 names phoneTo', async () => {
        expectValidation(await post(merchant, { operationType: 'pay-individual', amount: '1', phoneTo: newPhone() }), [
          'phoneTo',
        ]);
      });

      it('when a cash-in merchantToShortCode is no merchant, then 400 names merchantToShortCode', async () => {
        expectValidation(
          await post(distributor, { operationType: 'cash-in', amount: '1', merchantToShortCode: '987654321' }),
          ['merchantToShortCode'],
        );
      });

      it('when a cash-in merchantToShortCode is a distributor short code, then 400 names merchantToShortCode', async () => {
        expectValidation(
          await post(distributor, {
            operationType: 'cash-in',
            amount: '1',
            merchantToShortCode: distributor.shortCode,
          }),
          ['merchantToShortCode'],
        );
      });

      it('when a pay-merchant merchantToShortCode is no merchant, then 400 names merchantToShortCode', async () => {
        expectValidation(
          await post(merchant, { operationType: 'pay-merchant', amount: '1', merchantToShortCode: '987654321' }),
          ['merchantToShortCode'],
        );
      });

      it('when a cash-out distributorToShortCode is no distributor, then 400 names distributorToShortCode', async () => {
        expectValidation(
          await post(merchant, { operationType: 'cash-out', amount: '1', distributorToShortCode: '987654321' }),
          ['distributorToShortCode'],
        );
      });

      it('when a cash-out distributorToShortCode is a merchant short code, then 400 names distributorToShortCode', async () => {
        expectValidation(
          await post(merchant, {
            operationType: 'cash-out',
            amount: '1',
            distributorToShortCode: otherMerchant.shortCode,
          }),
          ['distributorToShortCode'],
        );
      });

      it('when a short code is not digits, then 400 names it', async () => {
        expectValidation(
          await post(merchant, { operationType: 'pay-merchant', amount: '1', merchantToShortCode: 'abc' }),
          ['merchantToShortCode'],
        );
      });

      it('when a merchant pays its own short code, then 400 names merchantToShortCode', async () => {
        expectValidation(
          await post(merchant, { operationType: 'pay-merchant', amount: '1', merchantToShortCode: merchant.shortCode }),
          ['merchantToShortCode'],
        );
      });

      it.each(['bank', 'Cash', 'mobile-money', ''])(
        'when cashOutFulfillmentType is %j, then 400 names cashOutFulfillmentType',
        async (cashOutFulfillmentType) => {
          expectValidation(
            await post(distributor, {
              operationType: 'cash-out-fulfillment',
              amount: '1',
              phoneFrom: phone,
              cashOutFulfillmentType,
              cashOutFulfillmentID: 'r-3',
            }),
            ['cashOutFulfillmentType'],
          );
        },
      );

      it('when a body carries an unknown field, then 400 refuses it naming that field', async () => {
        expectValidation(await post(distributor, cashIn({ memmo: 'typo' })), ['memmo']);
      });

      it('when a body carries two unknown fields, then 400 names each of them', async () => {
        expectValidation(
          await post(merchant, {
            operationType: 'pay-individual',
            amount: '1',
            phoneTo: phone,
            note: 'a',
            reference: 'b',
          }),
          ['note', 'reference'],
        );
      });

      it('when a field of another operation type is sent, then 400 names it as unknown', async () => {
        expectValidation(await post(distributor, cashIn({ cashOutFulfillmentID: 'r-9' })), ['cashOutFulfillmentID']);
      });

      it.each([
        ['an array', '[{"operationType":"cash-in"}]'],
        ['an empty array', '[]'],
        ['a string', '"cash-in"'],
        ['a number', '42'],
        ['null', 'null'],
        ['true', 'true'],
      ])('when the body is %s, not a JSON object, then 400 names body', async (_what, raw) => {
        expectValidation(await postRaw(distributor, raw), ['body']);
      });

      it.each([
        ['truncated', '{"operationType":"cash-in","amount":'],
        ['single-quoted', "{'operationType':'cash-in'}"],
        ['trailing comma', '{"operationType":"cash-in",}'],
        ['empty', ''],
      ])('when the JSON is malformed (%s), then 400 is a validation problem', async (_what, raw) => {
        const r = await postRaw(distributor, raw);
        expect(r.status).toBe(400);
        expect(r.body.type).toBe(VALIDATION);
        expect(r.body.errors.length).toBeGreaterThan(0);
      });

      it('when the body is valid JSON sent as text/plain, then 400 names Content-Type and nothing is created', async () => {
        const d = await withKey('distributor', '10');
        const body = JSON.stringify({ operationType: 'cash-in', amount: '10', phoneTo: phone });
        expectValidation(await postRaw(d, body, 'text/plain'), ['Content-Type']);
        expectValidation(await postRaw(d, body, 'application/x-www-form-urlencoded'), ['Content-Type']);
        // nothing was held: the whole balance is still available
        expectOperationCreated(await post(d, { operationType: 'cash-in', amount: '10', phoneTo: phone }));
      });

      it('when the request has no Content-Type, then 400 names Content-Type', async () => {
        const response = await fetch(`${sys.baseUrl}${pathOf(distributor)}`, {
          method: 'POST',
          headers: { authorization: `Bearer ${distributor.apiKey}` },
          // bytes, not a string: fetch then sends no Content-Type at all
          body: new TextEncoder().encode(JSON.stringify(cashIn({}))),
        });
        const r = checkEnvelope({
          status: response.status,
          headers: response.headers,
          body: JSON.parse(await response.text()),
        });
        expectValidation(r, ['Content-Type']);
      });

      it('when the Content-Type is application/json with a charset, then it is accepted', async () => {
        expectOperationCreated(
          await postRaw(distributor, JSON.stringify(cashIn({})), 'application/json; charset=utf-8'),
        );
      });

      it.each([
        ['a misspelt collection', (id: string) => `/api/v1/distributor/${id}/operations`],
        ['a misspelt resource', (id: string) => `/api/v1/distributors/${id}/operation`],
        ['another version', (id: string) => `/api/v2/distributors/${id}/operations`],
        ['an extra segment', (id: string) => `/api/v1/distributors/${id}/operations/extra`],
      ])('when the endpoint URL is wrong (%s), then 400 is a validation problem', async (_what, path) => {
        const r = await post(distributor, cashIn({}), { path: path(distributor.ref.id) });
        expect(r.status).toBe(400);
        expect(r.body.type).toBe(VALIDATION);
        expect(r.body.errors).toEqual(expect.arrayContaining([expect.objectContaining({ type: FIELD_ITEM })]));
      });
    });

    // ---------------------------------------------------------------------------------------------------------
    describe('403: key limits', () => {
      let phone: string;
      beforeAll(async () => {
        phone = await sys.individual(newPhone());
      });
      const cashIn = (amount: string) => ({ operationType: 'cash-in', amount, phoneTo: phone });

      it("when the amount is above the key's max transaction amount, then 403 transaction-limit-exceeded", async () => {
        const d = await withKey('distributor', '500.01', { maxTransactionAmount: '500' });
        expectProblem(
          await post(d, cashIn('500.01')),
          403,
          '/problems/transaction-limit-exceeded',
          'Transaction Limit Exceeded',
        );
        // the refusal held nothing: the whole balance is still there for operations within the limit
        expectOperationCreated(await post(d, cashIn('500')));
        expectOperationCreated(await post(d, cashIn('0.01')));
      });

      it("when the amount equals the key's max transaction amount, then it is allowed", async () => {
        const d = await withKey('distributor', '10000', { maxTransactionAmount: '500' });
        expectOperationCreated(await post(d, cashIn('500')));
        expectOperationCreated(await post(d, cashIn('500.00')));
      });

      it("when a merchant operation is above the key's max transaction amount, then 403 transaction-limit-exceeded", async () => {
        const m = await withKey('merchant', '10000', { maxTransactionAmount: '50' });
        expectProblem(
          await post(m, { operationType: 'pay-individual', amount: '50.01', phoneTo: phone }),
          403,
          '/problems/transaction-limit-exceeded',
        );
        expectOperationCreated(await post(m, { operationType: 'pay-individual', amount: '50', phoneTo: phone }));
      });

      it("when the day's operations plus this one exceed the max daily volume, then 403 daily-volume-exceeded", async () => {
        const d = await withKey('distributor', '10000', { maxDailyVolume: '1000' });
        expectOperationCreated(await post(d, cashIn('600')));
        expectProblem(
          await post(d, cashIn('400.01')),
          403,
          '/problems/daily-volume-exceeded',
          'Daily Volume Limit Exceeded',
        );
      });

      it('when a limit refuses, then the problem detail prints every amount at the asset scale (4289.50 left, never 4289.5)', async () => {
        const d = await withKey('distributor', '10000', { maxDailyVolume: '5000', maxTransactionAmount: '4500' });
        expectOperationCreated(await post(d, cashIn('710.5')));
        const volume = await post(d, cashIn('4300'));
        expectProblem(volume, 403, '/problems/daily-volume-exceeded');
        expect(volume.body.detail).toMatch(
          /^this operation would exceed the key's max daily volume of 5000\.00 \(4289\.50 left for \d{4}-\d{2}-\d{2}; the day runs 00:00-24:00 UTC\)$/,
        );
        const limit = await post(d, cashIn('4500.5'));
        expectProblem(limit, 403, '/problems/transaction-limit-exceeded');
        expect(limit.body.detail).toBe("amount 4500.50 exceeds this key's max transaction amount of 4500.00");
      });

      it("when the day's operations plus this one exactly reach the max daily volume, then it is allowed, and the next cent is refused", async () => {
        const d = await withKey('distributor', '10000', { maxDailyVolume: '1000' });
        expectOperationCreated(await post(d, cashIn('600')));
        expectOperationCreated(await post(d, cashIn('400')));
        expectProblem(await post(d, cashIn('0.01')), 403, '/problems/daily-volume-exceeded');
      });

      it('when a single operation alone is above the max daily volume, then 403 daily-volume-exceeded', async () => {
        const d = await withKey('distributor', '10000', { maxDailyVolume: '100' });
        expectProblem(await post(d, cashIn('100.01')), 403, '/problems/daily-volume-exceeded');
        expectOperationCreated(await post(d, cashIn('100')));
      });

      it('when an operation is refused for the daily volume, then it does not count towards the volume', async () => {
        const d = await withKey('distributor', '10000', { maxDailyVolume: '100' });
        expectProblem(await post(d, cashIn('150')), 403, '/problems/daily-volume-exceeded');
        expectProblem(await post(d, cashIn('150')), 403, '/problems/daily-volume-exceeded');
        expectOperationCreated(await post(d, cashIn('100')));
      });

      it('when an operation is refused for the transaction limit, then it does not count towards the daily volume', async () => {
        const d = await withKey('distributor', '10000', { maxTransactionAmount: '100', maxDailyVolume: '100' });
        expectProblem(await post(d, cashIn('100.01')), 403, '/problems/transaction-limit-exceeded');
        expectOperationCreated(await post(d, cashIn('100')));
      });

      it('when two keys of one party have daily volumes, then each key counts only its own operations', async () => {
        const d = await sys.party('distributor');
        await sys.credit(d.wallet, '10000');
        const a = { ...d, ...(await d.key({ maxDailyVolume: '100' })) };
        const b = { ...d, ...(await d.key({ maxDailyVolume: '100' })) };
        expectOperationCreated(await post(a, cashIn('100')));
        expectOperationCreated(await post(b, cashIn('100')));
        expectProblem(await post(a, cashIn('1')), 403, '/problems/daily-volume-exceeded');
      });
    });

    // ---------------------------------------------------------------------------------------------------------
    describe('403: insufficient balance', () => {
      let phone: string;
      let otherMerchant: TestParty;
      let otherDistributor: TestParty;
      beforeAll(async () => {
        phone = await sys.individual(newPhone());
        otherMerchant = await sys.party('merchant');
        otherDistributor = await sys.party('distributor');
      });

      it("when a cash-in is above the distributor's balance, then 403 insufficient-balance; the exact balance is allowed", async () => {
        const d = await withKey('distributor', '100');
        expectProblem(
          await post(d, { operationType: 'cash-in', amount: '100.01', phoneTo: phone }),
          403,
          '/problems/insufficient-balance',
          'Insufficient Balance',
        );
        expectOperationCreated(await post(d, { operationType: 'cash-in', amount: '100', phoneTo: phone }));
      });

      it('when a distributor with no funds cashes in, then 403 insufficient-balance', async () => {
        const d = await withKey('distributor');
        expectProblem(
          await post(d, { operationType: 'cash-in', amount: '0.01', merchantToShortCode: otherMerchant.shortCode }),
          403,
          '/problems/insufficient-balance',
        );
      });

      it("when a cash-out-fulfillment is above the individual's balance, then 403 insufficient-balance, whatever the distributor holds", async () => {
        const d = await withKey('distributor', '100000');
        const individual = await sys.individual(newPhone());
        await sys.credit({ kind: 'individual', id: individual }, '50');
        const body = (amount: string) => ({
          operationType: 'cash-out-fulfillment',
          amount,
          phoneFrom: individual,
          cashOutFulfillmentType: 'cash',
          cashOutFulfillmentID: `r-${amount}`,
        });
        expectProblem(await post(d, body('50.01')), 403, '/problems/insufficient-balance');
        expectOperationCreated(await post(d, body('50')));
        expectProblem(await post(d, body('0.01')), 403, '/problems/insufficient-balance');
      });

      it('when a distributor with no funds fulfils a cash-out of a funded individual, then it is allowed (the individual pays)', async () => {
        const d = await withKey('distributor');
        const individual = await sys.individual(newPhone());
        await sys.credit({ kind: 'individual', id: individual }, '30');
        expectOperationCreated(
          await post(d, {
            operationType: 'cash-out-fulfillment',
            amount: '30',
            phoneFrom: individual,
            cashOutFulfillmentType: 'cash',
            cashOutFulfillmentID: 'r-x',
          }),
        );
      });

      it.each([
        ['cash-out', () => ({ distributorToShortCode: otherDistributor.shortCode })],
        ['pay-merchant', () => ({ merchantToShortCode: otherMerchant.shortCode })],
        ['pay-individual', () => ({ phoneTo: phone })],
      ])(
        "when a merchant's %s is above its balance, then 403 insufficient-balance; the exact balance is allowed",
        async (operationType, destination) => {
          const m = await withKey('merchant', '70');
          expectProblem(
            await post(m, { operationType, amount: '70.01', ...destination() }),
            403,
            '/problems/insufficient-balance',
          );
          expectOperationCreated(await post(m, { operationType, amount: '70', ...destination() }));
        },
      );

      it('when pending operations hold part of the balance, then only the rest is available', async () => {
        const d = await withKey('distributor', '100');
        const cashIn = (amount: string) => ({ operationType: 'cash-in', amount, phoneTo: phone });
        expectOperationCreated(await post(d, cashIn('60')));
        // 100 executed, 60 held: a second 60 would overdraw
        expectProblem(await post(d, cashIn('60')), 403, '/problems/insufficient-balance');
        expectOperationCreated(await post(d, cashIn('40')));
        expectProblem(await post(d, cashIn('0.01')), 403, '/problems/insufficient-balance');
      });

      it('when a refused operation was above the balance, then it held nothing', async () => {
        const m = await withKey('merchant', '10');
        expectProblem(
          await post(m, { operationType: 'pay-individual', amount: '11', phoneTo: phone }),
          403,
          '/problems/insufficient-balance',
        );
        expectOperationCreated(await post(m, { operationType: 'pay-individual', amount: '10', phoneTo: phone }));
      });
    });

    // ---------------------------------------------------------------------------------------------------------
    describe('checker decisions through the CLI', () => {
      let phone: string;
      beforeAll(async () => {
        phone = await sys.individual(newPhone());
      });

      it('when a pending operation is rejected with the CLI, then its held balance and its daily volume are available again', async () => {
        const d = await sys.party('distributor');
        await sys.credit(d.wallet, '200');
        const limited: Keyed = { ...d, ...(await d.key({ maxDailyVolume: '100' })) };
        const unlimited: Keyed = { ...d, ...(await d.key()) };
        const cashIn = (amount: string) => ({ operationType: 'cash-in', amount, phoneTo: phone });

        const id = expectOperationCreated(await post(limited, cashIn('100')));
        // 100 of 200 held; the key's 100 of the day used
        expectProblem(await post(unlimited, cashIn('100.01')), 403, '/problems/insufficient-balance');
        expectProblem(await post(limited, cashIn('1')), 403, '/problems/daily-volume-exceeded');

        const rejected = await cli(['operation', 'reject', id, '--as', d.checkerEmail, '--reason', 'x']);
        expect(rejected.code, rejected.stderr).toBe(0);
        expect(JSON.parse(rejected.stdout)).toEqual({ operationID: id, state: 'rejected' });

        // the key's 100 of the day is free again...
        expectOperationCreated(await post(limited, cashIn('100')));
        // ...and so is the 100 the rejected operation held: 200 - 100 leaves 100, not 0
        expectOperationCreated(await post(unlimited, cashIn('100')));
        expectProblem(await post(unlimited, cashIn('0.01')), 403, '/problems/insufficient-balance');
      });

      it('when a rejected operation is rejected or approved again, then the CLI refuses with exit 1 and nothing is released twice', async () => {
        const d = await withKey('distributor', '100');
        const id = expectOperationCreated(await post(d, { operationType: 'cash-in', amount: '100', phoneTo: phone }));
        expect((await cli(['operation', 'reject', id, '--as', d.checkerEmail, '--reason', 'x'])).code).toBe(0);
        expect((await cli(['operation', 'reject', id, '--as', d.checkerEmail, '--reason', 'x'])).code).toBe(1);
        expect((await cli(['operation', 'approve', id, '--as', d.checkerEmail])).code).toBe(1);
        expectOperationCreated(await post(d, { operationType: 'cash-in', amount: '100', phoneTo: phone }));
        // had the second reject released again, this would fit
        expectProblem(
          await post(d, { operationType: 'cash-in', amount: '0.01', phoneTo: phone }),
          403,
          '/problems/insufficient-balance',
        );
      });

      it('when a checker approves a pending operation with the CLI, then it prints {operationID, state: approved} and the funds stay held', async () => {
        const d = await withKey('distributor', '100');
        const id = expectOperationCreated(await post(d, { operationType: 'cash-in', amount: '100', phoneTo: phone }));
        const approved = await cli(['operation', 'approve', id, '--as', d.checkerEmail]);
        expect(approved.code, approved.stderr).toBe(0);
        expect(JSON.parse(approved.stdout)).toEqual({ operationID: id, state: 'approved' });
        expectProblem(
          await post(d, { operationType: 'cash-in', amount: '0.01', phoneTo: phone }),
          403,
          '/problems/insufficient-balance',
        );
      });

      it('when an operation is approved twice, then the second approval exits 1 with one line on stderr', async () => {
        const d = await withKey('distributor', '100');
        const id = expectOperationCreated(await post(d, { operationType: 'cash-in', amount: '5', phoneTo: phone }));
        expect((await cli(['operation', 'approve', id, '--as', d.checkerEmail])).code).toBe(0);
        const again = await cli(['operation', 'approve', id, '--as', d.checkerEmail]);
        expect(again.code).toBe(1);
        expect(again.stdout).toBe('');
        expect(again.stderr.trim().split('\n')).toHaveLength(1);
      });

      it('when an approved operation is rejected, then the CLI refuses with exit 1 and the hold stays', async () => {
        const d = await withKey('distributor', '100');
        const id = expectOperationCreated(await post(d, { operationType: 'cash-in', amount: '100', phoneTo: phone }));
        expect((await cli(['operation', 'approve', id, '--as', d.checkerEmail])).code).toBe(0);
        expect((await cli(['operation', 'reject', id, '--as', d.checkerEmail, '--reason', 'too late'])).code).toBe(1);
        expectProblem(
          await post(d, { operationType: 'cash-in', amount: '1', phoneTo: phone }),
          403,
          '/problems/insufficient-balance',
        );
      });

      it('when a maker without the checker role approves, then the CLI exits 1 and the operation stays pending', async () => {
        const d = await withKey('distributor', '100');
        const id = expectOperationCreated(await post(d, { operationType: 'cash-in', amount: '5', phoneTo: phone }));
        const byMaker = await cli(['operation', 'approve', id, '--as', d.makerEmail]);
        expect(byMaker.code).toBe(1);
        expect(byMaker.stderr).toMatch(/checker/);
        const byChecker = await cli(['operation', 'approve', id, '--as', d.checkerEmail]);
        expect(byChecker.code, byChecker.stderr).toBe(0);
        expect(JSON.parse(byChecker.stdout)).toEqual({ operationID: id, state: 'approved' });
      });

      it('when a maker without the checker role rejects, then the CLI exits 1 and nothing is released', async () => {
        const d = await withKey('distributor', '100');
        const id = expectOperationCreated(await post(d, { operationType: 'cash-in', amount: '100', phoneTo: phone }));
        expect((await cli(['operation', 'reject', id, '--as', d.makerEmail, '--reason', 'x'])).code).toBe(1);
        expectProblem(
          await post(d, { operationType: 'cash-in', amount: '1', phoneTo: phone }),
          403,
          '/problems/insufficient-balance',
        );
      });

      it('when a checker of another party approves or rejects, then the CLI exits 1 and the operation stays pending', async () => {
        const d = await withKey('distributor', '100');
        const other = await sys.party('distributor');
        const id = expectOperationCreated(await post(d, { operationType: 'cash-in', amount: '100', phoneTo: phone }));
        const approve = await cli(['operation', 'approve', id, '--as', other.checkerEmail]);
        expect(approve.code).toBe(1);
        expect(approve.stderr).toMatch(/another party/);
        expect((await cli(['operation', 'reject', id, '--as', other.checkerEmail, '--reason', 'x'])).code).toBe(1);
        // still held (not released by the foreign reject), still pending (its own checker can decide)
        expectProblem(
          await post(d, { operationType: 'cash-in', amount: '1', phoneTo: phone }),
          403,
          '/problems/insufficient-balance',
        );
        expect((await cli(['operation', 'approve', id, '--as', d.checkerEmail])).code).toBe(0);
      });

      it('when an unknown operation is approved, then the CLI exits 1', async () => {
        const d = await sys.party('distributor');
        const r = await cli(['operation', 'approve', `op_${'0'.repeat(32)}`, '--as', d.checkerEmail]);
        expect(r.code).toBe(1);
        expect(r.stderr).toMatch(/does not exist/);
      });
    });

    // ---------------------------------------------------------------------------------------------------------
    describe('error envelope', () => {
      it('when requests fail in each way, then every error is application/problem+json with an X-Request-Id and no 5xx', async () => {
        const d = await withKey('distributor', '10', { maxTransactionAmount: '5' });
        const phone = await sys.individual(newPhone());
        const responses: Response[] = [
          await call(sys.baseUrl, 'POST', pathOf(d), { body: {} }),
          await call(sys.baseUrl, 'POST', pathOf(d), { apiKey: 'nonsense', body: {} }),
          await call(sys.baseUrl, 'POST', `/api/v1/distributors/${randomUUID()}/operations`, {
            apiKey: d.apiKey,
            body: {},
          }),
          await call(sys.baseUrl, 'POST', pathOf(d), {
            apiKey: d.apiKey,
            body: { operationType: 'cash-in', amount: '5.5', phoneTo: phone },
          }),
          await call(sys.baseUrl, 'POST', pathOf(d), {
            apiKey: d.apiKey,
            body: { operationType: 'cash-in', amount: 'x', phoneTo: phone },
          }),
          await call(sys.baseUrl, 'POST', pathOf(d), {
            apiKey: d.apiKey,
            rawBody: '{',
            headers: { 'content-type': 'application/json' },
          }),
          await call(sys.baseUrl, 'POST', pathOf(d), {
            apiKey: d.apiKey,
            rawBody: 'x'.repeat(64 * 1024),
            headers: { 'content-type': 'application/json' },
          }),
          await call(sys.baseUrl, 'POST', '/api/v1/nothing', { apiKey: d.apiKey, body: {} }),
          await call(sys.baseUrl, 'GET', '/nothing-here'),
        ];
        expect(responses.map((r) => r.status).slice(0, 6)).toEqual([401, 401, 403, 403, 400, 400]);
        expect(responses[7]!.status).toBe(400);
        for (const r of responses) {
          expect(r.status).toBeGreaterThanOrEqual(400);
          checkEnvelope(r);
          expect(r.headers.get('content-type')).toMatch(/^application\/problem\+json/);
          expect(r.headers.get('x-request-id')).toMatch(/\S/);
        }
      });

      it('when two requests fail, then each has its own X-Request-Id', async () => {
        const a = await call(sys.baseUrl, 'POST', '/api/v1/distributors/x/operations', { body: {} });
        const b = await call(sys.baseUrl, 'POST', '/api/v1/distributors/x/operations', { body: {} });
        expect(a.headers.get('x-request-id')).not.toBe(b.headers.get('x-request-id'));
      });
    });
  });

  // -------------------------------------------------------------------------------------------------------------
  describe('create-operation with a fee schedule', () => {
    let sys: TestSystem;
    let payee: TestParty;
    let phone: string;

    beforeAll(async () => {
      sys = await startTestSystem(
        { FEE_SCHEDULE: '{"pay-merchant":{"flat":"1.00","percent":"0"}}' },
        undefined,
        WITHOUT_EXECUTOR,
      );
      payee = await sys.party('merchant');
      phone = await sys.individual('+2348123999001');
    });
    afterAll(async () => sys.close());

    async function fundedMerchant(balance: string) {
      const m = await sys.party('merchant');
      await sys.credit(m.wallet, balance);
      return { ...m, apiKey: (await m.key()).apiKey };
    }
    const post = async (m: TestParty & { apiKey: string }, body: unknown) =>
      checkEnvelope(
        await call(sys.baseUrl, 'POST', `/api/v1/merchants/${m.ref.id}/operations`, { apiKey: m.apiKey, body }),
      );
    const payMerchant = (amount: string) => ({
      operationType: 'pay-merchant',
      amount,
      merchantToShortCode: payee.shortCode,
    });

    it("when a merchant's balance equals the amount but not the amount plus the fee, then 403 insufficient-balance", async () => {
      const m = await fundedMerchant('100');
      expectProblem(await post(m, payMerchant('100')), 403, '/problems/insufficient-balance');
      expectProblem(await post(m, payMerchant('99.01')), 403, '/problems/insufficient-balance');
      // amount + fee = 100 fits exactly
      expectOperationCreated(await post(m, payMerchant('99')));
    });

    it('when a pay-merchant is pending, then its amount and its fee are both held', async () => {
      const m = await fundedMerchant('50');
      expectOperationCreated(await post(m, payMerchant('20')));
      // 50 - (20 + 1) = 29 left; pay-individual carries no fee in this schedule
      expectProblem(
        await post(m, { operationType: 'pay-individual', amount: '29.01', phoneTo: phone }),
        403,
        '/problems/insufficient-balance',
      );
      expectOperationCreated(await post(m, { operationType: 'pay-individual', amount: '29', phoneTo: phone }));
    });

    it('when an operation type has no fee in the schedule, then the whole balance can be spent on it', async () => {
      const m = await fundedMerchant('100');
      expectOperationCreated(await post(m, { operationType: 'pay-individual', amount: '100', phoneTo: phone }));
    });
  });
}

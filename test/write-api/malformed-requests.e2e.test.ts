import http from 'node:http';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadState } from '../../src/commands/pipeline.ts';
import { walletState } from '../../src/commands/wallet-state.ts';
import { streams } from '../../src/domain/streams.ts';
import { startTestSystem, type TestParty, type TestSystem, WITHOUT_EXECUTOR } from '../support/system.ts';

/**
 * Hostile and sloppy clients: a table of malformed requests against one running system. Every one must be
 * answered with a 4xx application/problem+json (never a 5xx, never a success), and none may leave anything
 * behind in the store.
 *
 * Requests are sent with node:http rather than fetch, so that the bytes on the wire are exactly the table's:
 * no Content-Type added for a string body, no dot segments removed from the path, Buffers sent unchanged.
 */

interface Ctx {
  sys: TestSystem;
  d: TestParty;
  m: TestParty;
  /** A second merchant: the payee of a valid pay-merchant. */
  m2: TestParty;
  dKey: string;
  mKey: string;
  /** A distributor key without Perform Operations. */
  readOnlyKey: string;
  /** A registered individual. */
  phone: string;
}

interface Req {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: string | Buffer;
  /** Send the body in chunks without a Content-Length. */
  chunked?: boolean;
}

interface Expect {
  /** The exact status, when the contract or the code fixes it; otherwise any 4xx. */
  status?: number;
  /** For validation problems: a field that errors[] must name. */
  field?: string;
  /** The problem type expected. */
  type?: string;
}

interface Row extends Expect {
  name: string;
  request: (c: Ctx) => Req;
}

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
}

const REGISTERED_PHONE = '+2348123456781';
const UNREGISTERED_PHONE = '+2348123456782';
const D_MAX_TRANSACTION = '10000.00';
const FUNDS = '1000000.00';

function send(baseUrl: string, req: Req): Promise<Answer> {
  const url = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const headers: Record<string, string | number> = { ...req.headers };
    if (req.body !== undefined && !req.chunked) headers['content-length'] = Buffer.byteLength(req.body);
    const request = http.request(
      { host: url.hostname, port: url.port, method: req.method, path: req.path, headers, agent: false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }),
        );
        res.on('error', reject);
      },
    );
    request.setTimeout(15_000, () => request.destroy(new Error('no answer in time')));
    request.on('error', reject);
    if (req.body === undefined) {
      request.end();
    } else if (req.chunked) {
      const bytes = Buffer.from(req.body);
      for (let i = 0; i < bytes.length; i += 1024) request.write(bytes.subarray(i, i + 1024));
      request.end();
    } else {
      request.end(req.body);
    }
  });
}

// Request builders ------------------------------------------------------------------------------------------

type Who = 'distributor' | 'merchant';
type BodyOf = (c: Ctx) => unknown;

const opsPath = (c: Ctx, who: Who) =>
  who === 'distributor'
    ? `/api/v1/distributors/${c.d.ref.id}/operations`
    : `/api/v1/merchants/${c.m.ref.id}/operations`;
const keyOf = (c: Ctx, who: Who) => (who === 'distributor' ? c.dKey : c.mKey);
const encode = (body: unknown): string | Buffer =>
  typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body);

/** A POST to a party's own operations path with its own key and a JSON content type; strings and Buffers are sent raw. */
function post(
  who: Who,
  body: BodyOf,
  options: { headers?: (c: Ctx) => Record<string, string>; path?: (c: Ctx) => string; method?: string } = {},
) {
  return (c: Ctx): Req => {
    const raw = body(c);
    return {
      method: options.method ?? 'POST',
      path: options.path?.(c) ?? opsPath(c, who),
      headers: {
        authorization: `Bearer ${keyOf(c, who)}`,
        'content-type': 'application/json',
        ...options.headers?.(c),
      },
      ...(raw === undefined ? {} : { body: encode(raw) }),
    };
  };
}

// Valid bodies, from which one thing at a time is broken.
const cashIn = (c: Ctx, change: Record<string, unknown> = {}) => ({
  operationType: 'cash-in',
  amount: '5.00',
  phoneTo: c.phone,
  ...change,
});
const cashOutFulfillment = (c: Ctx, change: Record<string, unknown> = {}) => ({
  operationType: 'cash-out-fulfillment',
  amount: '5.00',
  phoneFrom: c.phone,
  cashOutFulfillmentType: 'cash',
  cashOutFulfillmentID: 'receipt-1',
  ...change,
});
const cashOut = (c: Ctx, change: Record<string, unknown> = {}) => ({
  operationType: 'cash-out',
  amount: '5.00',
  distributorToShortCode: c.d.shortCode,
  ...change,
});
const payMerchant = (c: Ctx, change: Record<string, unknown> = {}) => ({
  operationType: 'pay-merchant',
  amount: '5.00',
  merchantToShortCode: c.m2.shortCode,
  ...change,
});
const payIndividual = (c: Ctx, change: Record<string, unknown> = {}) => ({
  operationType: 'pay-individual',
  amount: '5.00',
  phoneTo: c.phone,
  ...change,
});

/** A valid cash-in body as JSON text with one more member written raw (for keys JSON.stringify cannot produce). */
const cashInWithRaw = (c: Ctx, member: string) => `${JSON.stringify(cashIn(c)).slice(0, -1)},${member}}`;

const invalid = (field: string): Expect => ({ status: 400, field, type: '/problems/input-validation-problems' });
const notJson: Expect = invalid('body');
const unauthorized: Expect = { status: 401, type: '/problems/unauthorized' };
const forbidden: Expect = { status: 403, type: '/problems/access-forbidden' };
const tooLarge: Expect = { status: 413, type: '/problems/payload-too-large' };
const noSuchEndpoint = invalid('url');

const row = (name: string, request: Row['request'], expect: Expect = {}): Row => ({ name, request, ...expect });

// The table -------------------------------------------------------------------------------------------------

const WRONG_TYPES: Array<[string, unknown]> = [
  ['a number', 42],
  ['a boolean', true],
  ['an array', ['5.00']],
  ['an object', { value: '5.00' }],
  ['null', null],
];

const BAD_AMOUNTS = [
  '',
  '1e2',
  '-5',
  '+5',
  ' 5',
  '5 ',
  '0x10',
  '1_000',
  '１００',
  '100.001',
  '99999999999999999999',
  'NaN',
  'Infinity',
  '-Infinity',
  '.5',
  '5.',
  '1,5',
  '1 000',
  '0',
  '0.00',
  '-0',
  '5.5.5',
  '٥',
  '5\n',
  'five',
];

const bodyRows: Row[] = [
  // operationType
  ...WRONG_TYPES.map(([what, value]) =>
    row(
      `operationType is ${what}`,
      post('distributor', (c) => cashIn(c, { operationType: value })),
      invalid('operationType'),
    ),
  ),
  row(
    'operationType is missing',
    post('distributor', (c) => cashIn(c, { operationType: undefined })),
    invalid('operationType'),
  ),
  row(
    'operationType is an empty string',
    post('distributor', (c) => cashIn(c, { operationType: '' })),
    invalid('operationType'),
  ),
  ...[
    'CASH-IN',
    'Cash-In',
    'cash_in',
    'cashin',
    ' cash-in',
    'cash-in ',
    'transfer',
    '__proto__',
    'constructor',
    'toString',
    'hasOwnProperty',
  ].map((value) =>
    row(
      `a distributor sends operationType ${JSON.stringify(value)}`,
      post('distributor', (c) => cashIn(c, { operationType: value })),
      invalid('operationType'),
    ),
  ),
  row(
    'a distributor sends a merchant operation type (pay-merchant)',
    post('distributor', (c) => payMerchant(c)),
    invalid('operationType'),
  ),
  row(
    'a distributor sends a merchant operation type (cash-out)',
    post('distributor', (c) => cashOut(c)),
    invalid('operationType'),
  ),
  row(
    'a merchant sends a distributor operation type (cash-in)',
    post('merchant', (c) => cashIn(c)),
    invalid('operationType'),
  ),
  row(
    'a merchant sends a distributor operation type (cash-out-fulfillment)',
    post('merchant', (c) => cashOutFulfillment(c)),
    invalid('operationType'),
  ),

  // amount
  ...WRONG_TYPES.map(([what, value]) =>
    row(
      `amount is ${what}`,
      post('distributor', (c) => cashIn(c, { amount: value })),
      invalid('amount'),
    ),
  ),
  row(
    'amount is a fractional number',
    post('distributor', (c) => cashIn(c, { amount: 5.5 })),
    invalid('amount'),
  ),
  row(
    'amount is missing',
    post('distributor', (c) => cashIn(c, { amount: undefined })),
    invalid('amount'),
  ),
  ...BAD_AMOUNTS.map((amount) =>
    row(
      `amount is ${JSON.stringify(amount)}`,
      post('distributor', (c) => cashIn(c, { amount })),
      invalid('amount'),
    ),
  ),
  row(
    'a merchant pay-individual amount is "1e2"',
    post('merchant', (c) => payIndividual(c, { amount: '1e2' })),
    invalid('amount'),
  ),
  row(
    'a cash-out-fulfillment amount is "-5"',
    post('distributor', (c) => cashOutFulfillment(c, { amount: '-5' })),
    invalid('amount'),
  ),
  row(
    "the amount is above the key's max transaction amount",
    post('distributor', (c) => cashIn(c, { amount: '10000.01' })),
    { status: 403, type: '/problems/transaction-limit-exceeded' },
  ),
  row(
    "the amount is above the merchant's balance",
    post('merchant', (c) => payIndividual(c, { amount: '999999999999.00' })),
    { status: 403, type: '/problems/insufficient-balance' },
  ),

  // phones
  ...WRONG_TYPES.map(([what, value]) =>
    row(
      `phoneTo is ${what}`,
      post('distributor', (c) => cashIn(c, { phoneTo: value })),
      invalid('phoneTo'),
    ),
  ),
  row(
    'phoneTo is the phone as a number',
    post('distributor', () => ({ operationType: 'cash-in', amount: '5.00', phoneTo: 2348123456781 })),
    invalid('phoneTo'),
  ),
  ...[
    ['an empty string', ''],
    ['letters', '+234812345678a'],
    ['words', '+234 CALL NOW'],
    ['no leading +', '2348123456781'],
    ['a 00 prefix instead of +', '002348123456781'],
    ['two leading +', '++2348123456781'],
    ['50 characters', `+${'2'.repeat(49)}`],
    ['too few digits', '+1'],
    ['an unregistered number', UNREGISTERED_PHONE],
    ['text around the number', 'call +2348123456781 now'],
  ].map(([what, value]) =>
    row(
      `phoneTo is ${what}`,
      post('distributor', (c) => cashIn(c, { phoneTo: value })),
      invalid('phoneTo'),
    ),
  ),
  row(
    'a merchant pay-individual phoneTo has letters',
    post('merchant', (c) => payIndividual(c, { phoneTo: '+23481234567ab' })),
    invalid('phoneTo'),
  ),
  row(
    'a merchant pay-individual phoneTo is missing',
    post('merchant', (c) => payIndividual(c, { phoneTo: undefined })),
    invalid('phoneTo'),
  ),
  row(
    'a cash-in has both phoneTo and merchantToShortCode',
    post('distributor', (c) => cashIn(c, { merchantToShortCode: c.m.shortCode })),
    invalid('phoneTo'),
  ),
  row(
    'a cash-in has neither phoneTo nor merchantToShortCode',
    post('distributor', (c) => cashIn(c, { phoneTo: undefined })),
    invalid('phoneTo'),
  ),

  // short codes
  ...[
    ['"0"', '0'],
    ['"abc"', 'abc'],
    ['full-width digits "１２３"', '１２３'],
    ['12 digits', '123456789012'],
    ['an empty string', ''],
    ['a leading zero', '0123'],
    ['a negative number', -1],
    ['a fraction', 1.5],
    ['a boolean', true],
    ['an array', []],
    ['an object', {}],
    ['a short code no merchant has', '999999999'],
  ].map(([what, value]) =>
    row(
      `a cash-in merchantToShortCode is ${what as string}`,
      post('distributor', (c) => cashIn(c, { phoneTo: undefined, merchantToShortCode: value })),
      invalid('merchantToShortCode'),
    ),
  ),
  // null is absent (issue 18): with no phoneTo either, the cash-in has no destination, which the contract's rule 5 names on phoneTo.
  row(
    'a cash-in merchantToShortCode is null and phoneTo absent',
    post('distributor', (c) => cashIn(c, { phoneTo: undefined, merchantToShortCode: null })),
    invalid('phoneTo'),
  ),
  row(
    "a cash-in merchantToShortCode is a distributor's short code",
    post('distributor', (c) => cashIn(c, { phoneTo: undefined, merchantToShortCode: c.d.shortCode })),
    invalid('merchantToShortCode'),
  ),
  row(
    'a cash-out distributorToShortCode is "abc"',
    post('merchant', (c) => cashOut(c, { distributorToShortCode: 'abc' })),
    invalid('distributorToShortCode'),
  ),
  row(
    'a cash-out distributorToShortCode is missing',
    post('merchant', (c) => cashOut(c, { distributorToShortCode: undefined })),
    invalid('distributorToShortCode'),
  ),
  row(
    "a cash-out distributorToShortCode is a merchant's short code",
    post('merchant', (c) => cashOut(c, { distributorToShortCode: c.m2.shortCode })),
    invalid('distributorToShortCode'),
  ),
  row(
    "a pay-merchant merchantToShortCode is the payer's own",
    post('merchant', (c) => payMerchant(c, { merchantToShortCode: c.m.shortCode })),
    invalid('merchantToShortCode'),
  ),
  row(
    'a pay-merchant merchantToShortCode is null',
    post('merchant', (c) => payMerchant(c, { merchantToShortCode: null })),
    invalid('merchantToShortCode'),
  ),

  // cash-out-fulfillment fields
  ...WRONG_TYPES.map(([what, value]) =>
    row(
      `phoneFrom is ${what}`,
      post('distributor', (c) => cashOutFulfillment(c, { phoneFrom: value })),
      invalid('phoneFrom'),
    ),
  ),
  row(
    'phoneFrom is missing',
    post('distributor', (c) => cashOutFulfillment(c, { phoneFrom: undefined })),
    invalid('phoneFrom'),
  ),
  row(
    'phoneFrom is an unregistered number',
    post('distributor', (c) => cashOutFulfillment(c, { phoneFrom: UNREGISTERED_PHONE })),
    invalid('phoneFrom'),
  ),
  ...['card', 'CASH', '', ' cash'].map((value) =>
    row(
      `cashOutFulfillmentType is ${JSON.stringify(value)}`,
      post('distributor', (c) => cashOutFulfillment(c, { cashOutFulfillmentType: value })),
      invalid('cashOutFulfillmentType'),
    ),
  ),
  row(
    'cashOutFulfillmentType is null',
    post('distributor', (c) => cashOutFulfillment(c, { cashOutFulfillmentType: null })),
    invalid('cashOutFulfillmentType'),
  ),
  row(
    'cashOutFulfillmentType is missing',
    post('distributor', (c) => cashOutFulfillment(c, { cashOutFulfillmentType: undefined })),
    invalid('cashOutFulfillmentType'),
  ),
  ...[
    ['an empty string', ''],
    ['101 characters', 'x'.repeat(101)],
    ['a number', 123],
    ['null', null],
    ['a control character', 'rc\u0000pt'],
  ].map(([what, value]) =>
    row(
      `cashOutFulfillmentID is ${what as string}`,
      post('distributor', (c) => cashOutFulfillment(c, { cashOutFulfillmentID: value })),
      invalid('cashOutFulfillmentID'),
    ),
  ),
  row(
    'cashOutFulfillmentID is missing',
    post('distributor', (c) => cashOutFulfillment(c, { cashOutFulfillmentID: undefined })),
    invalid('cashOutFulfillmentID'),
  ),

  // memo
  ...[
    ['10,000 characters', 'x'.repeat(10_000)],
    ['257 characters', 'x'.repeat(257)],
    ['a NUL character', 'a\u0000b'],
    ['a BEL character', 'a\u0007b'],
    ['a line break', 'line\nbreak'],
    ['a DEL character', 'a\u007fb'],
    ['a C1 control (NEL)', 'a\u0085b'],
    ['a lone high surrogate \\ud800', '\ud800'],
    ['a lone low surrogate \\udc00', 'a\udc00'],
    ['an empty string', ''],
    ['only spaces', '   '],
    ['a number', 42],
    ['a boolean', false],
    ['an array', ['memo']],
    ['an object', { text: 'memo' }],
  ].map(([what, value]) =>
    row(
      `memo is ${what as string}`,
      post('distributor', (c) => cashIn(c, { memo: value })),
      invalid('memo'),
    ),
  ),
  row(
    'a merchant memo has a lone surrogate',
    post('merchant', (c) => payIndividual(c, { memo: 'pay \ud800' })),
    invalid('memo'),
  ),

  // fields that are not the operation's
  row(
    'the body has a misspelt field "memmo"',
    post('distributor', (c) => cashIn(c, { memmo: 'note' })),
    invalid('memmo'),
  ),
  row(
    'the body sets its own operationID',
    post('distributor', (c) => cashIn(c, { operationID: 'op_mine' })),
    invalid('operationID'),
  ),
  row(
    'the body sets a fee',
    post('merchant', (c) => payIndividual(c, { fee: '0.00' })),
    invalid('fee'),
  ),
  row(
    'the body sets a status',
    post('distributor', (c) => cashIn(c, { status: 'completed' })),
    invalid('status'),
  ),
  row(
    'a cash-in has a phoneFrom',
    post('distributor', (c) => cashIn(c, { phoneFrom: c.phone })),
    invalid('phoneFrom'),
  ),
  row(
    'a pay-individual has a merchantToShortCode',
    post('merchant', (c) => payIndividual(c, { merchantToShortCode: c.m2.shortCode })),
    invalid('merchantToShortCode'),
  ),
  row(
    'the JSON text has a "__proto__" key',
    post('distributor', (c) => cashInWithRaw(c, '"__proto__":{"polluted":true}')),
    invalid('__proto__'),
  ),
  row(
    'the JSON text has a "constructor" key',
    post('distributor', (c) => cashInWithRaw(c, '"constructor":{"prototype":{"polluted":true}}')),
    invalid('constructor'),
  ),
  row(
    'the JSON text has a "prototype" key',
    post('distributor', (c) => cashInWithRaw(c, '"prototype":{"polluted":true}')),
    invalid('prototype'),
  ),
  row(
    'a merchant body has a "__proto__" key',
    post('merchant', (c) => `${JSON.stringify(payIndividual(c)).slice(0, -1)},"__proto__":{"isAdmin":true}}`),
    invalid('__proto__'),
  ),

  // duplicate keys in the JSON text
  row(
    'the JSON text repeats "amount", the last one invalid',
    post(
      'distributor',
      (c) => `{"operationType":"cash-in","amount":"5.00","amount":"abc","phoneTo":${JSON.stringify(c.phone)}}`,
    ),
    invalid('amount'),
  ),
  row(
    'the JSON text repeats "operationType", the last one a merchant type',
    post(
      'distributor',
      (c) =>
        `{"operationType":"cash-in","operationType":"pay-merchant","amount":"5.00","phoneTo":${JSON.stringify(c.phone)}}`,
    ),
    invalid('operationType'),
  ),
  row(
    'the JSON text repeats "phoneTo", the last one invalid',
    post(
      'distributor',
      (c) => `{"operationType":"cash-in","amount":"5.00","phoneTo":${JSON.stringify(c.phone)},"phoneTo":"nope"}`,
    ),
    invalid('phoneTo'),
  ),
];

const BOM = Buffer.from([0xef, 0xbb, 0xbf]);

const syntaxRows: Row[] = [
  row(
    'the JSON is truncated',
    post('distributor', () => '{"operationType":"cash-in","amount":"5.00"'),
    notJson,
  ),
  row(
    'the JSON is cut inside a string',
    post('distributor', () => '{"operationType":"cash-'),
    notJson,
  ),
  row(
    'the JSON has a trailing comma in an object',
    post('distributor', (c) => `${JSON.stringify(cashIn(c)).slice(0, -1)},}`),
    notJson,
  ),
  row(
    'the JSON has a trailing comma in an array',
    post('distributor', () => '[1,2,]'),
    notJson,
  ),
  row(
    'the JSON uses single quotes',
    post('distributor', () => "{'operationType':'cash-in','amount':'5.00'}"),
    notJson,
  ),
  row(
    'the JSON has unquoted keys',
    post('distributor', () => '{operationType:"cash-in",amount:"5.00"}'),
    notJson,
  ),
  row(
    'the JSON has a NaN literal',
    post('distributor', (c) => `{"operationType":"cash-in","amount":NaN,"phoneTo":${JSON.stringify(c.phone)}}`),
    notJson,
  ),
  row(
    'the JSON has an Infinity literal',
    post('distributor', () => '{"operationType":"cash-in","amount":Infinity}'),
    notJson,
  ),
  row(
    'the JSON has a hexadecimal number',
    post('distributor', () => '{"operationType":"cash-in","amount":0x10}'),
    notJson,
  ),
  row(
    'the JSON has a comment',
    post('distributor', () => '{/* note */"operationType":"cash-in"}'),
    notJson,
  ),
  row(
    'the JSON has an invalid escape',
    post('distributor', () => '{"operationType":"cash-in","memo":"\\x41"}'),
    notJson,
  ),
  row(
    'the JSON has a raw tab inside a string',
    post('distributor', () => '{"operationType":"cash-in","memo":"a\tb"}'),
    notJson,
  ),
  row(
    'the body is two JSON objects',
    post('distributor', (c) => `${JSON.stringify(cashIn(c))}${JSON.stringify(cashIn(c))}`),
    notJson,
  ),
  row(
    'the JSON is followed by garbage',
    post('distributor', (c) => `${JSON.stringify(cashIn(c))} trailing`),
    notJson,
  ),
  row(
    'a UTF-8 BOM is followed by an invalid amount',
    post('distributor', (c) => Buffer.concat([BOM, Buffer.from(JSON.stringify(cashIn(c, { amount: '1e2' })))])),
    invalid('amount'),
  ),
  row(
    'a UTF-8 BOM sits inside the JSON',
    post('distributor', (c) => Buffer.concat([Buffer.from('{'), BOM, Buffer.from(JSON.stringify(cashIn(c)).slice(1))])),
    notJson,
  ),
  row(
    'invalid UTF-8 bytes start the body',
    post('distributor', (c) => Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(JSON.stringify(cashIn(c)))])),
    notJson,
  ),
  row(
    'invalid UTF-8 bytes are a key',
    post('distributor', (c) =>
      Buffer.concat([
        Buffer.from(`${JSON.stringify(cashIn(c)).slice(0, -1)},"`),
        Buffer.from([0xc3, 0x28]),
        Buffer.from('":1}'),
      ]),
    ),
    { status: 400 },
  ),
  row(
    'invalid UTF-8 bytes sit inside the memo string (Uint8Array body)',
    post('distributor', (c) =>
      Buffer.from(
        new Uint8Array([
          ...Buffer.from(`${JSON.stringify(cashIn(c)).slice(0, -1)},"memo":"note `),
          0xff,
          0xfe,
          0xc3,
          ...Buffer.from('"}'),
        ]),
      ),
    ),
    { status: 400 },
  ),
  row(
    'the body is empty with a JSON content type',
    post('distributor', () => ''),
    invalid('operationType'),
  ),
  row(
    'the body is only whitespace',
    post('distributor', () => ' \n\t '),
    { status: 400 },
  ),
  row(
    'the body is null',
    post('distributor', () => 'null'),
    notJson,
  ),
  row(
    'the body is an empty array',
    post('distributor', () => '[]'),
    notJson,
  ),
  row(
    'the body is an array of the valid object',
    post('distributor', (c) => [cashIn(c)]),
    notJson,
  ),
  row(
    'the body is a JSON string',
    post('distributor', () => '"string"'),
    notJson,
  ),
  row(
    'the body is a JSON number',
    post('distributor', () => '42'),
    notJson,
  ),
  row(
    'the body is true',
    post('distributor', () => 'true'),
    notJson,
  ),
  row(
    'the body is an empty object',
    post('distributor', () => '{}'),
    invalid('operationType'),
  ),
  row(
    'the merchant body is an empty object',
    post('merchant', () => '{}'),
    invalid('operationType'),
  ),
];

const memoOfBytes = (c: Ctx, bytes: number) => {
  const base = JSON.stringify(cashIn(c, { memo: '' }));
  return JSON.stringify(cashIn(c, { memo: 'x'.repeat(bytes - base.length) }));
};
/** Up to 2,000 distinct keys of one or two characters: as many as a 16 kB body can hold (a key costs 6 or 7 bytes). */
const manyKeys = (count: number, start = '{') => {
  const alphabet = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';
  const keys: string[] = [];
  for (const a of alphabet) keys.push(a);
  for (const a of alphabet) for (const b of alphabet) keys.push(a + b);
  return `${start}${keys
    .slice(0, count)
    .map((k) => `"_${k}":0`)
    .join(',')}}`;
};

const sizeRows: Row[] = [
  row(
    'the body is 17 kB of valid JSON',
    post('distributor', (c) => memoOfBytes(c, 17 * 1024)),
    tooLarge,
  ),
  row(
    'the body is 17 kB sent chunked without a Content-Length',
    (c) => ({ ...post('distributor', (cc) => memoOfBytes(cc, 17 * 1024))(c), chunked: true }),
    tooLarge,
  ),
  row(
    'the body is 1 MB',
    post('distributor', () => `{"memo":"${'x'.repeat(1024 * 1024)}"}`),
    tooLarge,
  ),
  row(
    'the body is 100,000-deep nested arrays (over the size limit)',
    post('distributor', () => `${'['.repeat(100_000)}${']'.repeat(100_000)}`),
    tooLarge,
  ),
  row(
    'the body is 8,000-deep nested arrays (within the size limit)',
    post('distributor', () => `${'['.repeat(8000)}${']'.repeat(8000)}`),
    notJson,
  ),
  row(
    'the body is 16,000 unclosed arrays (within the size limit)',
    post('distributor', () => '['.repeat(16_000)),
    notJson,
  ),
  row(
    'the amount is 8,000-deep nested arrays',
    post(
      'distributor',
      (c) =>
        `{"operationType":"cash-in","amount":${'['.repeat(8000)}${']'.repeat(8000)},"phoneTo":${JSON.stringify(c.phone)}}`,
    ),
    invalid('amount'),
  ),
  row(
    'the body is 2,700-deep nested objects',
    post('distributor', () => `${'{"a":'.repeat(2700)}1${'}'.repeat(2700)}`),
    invalid('operationType'),
  ),
  row(
    'the body is an object of 2,000 keys (within the size limit)',
    post('distributor', () => manyKeys(2000)),
    invalid('operationType'),
  ),
  row(
    'a valid cash-in carries 1,900 unknown keys',
    post('distributor', (c) => manyKeys(1900, `${JSON.stringify(cashIn(c)).slice(0, -1)},`)),
    invalid('_a'),
  ),
  row(
    'the body is an object of 5,000 keys (over the size limit)',
    post('distributor', () => `{${Array.from({ length: 5000 }, (_, i) => `"k${i}":0`).join(',')}}`),
    tooLarge,
  ),
];

const validBody = (c: Ctx) => JSON.stringify(cashIn(c));
const withHeaders = (headers: (c: Ctx) => Record<string, string>, body: BodyOf = validBody) =>
  post('distributor', body, { headers });

const headerRows: Row[] = [
  // Content-Type
  row(
    'the Content-Type is text/plain',
    withHeaders(() => ({ 'content-type': 'text/plain' })),
    invalid('Content-Type'),
  ),
  row(
    'the Content-Type is text/plain; charset=utf-8',
    withHeaders(() => ({ 'content-type': 'text/plain; charset=utf-8' })),
    invalid('Content-Type'),
  ),
  row(
    'the body is a form (application/x-www-form-urlencoded)',
    withHeaders(
      () => ({ 'content-type': 'application/x-www-form-urlencoded' }),
      (c) => `operationType=cash-in&amount=5.00&phoneTo=${encodeURIComponent(c.phone)}`,
    ),
    invalid('Content-Type'),
  ),
  row(
    'the body is multipart/form-data',
    withHeaders(
      () => ({ 'content-type': 'multipart/form-data; boundary=XyZ' }),
      () =>
        '--XyZ\r\nContent-Disposition: form-data; name="operationType"\r\n\r\ncash-in\r\n--XyZ\r\nContent-Disposition: form-data; name="amount"\r\n\r\n5.00\r\n--XyZ--\r\n',
    ),
    invalid('Content-Type'),
  ),
  row(
    'the Content-Type is application/json; charset=latin1',
    withHeaders(() => ({ 'content-type': 'application/json; charset=latin1' })),
    invalid('Content-Type'),
  ),
  row(
    'the Content-Type is application/json; charset=utf-16 with a UTF-8 body',
    withHeaders(() => ({ 'content-type': 'application/json; charset=utf-16' })),
    { status: 400 },
  ),
  row(
    'the Content-Type is missing',
    (c) => {
      const req = post('distributor', validBody)(c);
      delete req.headers['content-type'];
      return req;
    },
    invalid('Content-Type'),
  ),
  row(
    'the Content-Type is application/xml',
    withHeaders(
      () => ({ 'content-type': 'application/xml' }),
      () => '<operation type="cash-in"/>',
    ),
    invalid('Content-Type'),
  ),
  row(
    'the Content-Type is application/vnd.api+json',
    withHeaders(() => ({ 'content-type': 'application/vnd.api+json' })),
    invalid('Content-Type'),
  ),
  row(
    'the Content-Type is not a media type',
    withHeaders(() => ({ 'content-type': 'json' })),
    invalid('Content-Type'),
  ),
  row(
    'the Content-Type is empty',
    withHeaders(() => ({ 'content-type': '' })),
    invalid('Content-Type'),
  ),
  // Content-Encoding
  row(
    'the body claims gzip but is not compressed',
    withHeaders(() => ({ 'content-encoding': 'gzip' })),
    { status: 400 },
  ),
  row(
    'the body claims deflate but is not compressed',
    withHeaders(() => ({ 'content-encoding': 'deflate' })),
    { status: 400 },
  ),
  row(
    'the body claims br but is not compressed',
    withHeaders(() => ({ 'content-encoding': 'br' })),
    { status: 400 },
  ),
  row(
    'the body claims an unknown encoding',
    withHeaders(() => ({ 'content-encoding': 'compress' })),
    invalid('Content-Encoding'),
  ),
  // Compressed bodies are refused outright (no zip bombs), whatever they hold.
  row(
    'a gzip body holds an invalid amount',
    withHeaders(
      () => ({ 'content-encoding': 'gzip' }),
      (c) => gzipSync(JSON.stringify(cashIn(c, { amount: '-5' }))),
    ),
    invalid('Content-Encoding'),
  ),
  // Authorization
  row(
    'there is no Authorization header',
    (c) => {
      const req = post('distributor', validBody)(c);
      delete req.headers.authorization;
      return req;
    },
    unauthorized,
  ),
  row(
    'the Authorization header is only "Bearer"',
    withHeaders(() => ({ authorization: 'Bearer' })),
    unauthorized,
  ),
  row(
    'the Authorization header is the key without a scheme',
    withHeaders((c) => ({ authorization: c.dKey })),
    unauthorized,
  ),
  row(
    'the Authorization header has text after the key',
    withHeaders((c) => ({ authorization: `Bearer  ${c.dKey} extra` })),
    unauthorized,
  ),
  row(
    'the Authorization header carries two keys',
    withHeaders((c) => ({ authorization: `Bearer ${c.dKey}, Bearer ${c.mKey}` })),
    unauthorized,
  ),
  row(
    'the Authorization scheme is Basic',
    withHeaders(() => ({ authorization: `Basic ${Buffer.from('user:pass').toString('base64')}` })),
    unauthorized,
  ),
  row(
    'the Authorization scheme is Token',
    withHeaders((c) => ({ authorization: `Token ${c.dKey}` })),
    unauthorized,
  ),
  row(
    'the Authorization header is 10 kB',
    withHeaders(() => ({ authorization: `Bearer ${'a'.repeat(10 * 1024)}` })),
    unauthorized,
  ),
  row(
    'the key has one character more',
    withHeaders((c) => ({ authorization: `Bearer ${c.dKey}x` })),
    unauthorized,
  ),
  row(
    'the key has the right id and a wrong secret',
    withHeaders((c) => ({ authorization: `Bearer ${c.dKey.split('.')[0]}.${'A'.repeat(43)}` })),
    unauthorized,
  ),
  row(
    'the key id is unknown',
    withHeaders(() => ({ authorization: `Bearer key_AAAAAAAAAAAAAAAA.${'B'.repeat(43)}` })),
    unauthorized,
  ),
  row(
    'the key is only a dot',
    withHeaders(() => ({ authorization: 'Bearer .' })),
    unauthorized,
  ),
  row(
    'the key has a Latin-1 character',
    withHeaders((c) => ({ authorization: `Bearer ${c.dKey.slice(0, -1)}\u00e9` })),
    unauthorized,
  ),
  row(
    'the key of the merchant is used on the distributor path',
    withHeaders((c) => ({ authorization: `Bearer ${c.mKey}` })),
    forbidden,
  ),
  row(
    'a key without Perform Operations is used',
    withHeaders((c) => ({ authorization: `Bearer ${c.readOnlyKey}` })),
    forbidden,
  ),
  // X-Request-Id garbage: the request is refused for its body, and the id is not echoed
  ...[
    ['markup', '<script>alert(1)</script>'],
    ['65 characters', 'a'.repeat(65)],
    ['spaces', 'id with spaces'],
    ['a path', '../../../etc/passwd'],
    ['Latin-1 bytes', '\u00ff\u00fe'],
    ['8 kB', 'r'.repeat(8 * 1024)],
    ['a lookup string', '${jndi:ldap://example.invalid/a}'],
    ['an empty value', ''],
  ].map(([what, value]) =>
    row(
      `the X-Request-Id is ${what}`,
      withHeaders(
        () => ({ 'x-request-id': value! }),
        (c) => cashIn(c, { amount: 'abc' }),
      ),
      invalid('amount'),
    ),
  ),
  row(
    'the X-Request-Id is a sane token (echoed)',
    withHeaders(
      () => ({ 'x-request-id': 'client-req_42.a:b' }),
      (c) => cashIn(c, { amount: 'abc' }),
    ),
    invalid('amount'),
  ),
  // Idempotency-Key
  row(
    'the Idempotency-Key is 256 characters',
    withHeaders(() => ({ 'idempotency-key': 'k'.repeat(256) })),
    invalid('Idempotency-Key'),
  ),
  row(
    'the Idempotency-Key has a space',
    withHeaders(() => ({ 'idempotency-key': 'my key' })),
    invalid('Idempotency-Key'),
  ),
  row(
    'the Idempotency-Key has a Latin-1 character',
    withHeaders(() => ({ 'idempotency-key': 'cl\u00e9' })),
    invalid('Idempotency-Key'),
  ),
];

const to = (path: (c: Ctx) => string, method = 'POST', body: BodyOf = validBody) =>
  post('distributor', body, { path, method });
const dPath = (c: Ctx) => `/api/v1/distributors/${c.d.ref.id}`;

const pathRows: Row[] = [
  row(
    'the path names "operation" (singular)',
    to((c) => `${dPath(c)}/operation`),
    noSuchEndpoint,
  ),
  row(
    'the path stops at the distributor',
    to((c) => dPath(c)),
    noSuchEndpoint,
  ),
  row(
    'the path is /api/v1/distributors',
    to(() => '/api/v1/distributors'),
    noSuchEndpoint,
  ),
  row(
    'the path is /api/v1',
    to(() => '/api/v1'),
    noSuchEndpoint,
  ),
  row(
    'the path is an unknown resource under /api/v1',
    to(() => '/api/v1/transfers'),
    noSuchEndpoint,
  ),
  row(
    'the path has a segment after operations',
    to((c) => `${dPath(c)}/operations/extra`),
    noSuchEndpoint,
  ),
  row(
    'the path is the distributor balance (GET only)',
    to((c) => `${dPath(c)}/balance`),
    noSuchEndpoint,
  ),
  row(
    'the path is the merchant payments (GET only)',
    (c) => post('merchant', validBody, { path: (cc) => `/api/v1/merchants/${cc.m.ref.id}/payments` })(c),
    noSuchEndpoint,
  ),
  row(
    'the path is under /api/v2',
    to((c) => `/api/v2/distributors/${c.d.ref.id}/operations`),
    noSuchEndpoint,
  ),
  row(
    'the path is under /api without a version',
    to((c) => `/api/distributors/${c.d.ref.id}/operations`),
    noSuchEndpoint,
  ),
  row(
    'the path ID has a broken percent-encoding %E0%A4%A',
    to(() => '/api/v1/distributors/%E0%A4%A/operations'),
    { status: 400 },
  ),
  row('the path ID has a broken percent-encoding and no key is sent', (c) => {
    const req = to(() => '/api/v1/distributors/%E0%A4%A/operations')(c);
    delete req.headers.authorization;
    return req;
  }),
  row(
    'the path ID is a lone %',
    to(() => '/api/v1/distributors/%/operations'),
    { status: 400 },
  ),
  row(
    'the path ID is an encoded NUL',
    to(() => '/api/v1/distributors/%00/operations'),
    forbidden,
  ),
  row(
    'the path ID is 2,000 characters',
    to(() => `/api/v1/distributors/${'x'.repeat(2000)}/operations`),
    forbidden,
  ),
  row(
    "the path ID is the merchant's ID",
    to((c) => `/api/v1/distributors/${c.m.ref.id}/operations`),
    forbidden,
  ),
  row(
    'the distributor key posts to its ID on the merchants path',
    to((c) => `/api/v1/merchants/${c.d.ref.id}/operations`),
    forbidden,
  ),
  row(
    'the path has a .. segment',
    to((c) => `${dPath(c)}/../${c.d.ref.id}/operations`),
    noSuchEndpoint,
  ),
  row(
    'the path climbs out to the merchant with ..',
    to((c) => `/api/v1/distributors/../merchants/${c.m.ref.id}/operations`),
    noSuchEndpoint,
  ),
  row(
    'the path has an encoded .. segment',
    to((c) => `${dPath(c)}/%2e%2e/${c.d.ref.id}/operations`),
    noSuchEndpoint,
  ),
  row(
    'the path ends with /..',
    to((c) => `${dPath(c)}/operations/..`),
    noSuchEndpoint,
  ),
  row(
    'the path has an encoded slash inside the ID',
    to((c) => `${dPath(c)}%2Foperations`),
    noSuchEndpoint,
  ),
  row(
    'the path has a double slash',
    to((c) => `/api/v1//distributors/${c.d.ref.id}/operations`),
    noSuchEndpoint,
  ),
  ...['PUT', 'DELETE', 'PATCH'].map((method) =>
    row(
      `the method is ${method} on the distributor operations path`,
      to((c) => `${dPath(c)}/operations`, method),
    ),
  ),
  ...['PUT', 'DELETE', 'PATCH'].map((method) =>
    row(`the method is ${method} on the merchant operations path`, (c) =>
      post('merchant', (cc) => payIndividual(cc), {
        method,
        path: (cc) => `/api/v1/merchants/${cc.m.ref.id}/operations`,
      })(c),
    ),
  ),
  row(
    'the path is outside /api',
    to(() => '/v1/distributors/x/operations'),
    { status: 404, type: '/problems/not-found' },
  ),
  row(
    'the path is /apix',
    to(() => '/apix'),
    { status: 404, type: '/problems/not-found' },
  ),
  row(
    'the health check is POSTed to',
    to(() => '/health'),
    { status: 404, type: '/problems/not-found' },
  ),
  // query strings: ignored by the endpoint, and never parsed into nested objects
  ...[
    'a[b]=c',
    '__proto__=x',
    '__proto__[polluted]=1',
    'constructor[prototype][polluted]=1',
    'amount=5.00&operationType=cash-in',
    `q=${'%'.repeat(3)}`,
    `long=${'q'.repeat(4000)}`,
  ].map((query) =>
    row(
      `the query string is ?${query.slice(0, 40)} and the amount is invalid`,
      to(
        (c) => `${dPath(c)}/operations?${query}`,
        'POST',
        (c) => cashIn(c, { amount: '1e2' }),
      ),
      invalid('amount'),
    ),
  ),
];

const TABLE: Row[] = [...bodyRows, ...syntaxRows, ...sizeRows, ...headerRows, ...pathRows];

const SANE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,64}$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

function expectProblem(answer: Answer, req: Req, expected: Expect) {
  const context = `${answer.status} ${answer.text.slice(0, 500)}`;
  expect(answer.status, context).toBeGreaterThanOrEqual(400);
  expect(answer.status, context).toBeLessThan(500);
  if (expected.status !== undefined) expect(answer.status, context).toBe(expected.status);
  expect(answer.headers['content-type'], context).toMatch(/^application\/problem\+json(;|$)/);

  const problem = JSON.parse(answer.text) as Record<string, unknown>;
  expect(problem.type, context).toMatch(/^\/problems\/[a-z-]+$/);
  if (expected.type !== undefined) expect(problem.type, context).toBe(expected.type);
  expect(problem.status, context).toBe(answer.status);
  expect(typeof problem.title === 'string' && problem.title.length > 0, context).toBe(true);
  expect(typeof problem.detail === 'string' && problem.detail.length > 0, context).toBe(true);

  if (problem.type === '/problems/input-validation-problems') {
    expect(answer.status).toBe(400);
    const errors = problem.errors as Array<Record<string, unknown>>;
    expect(Array.isArray(errors) && errors.length > 0, context).toBe(true);
    for (const error of errors) {
      expect(Object.keys(error).sort()).toEqual(['detail', 'field', 'type']);
      expect(error.type).toBe('/problems/input-validation-problems/invalid-field');
      expect(typeof error.field === 'string' && error.field.length > 0).toBe(true);
      expect(typeof error.detail === 'string' && error.detail.length > 0).toBe(true);
    }
    if (expected.field !== undefined)
      expect(
        errors.map((e) => e.field),
        context,
      ).toContain(expected.field);
  } else {
    expect(problem.errors, context).toBeUndefined();
  }
  if (answer.status === 401) expect(answer.headers['www-authenticate']).toMatch(/^Bearer realm="wallet-ops"/);

  // Every answer carries a request id: the client's when it is a sane token, else one of ours.
  const sent = req.headers['x-request-id'];
  const requestId = answer.headers['x-request-id'];
  if (sent !== undefined && SANE_REQUEST_ID.test(sent)) {
    expect(requestId).toBe(sent);
  } else {
    expect(requestId).toMatch(UUID);
  }
}

// The tests -------------------------------------------------------------------------------------------------

describe('malformed requests to the create-operation endpoints', () => {
  let c: Ctx;
  /** operationIDs of requests that were (wrongly) answered with a success. */
  const acceptedByMistake: string[] = [];
  const prototypeKeysBefore = Object.getOwnPropertyNames(Object.prototype).sort();

  beforeAll(async () => {
    const sys = await startTestSystem({}, undefined, WITHOUT_EXECUTOR);
    const d = await sys.party('distributor');
    const m = await sys.party('merchant');
    const m2 = await sys.party('merchant');
    const phone = await sys.individual(REGISTERED_PHONE);
    const dKey = (await d.key({ maxTransactionAmount: D_MAX_TRANSACTION, maxDailyVolume: '100000.00' })).apiKey;
    const mKey = (await m.key()).apiKey;
    const readOnlyKey = (await d.key({ permissions: 'read-balance,read-transactions' })).apiKey;
    await sys.credit(d.wallet, FUNDS);
    await sys.credit(m.wallet, FUNDS);
    await sys.credit({ kind: 'individual', id: phone }, '1000.00');
    c = { sys, d, m, m2, dKey, mKey, readOnlyKey, phone };
  });
  afterAll(async () => c?.sys.close());

  it(`has at least 120 requests in its table (it has ${TABLE.length})`, () => {
    expect(TABLE.length).toBeGreaterThanOrEqual(120);
    expect(new Set(TABLE.map((r) => r.name)).size).toBe(TABLE.length);
  });

  describe('every malformed request is answered with a 4xx problem and never a 5xx', () => {
    for (const r of TABLE)
      it(`when ${r.name}, then it is answered with a 4xx problem`, async () => {
        const req = r.request(c);
        const answer = await send(c.sys.baseUrl, req);
        if (answer.status >= 200 && answer.status < 300) {
          try {
            const id = (JSON.parse(answer.text) as { operationID?: unknown }).operationID;
            if (typeof id === 'string') acceptedByMistake.push(id);
          } catch {
            // not an operation
          }
        }
        expectProblem(answer, req, r);
      });
  });

  describe('after the malformed requests', () => {
    it('when they have all been answered, then no refused request stored an operation', async () => {
      const stored = await c.sys.system.stores.eventStore.readAll({ filter: { eventTypes: ['OperationRequested'] } });
      expect(stored.map((e) => (e.data as { operationID: string }).operationID).sort()).toEqual(
        [...acceptedByMistake].sort(),
      );
    });

    it("when they have all been answered, then the payers' wallets hold nothing for refused requests and keep their funds", async () => {
      const deps = { store: c.sys.system.stores.eventStore };
      for (const wallet of [c.d.wallet, c.m.wallet]) {
        const { state } = await loadState(deps, streams.wallet(wallet), walletState);
        expect(state.balance).toBe('1000000');
        if (acceptedByMistake.length === 0) expect(Number(state.held)).toBe(0);
      }
    });

    it('when "__proto__" and "constructor" keys and query strings were sent, then Object.prototype is not polluted', () => {
      expect(Object.getOwnPropertyNames(Object.prototype).sort()).toEqual(prototypeKeysBefore);
      expect(({} as Record<string, unknown>).polluted).toBeUndefined();
      expect(({} as Record<string, unknown>).isAdmin).toBeUndefined();
      expect(({} as Record<string, unknown>).x).toBeUndefined();
    });

    it('when the server has answered them all, then it still serves its health check', async () => {
      const answer = await send(c.sys.baseUrl, { method: 'GET', path: '/health', headers: {} });
      expect(answer.status).toBe(200);
      expect(JSON.parse(answer.text)).toMatchObject({ status: 'ok' });
    });

    it.each([
      ['a distributor cash-in to an individual', 'distributor', (cc: Ctx) => cashIn(cc, { memo: 'still works' })],
      [
        'a distributor cash-in to a merchant',
        'distributor',
        (cc: Ctx) => cashIn(cc, { phoneTo: undefined, merchantToShortCode: cc.m.shortCode }),
      ],
      ['a distributor cash-out-fulfillment', 'distributor', (cc: Ctx) => cashOutFulfillment(cc)],
      ['a merchant cash-out', 'merchant', (cc: Ctx) => cashOut(cc)],
      ['a merchant pay-merchant', 'merchant', (cc: Ctx) => payMerchant(cc)],
      ['a merchant pay-individual', 'merchant', (cc: Ctx) => payIndividual(cc, { memo: null })],
    ] as const)('when %s is sent with the same key and a valid body, then it is created', async (_name, who, body) => {
      const req = post(who, body)(c);
      const answer = await send(c.sys.baseUrl, req);
      expect(answer.status, answer.text).toBe(200);
      expect(answer.headers['content-type']).toMatch(/^application\/json/);
      expect(JSON.parse(answer.text)).toEqual({ operationID: expect.stringMatching(/^op_[0-9a-f]{32}$/) });
    });
  });

  describe('edge cases the code accepts, asserted as it behaves', () => {
    const created = (answer: Answer) => {
      expect(answer.status, answer.text).toBe(200);
      expect(JSON.parse(answer.text)).toEqual({ operationID: expect.stringMatching(/^op_/) });
    };

    // RFC 7235 section 2.1: the auth-scheme is case-insensitive, so "bearer" is the Bearer scheme.
    it('when the scheme is written "bearer" in lower case, then the key is accepted (auth schemes are case-insensitive)', async () => {
      created(
        await send(
          c.sys.baseUrl,
          post('distributor', validBody, { headers: (cc) => ({ authorization: `bearer ${cc.dKey}` }) })(c),
        ),
      );
    });

    // RFC 8259 section 8.1: a parser MAY ignore a byte order mark rather than treat it as an error.
    it('when a valid body starts with a UTF-8 BOM, then the BOM is ignored and the operation is created', async () => {
      created(
        await send(c.sys.baseUrl, post('distributor', (cc) => Buffer.concat([BOM, Buffer.from(validBody(cc))]))(c)),
      );
    });

    // Express routes are not strict: "/operations/" is the same route as "/operations".
    it('when the operations path has a trailing slash, then it is the same endpoint', async () => {
      created(await send(c.sys.baseUrl, to((cc) => `${dPath(cc)}/operations/`)(c)));
    });

    it('when a valid body is posted with a query string ?__proto__[polluted]=1&a[b]=c, then the query is ignored and nothing is polluted', async () => {
      created(
        await send(
          c.sys.baseUrl,
          to((cc) => `${dPath(cc)}/operations?__proto__[polluted]=1&a[b]=c&constructor[prototype][polluted]=1`)(c),
        ),
      );
      expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    });

    it('when memo is null, then it is taken as no memo', async () => {
      created(await send(c.sys.baseUrl, post('distributor', (cc) => cashIn(cc, { memo: null }))(c)));
    });
  });
});

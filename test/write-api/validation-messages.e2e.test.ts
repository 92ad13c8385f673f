import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestSystem, type TestSystem, WITHOUT_EXECUTOR } from '../support/system.ts';

/**
 * Every field of every create body and every list query, with every kind of wrong value a client sends:
 * the errors[] item names the field and says what is really wrong. "is required" only for a field that is
 * absent; a wrong type says what type is wanted; `null` for an optional field is absent (issue 18).
 */

const MISSING = Symbol('missing');
type Value = unknown | typeof MISSING;

interface BodyRow {
  party: 'distributor' | 'merchant';
  base: Record<string, unknown>;
  field: string;
  value: Value;
  /** The errors[] item's detail, or 'accepted' when the field must not be named in any error. */
  expect: RegExp | 'accepted';
}

const PHONE = '+2348123456781';
const bodies: Record<
  string,
  { party: 'distributor' | 'merchant'; base: Record<string, unknown>; required: string[]; optional: string[] }
> = {
  'cash-in': {
    party: 'distributor',
    base: { operationType: 'cash-in', amount: '10.00', phoneTo: PHONE },
    required: ['amount'],
    optional: ['memo'],
  },
  'cash-out-fulfillment': {
    party: 'distributor',
    base: {
      operationType: 'cash-out-fulfillment',
      amount: '10.00',
      phoneFrom: PHONE,
      cashOutFulfillmentType: 'cash',
      cashOutFulfillmentID: 'RCPT-1',
    },
    required: ['amount', 'phoneFrom', 'cashOutFulfillmentType', 'cashOutFulfillmentID'],
    optional: ['memo'],
  },
  'cash-out': {
    party: 'merchant',
    base: { operationType: 'cash-out', amount: '10.00', distributorToShortCode: '4521' },
    required: ['amount', 'distributorToShortCode'],
    optional: ['memo'],
  },
  'pay-merchant': {
    party: 'merchant',
    base: { operationType: 'pay-merchant', amount: '10.00', merchantToShortCode: '4521' },
    required: ['amount', 'merchantToShortCode'],
    optional: ['memo'],
  },
  'pay-individual': {
    party: 'merchant',
    base: { operationType: 'pay-individual', amount: '10.00', phoneTo: PHONE },
    required: ['amount', 'phoneTo'],
    optional: ['memo'],
  },
};

/** Per field: the wrong-type message, a badly formatted value and its message, a too-long value and its message. */
const fieldRules: Record<
  string,
  { type: RegExp; aNumber?: RegExp; format?: [unknown, RegExp]; tooLong?: [unknown, RegExp] }
> = {
  amount: {
    type: /^amount must be a string \(a decimal in quotes/,
    format: ['1e3', /^amount must be a decimal string of digits/],
    tooLong: ['1.234', /^amount has more than 2 decimal places$/],
  },
  phoneTo: {
    type: /^phoneTo must be a string of digits in international format/,
    format: ['08123456781', /^phoneTo must be in international format/],
  },
  phoneFrom: {
    type: /^phoneFrom must be a string of digits in international format/,
    format: ['abc', /^phoneFrom must be in international format/],
  },
  // Short codes also take a whole number (an extension): 4521 is then looked up, and unknown here.
  merchantToShortCode: {
    type: /^merchantToShortCode must be a string of digits or a whole number/,
    aNumber: /^merchantToShortCode 4521 is not the short code of any merchant$/,
    format: ['ab12', /^merchantToShortCode must be a number of 1 to 9 digits/],
    tooLong: ['1234567890', /^merchantToShortCode must be a number of 1 to 9 digits/],
  },
  distributorToShortCode: {
    type: /^distributorToShortCode must be a string of digits or a whole number/,
    aNumber: /^distributorToShortCode 4521 is not the short code of any distributor$/,
    format: ['0452', /^distributorToShortCode must be a number of 1 to 9 digits/],
  },
  cashOutFulfillmentType: {
    type: /^cashOutFulfillmentType must be "cash"/,
    format: ['card', /^cashOutFulfillmentType must be "cash"/],
  },
  cashOutFulfillmentID: {
    type: /^cashOutFulfillmentID must be a string, not (a number|a boolean|an object)$/,
    tooLong: ['x'.repeat(101), /^cashOutFulfillmentID must be at most 100 characters$/],
  },
  memo: {
    type: /^memo must be a string, not (a number|a boolean|an object)$/,
    // A right-to-left override would make the memo read "invoice exe.pdf" where it holds "invoice \u202Efdp.exe".
    format: [
      'invoice \u202Efdp.exe',
      /^memo must not contain invisible or direction-changing characters \(U\+202E at character 9\)$/,
    ],
    tooLong: ['x'.repeat(257), /^memo must be at most 256 characters$/],
  },
};

/** A value in a test name, with invisible characters escaped (a right-to-left override would turn the name around). */
const shown = (value: unknown) =>
  JSON.stringify(value).replace(
    /\p{Cf}/gu,
    (c) => `\\u${c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`,
  );

function bodyRows(): Array<[string, BodyRow]> {
  const rows: Array<[string, BodyRow]> = [];
  for (const [operationType, { party, base, required, optional }] of Object.entries(bodies)) {
    const add = (what: string, field: string, value: Value, expected: RegExp | 'accepted') =>
      rows.push([`${operationType} ${field}: ${what}`, { party, base, field, value, expect: expected }]);
    for (const field of [...required, ...optional]) {
      const rules = fieldRules[field]!;
      const isRequired = required.includes(field);
      add('missing', field, MISSING, isRequired ? new RegExp(`^${field} is required$`) : 'accepted');
      add(
        'null',
        field,
        null,
        isRequired
          ? field === 'cashOutFulfillmentType'
            ? rules.type
            : new RegExp(`^${field} must be .*, not null$`)
          : 'accepted',
      );
      add('a number', field, 4521, rules.aNumber ?? rules.type);
      add('a boolean', field, true, rules.type);
      add('an object', field, { value: '1' }, rules.type);
      if (rules.format) add(`badly formatted (${shown(rules.format[0])})`, field, rules.format[0], rules.format[1]);
      if (rules.tooLong) add('too long', field, rules.tooLong[0], rules.tooLong[1]);
    }
    add('unknown field', 'memmo', 'x', /^memmo is not a field of this operation type$/);
    add(
      'operationType not allowed for the party',
      'operationType',
      party === 'distributor' ? 'pay-merchant' : 'cash-in',
      /^operationType must be one of /,
    );
    add('operationType a number', 'operationType', 1, /^operationType must be a string, one of .*, not a number$/);
    add('operationType null', 'operationType', null, /^operationType must be a string, one of .*, not null$/);
  }
  rows.push([
    'cash-in phoneTo: null with merchantToShortCode',
    {
      party: 'distributor',
      base: { operationType: 'cash-in', amount: '10.00', merchantToShortCode: '4521' },
      field: 'phoneTo',
      value: null,
      expect: 'accepted',
    },
  ]);
  rows.push([
    'cash-in merchantToShortCode: null with phoneTo',
    {
      party: 'distributor',
      base: bodies['cash-in']!.base,
      field: 'merchantToShortCode',
      value: null,
      expect: 'accepted',
    },
  ]);
  rows.push([
    'cash-in merchantToShortCode: a number',
    {
      party: 'distributor',
      base: { operationType: 'cash-in', amount: '10.00' },
      field: 'merchantToShortCode',
      value: 4521,
      expect: fieldRules.merchantToShortCode!.aNumber!,
    },
  ]);
  rows.push([
    'cash-in merchantToShortCode: a fraction',
    {
      party: 'distributor',
      base: { operationType: 'cash-in', amount: '10.00' },
      field: 'merchantToShortCode',
      value: 45.21,
      expect: fieldRules.merchantToShortCode!.type,
    },
  ]);
  rows.push([
    'cash-in merchantToShortCode: a number of 10 digits',
    {
      party: 'distributor',
      base: { operationType: 'cash-in', amount: '10.00' },
      field: 'merchantToShortCode',
      value: 1234567890,
      expect: fieldRules.merchantToShortCode!.tooLong![1],
    },
  ]);
  rows.push([
    'cash-in merchantToShortCode: badly formatted',
    {
      party: 'distributor',
      base: { operationType: 'cash-in', amount: '10.00' },
      field: 'merchantToShortCode',
      value: 'ab',
      expect: fieldRules.merchantToShortCode!.format![1],
    },
  ]);
  rows.push([
    'cash-in phoneTo and merchantToShortCode both null',
    {
      party: 'distributor',
      base: { operationType: 'cash-in', amount: '10.00', merchantToShortCode: null },
      field: 'phoneTo',
      value: null,
      expect: /^one of phoneTo or merchantToShortCode is required$/,
    },
  ]);
  rows.push([
    'cash-in phoneTo a number (present, wrong type)',
    {
      party: 'distributor',
      base: { operationType: 'cash-in', amount: '10.00' },
      field: 'phoneTo',
      value: 2348123456781,
      expect: fieldRules.phoneTo!.type,
    },
  ]);
  return rows;
}

describe('validation messages name the real problem', () => {
  let sys: TestSystem;
  const keys: Record<'distributor' | 'merchant', { path: string; apiKey: string }> = {} as never;

  beforeAll(async () => {
    sys = await startTestSystem({ ASSET_SCALE: '2' }, undefined, WITHOUT_EXECUTOR);
    for (const type of ['distributor', 'merchant'] as const) {
      const party = await sys.party(type);
      const { apiKey } = await party.key();
      keys[type] = { path: `/api/v1/${type}s/${party.ref.id}`, apiKey };
    }
  });
  afterAll(async () => sys.close());

  it.each(bodyRows())('%s', async (_name, row) => {
    const body: Record<string, unknown> = { ...row.base };
    if (row.value === MISSING) delete body[row.field];
    else body[row.field] = row.value;
    const { path, apiKey } = keys[row.party];
    const r = await call(sys.baseUrl, 'POST', `${path}/operations`, { apiKey, body });
    expect(r.status, JSON.stringify(r.body)).toBeLessThan(500);
    const items = (r.body?.errors ?? []) as Array<{ field: string; detail: string }>;
    const item = items.find((e) => e.field === row.field);
    if (row.expect === 'accepted') {
      expect(item, JSON.stringify(r.body)).toBeUndefined();
      // The body passes validation: what follows is the lookup of a phone or short code that is not registered here.
      for (const other of items)
        expect(other.detail, JSON.stringify(r.body)).toMatch(
          / is not a registered individual wallet$| is not the short code of any (merchant|distributor)$/,
        );
    } else {
      expect(r.status, JSON.stringify(r.body)).toBe(400);
      expect(item?.detail, JSON.stringify(r.body)).toMatch(row.expect);
      // Only the field under test is wrong.
      expect(items.map((e) => e.field)).toEqual([row.field]);
    }
  });

  const queries: Array<[string, string, string, RegExp]> = [];
  for (const [endpoint, extra] of [
    ['distributor operations', false],
    ['merchant operations', false],
    ['merchant payments', true],
  ] as const) {
    queries.push(
      [endpoint, 'limit=abc', 'limit', /^limit must be a whole number$/],
      [endpoint, 'limit=', 'limit', /^limit must be a whole number$/],
      [endpoint, 'limit=0', 'limit', /^limit must be at least 1$/],
      [endpoint, 'limit=1001', 'limit', /^limit must be at most 1000$/],
      [endpoint, 'limit=1&limit=2', 'limit', /^limit must appear at most once$/],
      [endpoint, 'offset=-1', 'offset', /^offset must be a whole number$/],
      [endpoint, 'offset=1.5', 'offset', /^offset must be a whole number$/],
      [endpoint, 'offset=1&offset=2', 'offset', /^offset must appear at most once$/],
      [endpoint, 'limt=5', 'limt', /^limt is not a query parameter of this endpoint$/],
    );
    if (extra)
      queries.push(
        [endpoint, `search=${'x'.repeat(101)}`, 'search', /^search must be at most 100 characters$/],
        [endpoint, 'search=a&search=b', 'search', /^search must appear at most once$/],
      );
    else queries.push([endpoint, 'search=a', 'search', /^search is not a query parameter of this endpoint$/]);
  }

  it.each(queries)('%s ?%s', async (endpoint, query, field, expected) => {
    const [type, list] = endpoint.split(' ') as ['distributor' | 'merchant', string];
    const { path, apiKey } = keys[type];
    const r = await call(sys.baseUrl, 'GET', `${path}/${list}?${query}`, { apiKey });
    expect(r.status, JSON.stringify(r.body)).toBe(400);
    const items = r.body.errors as Array<{ field: string; detail: string }>;
    expect(items.map((e) => e.field)).toEqual([field]);
    expect(items[0]!.detail).toMatch(expected);
  });
});

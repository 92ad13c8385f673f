import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { streams } from '../../src/domain/streams.ts';
import { call, startTestSystem, type TestParty, type TestSystem, WITHOUT_EXECUTOR } from '../support/system.ts';

/**
 * The same create requests as four common JSON libraries write them by default, byte for byte (issue 18):
 * - Jackson (ObjectMapper on a POJO): compact, fields in declaration order, unset fields as `null`,
 *   non-ASCII as raw UTF-8, a BigDecimal as a number literal (`10.00`);
 * - System.Text.Json (JsonSerializerDefaults.Web, as HttpClient's PostAsJsonAsync uses): camelCase, compact,
 *   unset fields as `null`, and the default encoder's escapes: non-ASCII and HTML-sensitive characters,
 *   `+` included, as `\uXXXX` with upper-case hex (`"\u002B2348…"`); a decimal as a number literal;
 * - Go encoding/json on a struct of *string without omitempty: compact, struct order, nil as `null`, `<`,
 *   `>` and `&` escaped as `\u003c`, `\u003e`, `\u0026`; an int as a number;
 * - Python's json.dumps: `", "` and `": "` separators, None as `null`, ensure_ascii (`\u00e9`), an int as a
 *   number.
 * Each is answered as documented: `null` for an unset optional field is absent, escapes are decoded, and a
 * number where the contract wants a string is refused with a message that says "must be a string" (short codes
 * excepted: a whole number is accepted, as responses carry merchantShortCode).
 */

/** A number literal written as the library writes it (JSON.stringify cannot write `10.00`). */
class Num {
  readonly text: string;
  constructor(text: string) {
    this.text = text;
  }
}
type Value = string | null | Num;
type Fields = Array<[string, Value]>;

function escapeString(value: string, escape: (char: string) => string | undefined): string {
  let out = '"';
  for (const char of value) {
    const code = char.codePointAt(0)!;
    if (char === '"' || char === '\\') out += `\\${char}`;
    else if (code < 0x20) out += `\\u${code.toString(16).padStart(4, '0')}`;
    else out += escape(char) ?? char;
  }
  return `${out}"`;
}

const utf16Escape = (char: string, upper: boolean) =>
  [...Array.from({ length: char.length }, (_, i) => char.charCodeAt(i))]
    .map(
      (unit) => `\\u${upper ? unit.toString(16).toUpperCase().padStart(4, '0') : unit.toString(16).padStart(4, '0')}`,
    )
    .join('');

interface Library {
  name: string;
  string: (value: string) => string;
  separators: [item: string, key: string];
}

const libraries: Library[] = [
  { name: 'Jackson', string: (v) => escapeString(v, () => undefined), separators: [',', ':'] },
  {
    name: 'System.Text.Json',
    string: (v) =>
      escapeString(v, (c) => (c.codePointAt(0)! > 0x7e || `<>&'+\``.includes(c) ? utf16Escape(c, true) : undefined)),
    separators: [',', ':'],
  },
  {
    name: 'Go encoding/json',
    string: (v) => escapeString(v, (c) => ('<>&'.includes(c) ? utf16Escape(c, false) : undefined)),
    separators: [',', ':'],
  },
  {
    name: "Python's json.dumps",
    string: (v) => escapeString(v, (c) => (c.codePointAt(0)! > 0x7e ? utf16Escape(c, false) : undefined)),
    separators: [', ', ': '],
  },
];

function serialize(library: Library, fields: Fields): string {
  const value = (v: Value) => (v === null ? 'null' : v instanceof Num ? v.text : library.string(v));
  return `{${fields.map(([key, v]) => `${library.string(key)}${library.separators[1]}${value(v)}`).join(library.separators[0])}}`;
}

const MEMO = 'Café <till 4> & “receipt” +1 🙂';

describe('client compatibility: default serializations of Jackson, System.Text.Json, Go and Python', () => {
  let sys: TestSystem;
  let d: TestParty & { apiKey: string };
  let m: TestParty & { apiKey: string };
  let m2: TestParty;
  let phone: string;

  beforeAll(async () => {
    sys = await startTestSystem({ ASSET_SCALE: '2' }, undefined, WITHOUT_EXECUTOR);
    const withKey = async (type: 'distributor' | 'merchant') => {
      const party = await sys.party(type);
      await sys.credit(party.wallet, '100000');
      return { ...party, apiKey: (await party.key()).apiKey };
    };
    d = await withKey('distributor');
    m = await withKey('merchant');
    m2 = await sys.party('merchant');
    phone = await sys.individual(`+2348129${String(100_000 + Math.floor(Math.random() * 899_999))}`);
    await sys.credit({ kind: 'individual', id: phone }, '100000');
  });
  afterAll(async () => sys.close());

  const post = (party: TestParty & { apiKey: string }, rawBody: string) =>
    call(sys.baseUrl, 'POST', `/api/v1/${party.ref.type}s/${party.ref.id}/operations`, {
      apiKey: party.apiKey,
      rawBody,
      headers: { 'content-type': 'application/json; charset=utf-8' },
    });

  async function requested(operationID: string): Promise<Record<string, any>> {
    const events = await sys.system.stores.eventStore.readStream(streams.operation(operationID));
    expect(events[0]?.type).toBe('OperationRequested');
    return events[0]!.data as Record<string, any>;
  }

  /** The accepted requests: every unset optional field sent as null, in several key orders. */
  const accepted: Array<[string, 'distributor' | 'merchant', () => Fields, (op: Record<string, any>) => void]> = [
    [
      'cash-in to a merchant, phoneTo and memo null',
      'distributor',
      () => [
        ['operationType', 'cash-in'],
        ['amount', '1.00'],
        ['phoneTo', null],
        ['merchantToShortCode', m.shortCode],
        ['memo', null],
      ],
      (op) => expect(op).toMatchObject({ operationType: 'cash-in', amount: '1.00', payee: m.wallet }),
    ],
    [
      'cash-in to a phone, merchantToShortCode null, memo with escapes (alphabetical order)',
      'distributor',
      () => [
        ['amount', '2.50'],
        ['memo', MEMO],
        ['merchantToShortCode', null],
        ['operationType', 'cash-in'],
        ['phoneTo', phone],
      ],
      (op) =>
        expect(op).toMatchObject({
          operationType: 'cash-in',
          amount: '2.50',
          payee: { kind: 'individual', id: phone },
          memo: MEMO,
        }),
    ],
    [
      'cash-out-fulfillment, memo null first',
      'distributor',
      () => [
        ['memo', null],
        ['operationType', 'cash-out-fulfillment'],
        ['amount', '1.00'],
        ['phoneFrom', phone],
        ['cashOutFulfillmentType', 'cash'],
        ['cashOutFulfillmentID', 'RCPT-<1>&2'],
      ],
      (op) =>
        expect(op).toMatchObject({
          operationType: 'cash-out-fulfillment',
          amount: '1.00',
          payer: { kind: 'individual', id: phone },
        }),
    ],
    [
      'cash-out, memo null',
      'merchant',
      () => [
        ['operationType', 'cash-out'],
        ['amount', '1.00'],
        ['distributorToShortCode', d.shortCode],
        ['memo', null],
      ],
      (op) => expect(op).toMatchObject({ operationType: 'cash-out', amount: '1.00', payee: d.wallet }),
    ],
    [
      'pay-merchant, memo with escapes',
      'merchant',
      () => [
        ['operationType', 'pay-merchant'],
        ['merchantToShortCode', m2.shortCode],
        ['amount', '1.00'],
        ['memo', MEMO],
      ],
      (op) => expect(op).toMatchObject({ operationType: 'pay-merchant', amount: '1.00', payee: m2.wallet, memo: MEMO }),
    ],
    // An extension: a short code as the integer the responses carry (merchantShortCode), as an int field writes it.
    [
      'cash-in merchantToShortCode as an integer',
      'distributor',
      () => [
        ['operationType', 'cash-in'],
        ['amount', '1.00'],
        ['phoneTo', null],
        ['merchantToShortCode', new Num(m.shortCode)],
        ['memo', null],
      ],
      (op) => expect(op).toMatchObject({ operationType: 'cash-in', amount: '1.00', payee: m.wallet }),
    ],
    [
      'cash-out distributorToShortCode as an integer',
      'merchant',
      () => [
        ['operationType', 'cash-out'],
        ['amount', '1.00'],
        ['distributorToShortCode', new Num(d.shortCode)],
        ['memo', null],
      ],
      (op) => expect(op).toMatchObject({ operationType: 'cash-out', amount: '1.00', payee: d.wallet }),
    ],
    [
      'pay-individual, memo null',
      'merchant',
      () => [
        ['operationType', 'pay-individual'],
        ['amount', '1.00'],
        ['phoneTo', phone],
        ['memo', null],
      ],
      (op) =>
        expect(op).toMatchObject({
          operationType: 'pay-individual',
          amount: '1.00',
          payee: { kind: 'individual', id: phone },
        }),
    ],
  ];

  /** Numbers where the contract wants strings, as typed fields (BigDecimal, decimal, int, float64) write them. */
  const refused: Array<[string, 'distributor' | 'merchant', () => Fields, string, RegExp]> = [
    [
      'cash-in amount as a decimal number 10.00',
      'distributor',
      () => [
        ['operationType', 'cash-in'],
        ['amount', new Num('10.00')],
        ['phoneTo', phone],
        ['merchantToShortCode', null],
        ['memo', null],
      ],
      'amount',
      /^amount must be a string .*not a number$/,
    ],
    [
      'cash-in amount as an integer 10',
      'distributor',
      () => [
        ['operationType', 'cash-in'],
        ['amount', new Num('10')],
        ['phoneTo', null],
        ['merchantToShortCode', m.shortCode],
        ['memo', null],
      ],
      'amount',
      /^amount must be a string .*not a number$/,
    ],
    [
      'cash-in merchantToShortCode as a fraction',
      'distributor',
      () => [
        ['operationType', 'cash-in'],
        ['amount', '1.00'],
        ['phoneTo', null],
        ['merchantToShortCode', new Num(`${m.shortCode}.5`)],
        ['memo', null],
      ],
      'merchantToShortCode',
      /^merchantToShortCode must be a string of digits or a whole number/,
    ],
    [
      'cash-in phoneTo as an integer',
      'distributor',
      () => [
        ['operationType', 'cash-in'],
        ['amount', '1.00'],
        ['phoneTo', new Num(phone.slice(1))],
        ['merchantToShortCode', null],
        ['memo', null],
      ],
      'phoneTo',
      /^phoneTo must be a string of digits .*not a number$/,
    ],
    [
      'pay-merchant amount as a number 1.5',
      'merchant',
      () => [
        ['operationType', 'pay-merchant'],
        ['amount', new Num('1.5')],
        ['merchantToShortCode', m2.shortCode],
        ['memo', null],
      ],
      'amount',
      /^amount must be a string .*not a number$/,
    ],
    [
      'cash-out-fulfillment amount as a number, memo null',
      'distributor',
      () => [
        ['operationType', 'cash-out-fulfillment'],
        ['amount', new Num('3')],
        ['phoneFrom', phone],
        ['cashOutFulfillmentType', 'cash'],
        ['cashOutFulfillmentID', 'R1'],
        ['memo', null],
      ],
      'amount',
      /^amount must be a string .*not a number$/,
    ],
  ];

  for (const library of libraries) {
    describe(library.name, () => {
      it.each(accepted)('%s: 200 and the operation as sent', async (_name, partyType, fields, check) => {
        const body = serialize(library, fields());
        const r = await post(partyType === 'distributor' ? d : m, body);
        expect(r.status, `${body}\n${JSON.stringify(r.body)}`).toBe(200);
        expect(r.body).toEqual({ operationID: expect.stringMatching(/^op_/) });
        check(await requested(r.body.operationID));
      });

      it.each(refused)(
        '%s: 400 naming the field with "must be a string"',
        async (_name, partyType, fields, field, detail) => {
          const body = serialize(library, fields());
          const r = await post(partyType === 'distributor' ? d : m, body);
          expect(r.status, `${body}\n${JSON.stringify(r.body)}`).toBe(400);
          expect(r.body.type).toBe('/problems/input-validation-problems');
          expect(r.body.errors).toEqual([
            { type: '/problems/input-validation-problems/invalid-field', field, detail: expect.stringMatching(detail) },
          ]);
        },
      );
    });
  }

  it('the serializers write what the libraries write', () => {
    const fields: Fields = [
      ['memo', 'é<&+'],
      ['phoneTo', null],
      ['amount', new Num('10.00')],
    ];
    expect(libraries.map((library) => serialize(library, fields))).toEqual([
      '{"memo":"é<&+","phoneTo":null,"amount":10.00}',
      '{"memo":"\\u00E9\\u003C\\u0026\\u002B","phoneTo":null,"amount":10.00}',
      '{"memo":"é\\u003c\\u0026+","phoneTo":null,"amount":10.00}',
      '{"memo": "\\u00e9<&+", "phoneTo": null, "amount": 10.00}',
    ]);
  });
});

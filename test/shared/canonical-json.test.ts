/**
 * Canonical JSON is what every event's hash covers, so its output may never change: the current
 * implementation is compared byte for byte with the one it replaced (canonical-reference.ts) over many
 * generated values, and with JSON semantics (it must read back as JSON.stringify's output does).
 */
import { describe, expect, it } from 'vitest';
import { canonicalJson, canonicalJsonWithout } from '../../src/shared/canonical-json.ts';
import { eventHash } from '../../src/audit/hash-chain.ts';
import { referenceCanonicalJson, referenceCanonicalJsonWithout } from './canonical-reference.ts';

/** mulberry32: a seeded generator, so that a failure can be replayed. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const SPECIAL_CHARACTERS = [
  '"',
  '\\',
  '\n',
  '\u0000',
  '\u001f',
  '\u007f',
  'é',
  'ß',
  '中',
  '\u2028',
  '😀',
  '\ud800',
  '\udfff',
  '\ud83d',
  '/',
  ' ',
  'A',
  'z',
  '0',
  '~',
];
const KEYS = [
  'a',
  'b',
  'id',
  'amount',
  'Amount',
  '_x',
  'z',
  '0',
  '1',
  '10',
  '9',
  '-1',
  'é',
  'e\u0301',
  '😀',
  '',
  ' ',
  'hash',
  'previousHash',
  '"q"',
  'toJSON_not',
];
const NUMBERS = [
  0,
  -0,
  1,
  -1,
  0.1,
  1e21,
  1e-7,
  5e-324,
  Number.MAX_SAFE_INTEGER,
  -Number.MAX_VALUE,
  1250.5,
  NaN,
  Infinity,
  -Infinity,
];

function generator(seed: number) {
  const next = random(seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)]!;
  const string = (): string => {
    const length = Math.floor(next() * 12);
    let out = '';
    for (let i = 0; i < length; i++)
      out += next() < 0.5 ? pick(SPECIAL_CHARACTERS) : String.fromCharCode(32 + Math.floor(next() * 95));
    return out;
  };
  const key = (): string => (next() < 0.7 ? pick(KEYS) : string());
  const value = (depth: number): unknown => {
    const roll = next();
    if (depth > 3 || roll < 0.35) {
      return pick<() => unknown>([
        string,
        string,
        () => pick(NUMBERS),
        () => Math.floor(next() * 2 ** 40) / 100,
        () => next() < 0.5,
        () => null,
        () => undefined,
        () => () => 1,
        () => Symbol('s'),
        () => new Date(Math.floor(next() * 2e12)),
      ])();
    }
    if (roll < 0.55) return Array.from({ length: Math.floor(next() * 5) }, () => value(depth + 1));
    if (roll < 0.6) {
      // What toJSON returns is not given to its own toJSON by JSON.stringify (canonical form does, as it always has): not generated.
      let replacement = value(depth + 1);
      while (typeof (replacement as { toJSON?: unknown } | null)?.toJSON === 'function') replacement = value(depth + 1);
      return { toJSON: () => replacement };
    }
    const record: Record<string, unknown> = next() < 0.1 ? Object.create(null) : {};
    const size = Math.floor(next() * 7);
    for (let i = 0; i < size; i++) record[key()] = value(depth + 1);
    return record;
  };
  return { value, key, next };
}

describe('canonicalJson', () => {
  it('when given many generated values (unicode, lone surrogates, nested arrays, numbers, null, undefined, toJSON), then it writes exactly what the reference writes', () => {
    const { value } = generator(20261123);
    for (let i = 0; i < 10_000; i++) {
      const generated = value(0);
      let expected: string | Error;
      try {
        expected = referenceCanonicalJson(generated);
      } catch (error) {
        expected = error as Error;
      }
      if (expected instanceof Error) expect(() => canonicalJson(generated)).toThrow(expected.message);
      else expect(canonicalJson(generated)).toBe(expected);
    }
  });

  it('when objects share a key list in another order, or a key is omitted, then each is sorted as the reference sorts it', () => {
    const { key, next } = generator(7);
    for (let i = 0; i < 5000; i++) {
      const keys = Array.from({ length: 1 + Math.floor(next() * 6) }, key);
      const record: Record<string, unknown> = {};
      for (const k of keys) record[k] = next() < 0.2 ? undefined : i;
      const shuffled: Record<string, unknown> = {};
      for (const k of [...keys].reverse()) shuffled[k] = record[k];
      const omitted = keys[Math.floor(next() * keys.length)]!;
      expect(canonicalJson(record)).toBe(referenceCanonicalJson(record));
      expect(canonicalJson(shuffled)).toBe(referenceCanonicalJson(record));
      expect(canonicalJsonWithout(record, omitted)).toBe(referenceCanonicalJsonWithout(record, omitted));
      expect(canonicalJsonWithout(shuffled, omitted)).toBe(referenceCanonicalJsonWithout(record, omitted));
    }
  });

  it('when there are more distinct key lists than it remembers, then the ones past the bound are written the same', () => {
    for (let i = 0; i < 12_000; i++) {
      const record = { [`k${i}`]: i, [`a${i % 7}`]: [i], b: { [`x${i}`]: 'v', [`${i}`]: null } };
      expect(canonicalJson(record)).toBe(referenceCanonicalJson(record));
    }
  });

  it('when a JSON value is written, then it reads back as the output of JSON.stringify does, and what reads back writes the same', () => {
    const { value } = generator(99);
    for (let i = 0; i < 5000; i++) {
      const generated = value(0);
      const stringified = JSON.stringify(generated);
      if (stringified === undefined) continue;
      const canonical = canonicalJson(generated);
      expect(JSON.parse(canonical)).toEqual(JSON.parse(stringified));
      // What a store reads back writes the same (the hash survives the round trip).
      expect(canonicalJson(JSON.parse(canonical))).toBe(canonical);
    }
    expect(canonicalJson({ b: [undefined, 1], a: undefined, '10': 1, '9': 2, c: 'é"\n\ud800', d: -0, e: NaN })).toBe(
      '{"10":1,"9":2,"b":[null,1],"c":"é\\"\\n\\ud800","d":0,"e":null}',
    );
  });

  it('when an event like those stored before is hashed, then its hash is the one pinned with the reference implementation', () => {
    const event = {
      id: '00000000-0000-4000-8000-000000000001',
      stream: 'operation-op_1',
      revision: 3,
      type: 'OperationRequested',
      data: {
        operationID: 'op_1',
        amount: '1250.50',
        payer: { kind: 'distributor', id: 'd-1' },
        memo: 'loyer été 🏠 "quoted" \\ \n',
        n: -0,
        big: 1e21,
        small: 5e-324,
        list: [1, null, { b: 2, a: 1 }],
        none: null,
        skipped: undefined,
        at: new Date('2026-11-23T07:00:00.000Z'),
        '10': 'ten',
        '9': 'nine',
      },
      metadata: {
        correlationId: 'c-1',
        actor: 'user:u-1',
        causationId: 'x',
        previousHash: 'ab'.repeat(32),
        hash: 'ignored',
      },
    };
    expect(eventHash(event)).toBe('d0e11ecb20ec5c391364dcdeff34328f6c4335db1804cbf7bc0e58c254afc01d');
  });
});

/**
 * The MongoDB read store's query building, without a server: filters, sorts, paging, escaping, write plans.
 * (The adapter against a real server is test/adapters/mongodb-read-store.int.test.ts.)
 */
import { describe, expect, it } from 'vitest';
import {
  buildFilter,
  buildFind,
  counterUpdate,
  escapeRegex,
  fromStored,
  fromTextRow,
  indexKey,
  isDeclaredIndex,
  planWrites,
  promotedCheckpoint,
  textProjection,
  toStored,
  validateDefinition,
} from '../../src/adapters/mongodb/mongodb-query.ts';
import type { CollectionDefinition, Scalar, Write } from '../../src/ports/read-store.ts';
import { ReadStoreQueryError } from '../../src/ports/read-store.ts';

const WALLETS: CollectionDefinition = {
  name: 'wallets',
  indexes: [['ownerType', 'balance', 'id']],
  searchFields: ['phone', 'memo'],
};
const definitionOf = (name: string) => {
  if (name === 'wallets' || name === 'entries') return { name };
  throw new ReadStoreQueryError(`unknown collection ${name}`);
};

/** A regex as MongoDB would run it, approximated with JavaScript's engine (same syntax for what we emit). */
const run = (pattern: string, value: string) => new RegExp(pattern, 'i').test(value);

describe('MongoDB query: where', () => {
  it('given equalities, when built, then each is an $eq on its field, ANDed', () => {
    expect(buildFilter(WALLETS, { where: { status: 'open' } })).toEqual({ status: { $eq: 'open' } });
    expect(
      buildFilter(WALLETS, {
        where: { ownerType: 'agent', 'owner.msisdn': '+254700000001', active: true, balance: 10 },
      }),
    ).toEqual({
      $and: [
        { ownerType: { $eq: 'agent' } },
        { 'owner.msisdn': { $eq: '+254700000001' } },
        { active: { $eq: true } },
        { balance: { $eq: 10 } },
      ],
    });
  });

  it('given null, when built, then it is $eq null, which MongoDB matches with a null or a missing field', () => {
    expect(buildFilter(WALLETS, { where: { status: null } })).toEqual({ status: { $eq: null } });
  });

  it('given no query, when built, then the filter is empty', () => {
    expect(buildFilter(WALLETS, {})).toEqual({});
    expect(buildFilter(WALLETS)).toEqual({});
  });

  it('given an operator object passed as a value, when built, then it is refused instead of read as an operator', () => {
    const injected = { $gt: '' } as unknown as Scalar;
    expect(() => buildFilter(WALLETS, { where: { status: injected } })).toThrow(ReadStoreQueryError);
    expect(() => buildFilter(WALLETS, { where: { status: ['a'] as unknown as Scalar } })).toThrow(
      /only strings, numbers, booleans and null/,
    );
    expect(() => buildFilter(WALLETS, { where: { balance: Number.NaN } })).toThrow(/finite/);
  });

  it('given operator syntax inside a string value, when built, then it stays a string under $eq', () => {
    expect(buildFilter(WALLETS, { where: { status: '{"$gt": ""}' } })).toEqual({ status: { $eq: '{"$gt": ""}' } });
    expect(buildFilter(WALLETS, { where: { status: '$where' } })).toEqual({ status: { $eq: '$where' } });
  });

  it('given a field named like an operator or carrying JavaScript, when built, then it is refused', () => {
    for (const field of ['$where', '$or', 'a.$b', 'status; return true', '', '.x', 'x.']) {
      expect(() => buildFilter(WALLETS, { where: { [field]: 'x' } }), field).toThrow(/bad field path/);
    }
  });
});

describe('MongoDB query: range', () => {
  it('given bounds, when built, then they are $gt/$gte/$lt/$lte on the field, ANDed with where', () => {
    expect(buildFilter(WALLETS, { where: { status: 'open' }, range: { key: { gte: 'a', lt: 'b' } } })).toEqual({
      $and: [{ status: { $eq: 'open' } }, { key: { $gte: 'a', $lt: 'b' } }],
    });
    expect(buildFilter(WALLETS, { range: { balance: { gt: 1, lte: 9 } } })).toEqual({ balance: { $gt: 1, $lte: 9 } });
  });

  it('given mixed types, no bound, an unknown bound, an object or a bad field, when built, then a ReadStoreQueryError is raised', () => {
    expect(() => buildFilter(WALLETS, { range: { balance: { gt: 1, lt: 'x' } } })).toThrow(ReadStoreQueryError);
    expect(() => buildFilter(WALLETS, { range: { balance: {} } })).toThrow(ReadStoreQueryError);
    expect(() => buildFilter(WALLETS, { range: { balance: { $ne: 1 } as never } })).toThrow(ReadStoreQueryError);
    expect(() => buildFilter(WALLETS, { range: { balance: { gt: { $gt: '' } } as never } })).toThrow(
      ReadStoreQueryError,
    );
    expect(() => buildFilter(WALLETS, { range: { $where: { gt: 1 } } })).toThrow(ReadStoreQueryError);
  });
});

describe('MongoDB query: search', () => {
  it('given one clause over two fields, when built, then each field gets a case-insensitive regex of the escaped text, ORed', () => {
    expect(buildFilter(WALLETS, { search: { text: 'alice', fields: ['phone', 'memo'] } })).toEqual({
      $or: [{ phone: { $regex: 'alice', $options: 'i' } }, { memo: { $regex: 'alice', $options: 'i' } }],
    });
  });

  it('given several clauses and a where, when built, then the clauses are ORed and ANDed with the where', () => {
    const filter = buildFilter(WALLETS, {
      where: { status: 'open' },
      search: [
        { text: 'alice', fields: ['memo'] },
        { text: '333', fields: ['phone'] },
      ],
    });
    expect(filter).toEqual({
      $and: [
        { status: { $eq: 'open' } },
        { $or: [{ memo: { $regex: 'alice', $options: 'i' } }, { phone: { $regex: '333', $options: 'i' } }] },
      ],
    });
  });

  it('given every regex metacharacter, when escaped, then the pattern matches the text literally and nothing else', () => {
    const texts = [
      '.*+?^${}()|[]\\',
      '.*',
      '^+254',
      '(x+y).*',
      '[1]',
      'C:\\temp',
      '100%',
      'a_b',
      "O'Brien",
      'a-b/c#d',
      '$where',
      '{"$gt": ""}',
    ];
    for (const text of texts) {
      const pattern = escapeRegex(text);
      expect(run(pattern, `before ${text} after`), text).toBe(true);
      expect(run(`^${pattern}$`, text), text).toBe(true);
    }
    expect(run(escapeRegex('.*'), 'anything')).toBe(false);
    expect(run(escapeRegex('^+254'), '+254 700')).toBe(false);
    expect(run(escapeRegex('a.b'), 'axb')).toBe(false);
    expect(run(escapeRegex('[1]'), '1')).toBe(false);
  });

  it('given a NUL character, when escaped, then it is written as \\x00 (a BSON regex cannot hold a NUL)', () => {
    expect(escapeRegex('a\0b')).toBe('a\\x00b');
    expect(run(escapeRegex('a\0b'), 'xa\0by')).toBe(true);
  });

  it('given a text in another case, when matched with the option i, then it matches', () => {
    expect(run(escapeRegex('RENT FOR'), 'Rent for ALICE')).toBe(true);
  });

  it('given a field not declared for search, no field, no clause or a non-string text, when built, then it is refused', () => {
    expect(() => buildFilter(WALLETS, { search: { text: 'x', fields: ['status'] } })).toThrow(
      /not declared in searchFields/,
    );
    expect(() => buildFilter(WALLETS, { search: { text: 'x', fields: [] } })).toThrow(/at least one field/);
    expect(() => buildFilter(WALLETS, { search: [] })).toThrow(/at least one clause/);
    expect(() =>
      buildFilter(WALLETS, { search: { text: { $ne: null } as unknown as string, fields: ['memo'] } }),
    ).toThrow(/must be a string/);
  });
});

describe('MongoDB query: sort, skip and limit', () => {
  it('given sort keys, when built, then they keep their order as [field, 1 | -1] pairs', () => {
    const plan = buildFind(WALLETS, {
      sort: [
        ['ownerType', 'asc'],
        ['balance', 'desc'],
        ['id', 'asc'],
      ],
      skip: 10,
      limit: 5,
    });
    expect(plan).toMatchObject({
      sort: [
        ['ownerType', 1],
        ['balance', -1],
        ['id', 1],
      ],
      skip: 10,
      limit: 5,
      empty: false,
    });
  });

  it('given limit 0, when built, then the plan is empty: MongoDB would read limit(0) as no limit', () => {
    expect(buildFind(WALLETS, { limit: 0 }).empty).toBe(true);
    expect(buildFind(WALLETS, {}).limit).toBeUndefined();
  });

  it('given a bad direction, a negative or fractional skip or limit, or a bad field, when built, then it is refused', () => {
    expect(() => buildFind(WALLETS, { sort: [['id', 'up' as 'asc']] })).toThrow(/bad sort direction/);
    expect(() => buildFind(WALLETS, { skip: -1 })).toThrow(/non-negative integer/);
    expect(() => buildFind(WALLETS, { limit: 1.5 })).toThrow(/non-negative integer/);
    expect(() => buildFind(WALLETS, { sort: [['$natural', 'asc']] })).toThrow(/bad field path/);
  });
});

describe('MongoDB query: definitions and indexes', () => {
  it('given definitions, when validated, then reserved or malformed names and fields are refused', () => {
    expect(() => validateDefinition({ name: 'checkpoints' })).toThrow(/reserved/);
    expect(() => validateDefinition({ name: 'system.views' })).toThrow(/bad collection name/);
    expect(() => validateDefinition({ name: 'x', indexes: [[]] })).toThrow(/at least one field/);
    expect(() => validateDefinition({ name: 'x', indexes: [['$where']] })).toThrow(/bad field path/);
    expect(() => validateDefinition(WALLETS)).not.toThrow();
  });

  it('given a declared index, when its key is built and compared with listed ones, then only the same fields in the same order match', () => {
    expect(indexKey(['status', 'createdAt', 'id'])).toEqual([
      ['status', 1],
      ['createdAt', 1],
      ['id', 1],
    ]);
    const declared = [['status', 'createdAt', 'id'], ['payer.msisdn']];
    expect(isDeclaredIndex({ status: 1, createdAt: 1, id: 1 }, declared)).toBe(true);
    expect(isDeclaredIndex({ 'payer.msisdn': 1 }, declared)).toBe(true);
    expect(isDeclaredIndex({ createdAt: 1, status: 1, id: 1 }, declared)).toBe(false);
    expect(isDeclaredIndex({ status: -1, createdAt: 1, id: 1 }, declared)).toBe(false);
    expect(isDeclaredIndex({ createdAt: 1 }, declared)).toBe(false);
  });
});

describe('MongoDB query: writes', () => {
  it('given writes, when planned, then consecutive writes to one collection are one ordered group, in the given order', () => {
    const writes: Write[] = [
      { op: 'upsert', collection: 'wallets', doc: { id: 'w1', balance: 1 } },
      { op: 'patch', collection: 'wallets', id: 'w1', patch: { balance: 2, memo: null } },
      { op: 'upsert', collection: 'entries', doc: { id: 'e1' } },
      { op: 'delete', collection: 'wallets', id: 'w2' },
    ];
    expect(planWrites(writes, definitionOf)).toEqual([
      {
        collection: 'wallets',
        operations: [
          { replaceOne: { filter: { _id: 'w1' }, replacement: { id: 'w1', balance: 1, _id: 'w1' }, upsert: true } },
          { updateOne: { filter: { _id: 'w1' }, update: { $set: { balance: 2, memo: null } }, upsert: false } },
        ],
      },
      {
        collection: 'entries',
        operations: [{ replaceOne: { filter: { _id: 'e1' }, replacement: { id: 'e1', _id: 'e1' }, upsert: true } }],
      },
      { collection: 'wallets', operations: [{ deleteOne: { filter: { _id: 'w2' } } }] },
    ]);
  });

  it('given a bad write anywhere in the batch, when planned, then the whole plan is refused before anything is sent', () => {
    const good: Write = { op: 'upsert', collection: 'wallets', doc: { id: 'w1' } };
    expect(() => planWrites([good, { op: 'upsert', collection: 'nope', doc: { id: 'x' } }], definitionOf)).toThrow(
      ReadStoreQueryError,
    );
    expect(() =>
      planWrites([good, { op: 'upsert', collection: 'wallets', doc: { id: 42 } as never }], definitionOf),
    ).toThrow(/string id/);
    expect(() =>
      planWrites([good, { op: 'upsert', collection: 'wallets', doc: { id: 'x', _id: 'y' } }], definitionOf),
    ).toThrow(/_id is reserved/);
    expect(() =>
      planWrites([good, { op: 'patch', collection: 'wallets', id: 'w1', patch: { id: 'other' } }], definitionOf),
    ).toThrow(/cannot change an id/);
    expect(() =>
      planWrites(
        [good, { op: 'patch', collection: 'wallets', id: 'w1', patch: { $inc: { balance: 1 } } }],
        definitionOf,
      ),
    ).toThrow(/bad field name/);
    expect(() =>
      planWrites([good, { op: 'patch', collection: 'wallets', id: 'w1', patch: { 'owner.name': 'x' } }], definitionOf),
    ).toThrow(/bad field name/);
    expect(() => planWrites([good, { op: 'drop', collection: 'wallets' } as never], definitionOf)).toThrow(
      /unknown write/,
    );
  });

  it('given a patch of only undefined values, when planned, then it is no write at all ($set {} is an error in MongoDB)', () => {
    expect(
      planWrites([{ op: 'patch', collection: 'wallets', id: 'w1', patch: { memo: undefined } }], definitionOf),
    ).toEqual([]);
  });

  it('given a document, when stored and read back, then _id is the id and is left out on read', () => {
    expect(toStored({ id: 'w1', a: 1 })).toEqual({ id: 'w1', a: 1, _id: 'w1' });
    expect(fromStored({ _id: 'w1', id: 'w1', a: 1 })).toEqual({ id: 'w1', a: 1 });
  });
});

describe('MongoDB query: findText', () => {
  it('given a field, when its projection is built, then the server returns the field when it is a string and the whole document otherwise, never _id', () => {
    const isText = { $eq: [{ $type: '$api.text' }, 'string'] };
    expect(textProjection('api.text')).toEqual({
      _id: 0,
      text: { $cond: [isText, '$api.text', '$$REMOVE'] },
      doc: { $cond: [isText, '$$REMOVE', '$$ROOT'] },
    });
  });

  it('given a field named like an operator or a variable, when its projection is built, then it is refused', () => {
    for (const field of ['$where', '$$ROOT', 'a.$b', ''])
      expect(() => textProjection(field)).toThrow(ReadStoreQueryError);
  });

  it('given rows as the projection returns them, when read, then a text is kept as it is and a document loses its _id', () => {
    expect(fromTextRow({ text: '{"a":1}' })).toBe('{"a":1}');
    expect(fromTextRow({ text: '' })).toBe('');
    expect(fromTextRow({ doc: { _id: 'w1', id: 'w1', apiText: 7 } })).toEqual({ id: 'w1', apiText: 7 });
  });
});

describe('MongoDB query: the checkpoint of a promote', () => {
  it('given the rebuilt checkpoint and what was committed during the promote, when combined, then the lower is kept (replays are harmless, gaps are not)', () => {
    expect(promotedCheckpoint(42, null)).toBe(42);
    expect(promotedCheckpoint(42, 30)).toBe(30);
    expect(promotedCheckpoint(42, 50)).toBe(42);
    expect(promotedCheckpoint(null, 50)).toBeNull();
  });
});

describe('counterUpdate', () => {
  it('given a change, then one $set stage decides count and expiry on the stored expiresAt, with the id as a literal and the count floored at 0', () => {
    const live = { $gt: ['$expiresAt', 1000] };
    expect(counterUpdate('$where', { by: -1, now: 1000, expiresAt: 61_000 })).toEqual([
      {
        $set: {
          id: { $literal: '$where' },
          count: { $cond: [live, { $max: [0, { $add: ['$count', -1] }] }, 0] },
          expiresAt: { $cond: [live, '$expiresAt', 61_000] },
        },
      },
    ]);
    expect(counterUpdate('a', { by: 2, now: 0, expiresAt: 5 })[0]!.$set.count.$cond[2]).toBe(2);
  });

  it('given a change that is not finite numbers, then it is refused before anything is sent', () => {
    expect(() => counterUpdate('a', { by: Number.POSITIVE_INFINITY, now: 0, expiresAt: 1 })).toThrow(TypeError);
    expect(() => counterUpdate('a', { by: 1, now: Number.NaN, expiresAt: 1 })).toThrow(TypeError);
    expect(() => counterUpdate(7 as unknown as string, { by: 1, now: 0, expiresAt: 1 })).toThrow(TypeError);
  });
});

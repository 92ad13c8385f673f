/**
 * The ReadStore port's behaviour, written once and run against every adapter (embedded SQLite, MongoDB).
 * Only what the port promises is tested here; adapter internals (indexes used, files) belong to adapter tests.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { CollectionDefinition, Document, FindQuery, ReadStore, Write } from '../../src/ports/read-store.ts';
import { CheckpointConflictError, ReadStoreQueryError } from '../../src/ports/read-store.ts';

const WALLETS: CollectionDefinition = {
  name: 'wallets',
  indexes: [['ownerType', 'balance', 'id'], ['owner.msisdn'], ['status']],
  searchFields: ['phone', 'memo'],
};
const ENTRIES: CollectionDefinition = { name: 'entries', indexes: [['group', 'id']] };
/** The wallets again, with their `apiText` declared as the text field lists read (findText). */
const LISTED: CollectionDefinition = { ...WALLETS, name: 'listed_wallets', textField: 'apiText' };
const COLLECTIONS = [WALLETS, ENTRIES, LISTED];

export function describeReadStoreContract(
  adapterName: string,
  open: () => Promise<{ store: ReadStore; cleanup: () => Promise<void> }>,
): void {
  describe(`ReadStore contract: ${adapterName}`, () => {
    let store: ReadStore;
    let cleanup: () => Promise<void>;

    beforeEach(async () => {
      ({ store, cleanup } = await open());
      await store.defineCollections(COLLECTIONS);
    });
    afterEach(async () => {
      await cleanup();
    });

    const upsert = (collection: string, ...docs: Document[]) =>
      store.commit(docs.map((doc): Write => ({ op: 'upsert', collection, doc })));
    const findIds = async (collection: string, query?: FindQuery) =>
      (await store.find(collection, query)).map((d) => d.id);
    const sortedIds = async (collection: string, query?: FindQuery) => (await findIds(collection, query)).sort();

    describe('collections', () => {
      it('given defined collections holding data, when they are defined again, then data and queries are unaffected', async () => {
        await upsert('wallets', { id: 'w1', ownerType: 'agent', balance: 5, phone: '+254700000001' });
        await store.defineCollections(COLLECTIONS);
        await store.defineCollections(COLLECTIONS);
        expect(await store.get('wallets', 'w1')).toEqual({
          id: 'w1',
          ownerType: 'agent',
          balance: 5,
          phone: '+254700000001',
        });
        expect(
          await findIds('wallets', {
            where: { ownerType: 'agent' },
            sort: [
              ['balance', 'asc'],
              ['id', 'asc'],
            ],
          }),
        ).toEqual(['w1']);
        expect(await store.count('wallets', { search: { text: '0001', fields: ['phone'] } })).toBe(1);
      });

      it('given a collection, when it is redefined with another index and search field, then the new search field is usable', async () => {
        await upsert('entries', { id: 'e1', group: 1, label: 'Opening float' });
        await store.defineCollections([
          { ...ENTRIES, indexes: [...ENTRIES.indexes!, ['label']], searchFields: ['label'] },
        ]);
        expect(await findIds('entries', { search: { text: 'FLOAT', fields: ['label'] } })).toEqual(['e1']);
      });

      it('given an undeclared collection, when it is read or written, then a ReadStoreQueryError is raised', async () => {
        await expect(store.get('nope', 'x')).rejects.toBeInstanceOf(ReadStoreQueryError);
        await expect(store.find('nope')).rejects.toBeInstanceOf(ReadStoreQueryError);
        await expect(store.count('nope')).rejects.toBeInstanceOf(ReadStoreQueryError);
        await expect(upsert('nope', { id: 'x' })).rejects.toBeInstanceOf(ReadStoreQueryError);
      });
    });

    describe('upsert, get, patch, delete', () => {
      it('given an upserted document, when it is read, then every value comes back as stored', async () => {
        const doc = {
          id: 'w1',
          owner: { msisdn: '+254700000001', names: ['Amina', 'Wanjiru'] },
          balance: -12.5,
          count: 0,
          active: true,
          closedAt: null,
          memo: "Zoë 😀 'quoted' \\ back",
        };
        await upsert('wallets', doc);
        expect(await store.get('wallets', 'w1')).toEqual(doc);
      });

      it('given no such document, when it is read, then null is returned', async () => {
        expect(await store.get('wallets', 'missing')).toBeNull();
      });

      it('given a document, when another with the same id is upserted, then it replaces the whole document', async () => {
        await upsert('wallets', { id: 'w1', ownerType: 'agent', balance: 5 });
        await upsert('wallets', { id: 'w1', status: 'frozen' });
        expect(await store.get('wallets', 'w1')).toEqual({ id: 'w1', status: 'frozen' });
        expect(await store.count('wallets')).toBe(1);
      });

      it('given a document, when it is patched, then top-level fields are merged shallowly and null is stored as null', async () => {
        await upsert('wallets', {
          id: 'w1',
          balance: 5,
          owner: { msisdn: '+1', name: 'A' },
          memo: 'x',
          status: 'open',
        });
        await store.commit([
          { op: 'patch', collection: 'wallets', id: 'w1', patch: { balance: 7, owner: { msisdn: '+2' }, memo: null } },
        ]);
        expect(await store.get('wallets', 'w1')).toEqual({
          id: 'w1',
          balance: 7,
          owner: { msisdn: '+2' },
          memo: null,
          status: 'open',
        });
        expect(await findIds('wallets', { where: { memo: null } })).toEqual(['w1']);
      });

      it('given no such document, when it is patched, then it stays missing', async () => {
        await store.commit([{ op: 'patch', collection: 'wallets', id: 'ghost', patch: { balance: 1 } }]);
        expect(await store.get('wallets', 'ghost')).toBeNull();
        expect(await store.count('wallets')).toBe(0);
      });

      it('given documents, when one is deleted, then only it is gone, and deleting a missing one is a no-op', async () => {
        await upsert('wallets', { id: 'w1' }, { id: 'w2' });
        await store.commit([
          { op: 'delete', collection: 'wallets', id: 'w1' },
          { op: 'delete', collection: 'wallets', id: 'never' },
        ]);
        expect(await store.get('wallets', 'w1')).toBeNull();
        expect(await sortedIds('wallets')).toEqual(['w2']);
      });

      it('given one batch, when it upserts, patches then deletes, then the writes apply in order', async () => {
        await store.commit([
          { op: 'upsert', collection: 'wallets', doc: { id: 'w1', balance: 1 } },
          { op: 'patch', collection: 'wallets', id: 'w1', patch: { balance: 2 } },
          { op: 'upsert', collection: 'wallets', doc: { id: 'w2', balance: 1 } },
          { op: 'delete', collection: 'wallets', id: 'w2' },
          { op: 'upsert', collection: 'entries', doc: { id: 'e1', group: 1 } },
        ]);
        expect(await store.get('wallets', 'w1')).toEqual({ id: 'w1', balance: 2 });
        expect(await store.get('wallets', 'w2')).toBeNull();
        expect(await store.get('entries', 'e1')).toEqual({ id: 'e1', group: 1 });
      });
    });

    describe('find with where', () => {
      beforeEach(async () => {
        await upsert(
          'wallets',
          {
            id: 'w1',
            ownerType: 'agent',
            status: 'open',
            balance: 10,
            owner: { msisdn: '+254700000001' },
            active: true,
          },
          {
            id: 'w2',
            ownerType: 'merchant',
            status: 'open',
            balance: 10,
            owner: { msisdn: '+254700000002' },
            active: 1,
          },
          {
            id: 'w3',
            ownerType: 'agent',
            status: 'frozen',
            balance: 3,
            owner: { msisdn: '+254700000003' },
            active: false,
          },
          { id: 'w4', ownerType: 'agent', status: null, balance: '10' },
          { id: 'w5', ownerType: 'agent' },
        );
      });

      it('given a field holding an object, when where names a string equal to its JSON text, then nothing matches', async () => {
        expect(await store.find('wallets', { where: { owner: '{"msisdn":"+254700000001"}' } })).toEqual([]);
        expect(await store.find('wallets', { where: { balance: '10' } }).then((docs) => docs.map((d) => d.id))).toEqual(
          ['w4'],
        );
      });

      it('given no query, when finding, then every document is returned', async () => {
        expect(await sortedIds('wallets')).toEqual(['w1', 'w2', 'w3', 'w4', 'w5']);
      });

      it('given an equality on one field, when finding, then only matching documents are returned', async () => {
        expect(await sortedIds('wallets', { where: { status: 'open' } })).toEqual(['w1', 'w2']);
      });

      it('given equalities on several fields, when finding, then all of them must hold', async () => {
        expect(await sortedIds('wallets', { where: { ownerType: 'agent', status: 'open' } })).toEqual(['w1']);
        expect(await sortedIds('wallets', { where: { ownerType: 'merchant', status: 'frozen' } })).toEqual([]);
      });

      it('given a nested dot path, when finding, then the nested field is matched', async () => {
        expect(await findIds('wallets', { where: { 'owner.msisdn': '+254700000003' } })).toEqual(['w3']);
      });

      it('given values of different types, when finding, then a number, a string and a boolean match only their own type', async () => {
        expect(await sortedIds('wallets', { where: { balance: 10 } })).toEqual(['w1', 'w2']);
        expect(await sortedIds('wallets', { where: { balance: '10' } })).toEqual(['w4']);
        expect(await sortedIds('wallets', { where: { active: true } })).toEqual(['w1']);
        expect(await sortedIds('wallets', { where: { active: 1 } })).toEqual(['w2']);
        expect(await sortedIds('wallets', { where: { active: false } })).toEqual(['w3']);
      });

      it('given a null equality, when finding, then documents where the field is null or missing match', async () => {
        expect(await sortedIds('wallets', { where: { status: null } })).toEqual(['w4', 'w5']);
      });
    });

    describe('sort, skip and limit', () => {
      beforeEach(async () => {
        await upsert(
          'wallets',
          { id: 'w1', ownerType: 'merchant', balance: 2 },
          { id: 'w2', ownerType: 'agent', balance: 10 },
          { id: 'w3', ownerType: 'agent', balance: 2 },
          { id: 'w4', ownerType: 'merchant', balance: 2 },
          { id: 'w5', ownerType: 'agent', balance: 10 },
          { id: 'w6', ownerType: 'agent', balance: -1.5 },
        );
      });

      it('given several sort keys and a unique tie-break, when finding, then each key applies in order and direction', async () => {
        const sort: FindQuery['sort'] = [
          ['ownerType', 'asc'],
          ['balance', 'desc'],
          ['id', 'asc'],
        ];
        expect(await findIds('wallets', { sort })).toEqual(['w2', 'w5', 'w3', 'w6', 'w1', 'w4']);
        const reversed: FindQuery['sort'] = [
          ['ownerType', 'desc'],
          ['balance', 'asc'],
          ['id', 'desc'],
        ];
        expect(await findIds('wallets', { sort: reversed })).toEqual(['w4', 'w1', 'w6', 'w3', 'w5', 'w2']);
      });

      it('given a where and a sort on an index, when finding, then only matching documents come back in order', async () => {
        const query: FindQuery = {
          where: { ownerType: 'agent' },
          sort: [
            ['balance', 'asc'],
            ['id', 'desc'],
          ],
        };
        expect(await findIds('wallets', query)).toEqual(['w6', 'w3', 'w5', 'w2']);
      });

      it('given numbers, when sorting, then they are ordered numerically', async () => {
        await upsert('entries', ...[10, 2, -1.5, 100, 0, 2.25].map((n, i) => ({ id: `e${i}`, n })));
        const docs = await store.find('entries', { sort: [['n', 'asc']] });
        expect(docs.map((d) => d.n)).toEqual([-1.5, 0, 2, 2.25, 10, 100]);
      });

      it('given strings, when sorting, then they are ordered by code point (upper before lower case, astral last)', async () => {
        const labels = ['b', '😀', 'B', 'ｚ', 'a', 'é', 'aa', 'Z'];
        await upsert('entries', ...labels.map((label, i) => ({ id: `e${i}`, label })));
        const asc = (await store.find('entries', { sort: [['label', 'asc']] })).map((d) => d.label);
        expect(asc).toEqual(['B', 'Z', 'a', 'aa', 'b', 'é', 'ｚ', '😀']);
        const desc = (await store.find('entries', { sort: [['label', 'desc']] })).map((d) => d.label);
        expect(desc).toEqual([...asc].reverse());
      });

      it('given null and missing values, when sorting, then they come first ascending and last descending', async () => {
        await upsert('entries', { id: 'e1', n: 1 }, { id: 'e2', n: null }, { id: 'e3' }, { id: 'e4', n: -5 });
        expect(
          await findIds('entries', {
            sort: [
              ['n', 'asc'],
              ['id', 'asc'],
            ],
          }),
        ).toEqual(['e2', 'e3', 'e4', 'e1']);
        expect(
          await findIds('entries', {
            sort: [
              ['n', 'desc'],
              ['id', 'asc'],
            ],
          }),
        ).toEqual(['e1', 'e4', 'e2', 'e3']);
      });

      it('given skip and limit, when finding, then the window of the sorted result is returned', async () => {
        const sort: FindQuery['sort'] = [['id', 'asc']];
        expect(await findIds('wallets', { sort, skip: 1, limit: 2 })).toEqual(['w2', 'w3']);
        expect(await findIds('wallets', { sort, skip: 4 })).toEqual(['w5', 'w6']);
        expect(await findIds('wallets', { sort, limit: 3 })).toEqual(['w1', 'w2', 'w3']);
        expect(await findIds('wallets', { sort, skip: 5, limit: 10 })).toEqual(['w6']);
      });

      it('given a skip past the end or a zero limit, when finding, then nothing is returned', async () => {
        expect(await findIds('wallets', { sort: [['id', 'asc']], skip: 6 })).toEqual([]);
        expect(await findIds('wallets', { sort: [['id', 'asc']], skip: 1000, limit: 5 })).toEqual([]);
        expect(await findIds('wallets', { sort: [['id', 'asc']], limit: 0 })).toEqual([]);
      });

      it('given a 2,500-document collection with many sort ties, when paging by offset with a stable sort, then each id is seen exactly once', async () => {
        const total = 2_500;
        const docs = Array.from({ length: total }, (_, i) => ({
          id: `e${String(i).padStart(5, '0')}`,
          group: (i * 7919) % 13,
        }));
        await upsert('entries', ...docs);
        expect(await store.count('entries')).toBe(total);

        const seen = new Map<string, number>();
        const pageSize = 100;
        for (let skip = 0; ; skip += pageSize) {
          const page = await findIds('entries', {
            sort: [
              ['group', 'asc'],
              ['id', 'asc'],
            ],
            skip,
            limit: pageSize,
          });
          for (const id of page) seen.set(id, (seen.get(id) ?? 0) + 1);
          if (page.length < pageSize) break;
        }
        expect(seen.size).toBe(total);
        expect([...seen.values()].every((times) => times === 1)).toBe(true);
      });
    });

    describe.each(['wallets', LISTED.name])('findText on %s', (collection) => {
      // A field holding text made for the reader (here JSON, as the list read models keep their API objects).
      const text = (value: unknown) => JSON.stringify(value);
      const tricky = text({ memo: 'Zoë 😀 "quoted" \\ back\nline', n: -1.5, none: null });

      beforeEach(async () => {
        await upsert(
          collection,
          { id: 'w1', ownerType: 'agent', balance: 3, phone: '+254700000001', apiText: text({ id: 'w1' }) },
          { id: 'w2', ownerType: 'agent', balance: 1, phone: '+254700000002', apiText: tricky },
          { id: 'w3', ownerType: 'merchant', balance: 2, phone: '+254700000003', apiText: text({ id: 'w3' }) },
          { id: 'w4', ownerType: 'agent', balance: 2, phone: '+254700000004', apiText: '' },
        );
      });

      it('given documents holding the field as a string, when finding their text, then each text comes back byte for byte in the order, filter and window of find', async () => {
        const query: FindQuery = {
          where: { ownerType: 'agent' },
          sort: [
            ['balance', 'asc'],
            ['id', 'asc'],
          ],
        };
        expect(await store.findText(collection, query, 'apiText')).toEqual([tricky, '', text({ id: 'w1' })]);
        expect(await store.findText(collection, { ...query, skip: 1, limit: 1 }, 'apiText')).toEqual(['']);
        expect(await store.findText(collection, { ...query, limit: 0 }, 'apiText')).toEqual([]);
        expect(await store.findText(collection, { search: { text: '0003', fields: ['phone'] } }, 'apiText')).toEqual([
          text({ id: 'w3' }),
        ]);
        expect(await store.findText(collection, { range: { balance: { gte: 3 } } }, 'apiText')).toEqual([
          text({ id: 'w1' }),
        ]);
      });

      it('given documents without the field or holding another type there, when finding their text, then those come back as whole documents in their place', async () => {
        await upsert(
          collection,
          { id: 'w5', ownerType: 'agent', balance: 4, memo: 'old' },
          { id: 'w6', ownerType: 'agent', balance: 5, apiText: 7 },
        );
        const query: FindQuery = {
          where: { ownerType: 'agent' },
          range: { balance: { gte: 3 } },
          sort: [['balance', 'asc']],
        };
        expect(await store.findText(collection, query, 'apiText')).toEqual([
          text({ id: 'w1' }),
          { id: 'w5', ownerType: 'agent', balance: 4, memo: 'old' },
          { id: 'w6', ownerType: 'agent', balance: 5, apiText: 7 },
        ]);
      });

      it('given a bad field path or an undeclared collection, when finding text, then a ReadStoreQueryError is raised', async () => {
        await expect(store.findText(collection, {}, "apiText') --")).rejects.toBeInstanceOf(ReadStoreQueryError);
        await expect(store.findText('nope', {}, 'apiText')).rejects.toBeInstanceOf(ReadStoreQueryError);
      });

      it('given a document whose field is patched, or upserted again without it, when finding its text, then what it holds now comes back', async () => {
        await store.commit([{ op: 'patch', collection, id: 'w1', patch: { apiText: text({ id: 'w1', v: 2 }) } }]);
        await upsert(collection, { id: 'w3', ownerType: 'merchant', balance: 2 });
        expect(await store.findText(collection, { sort: [['id', 'asc']], limit: 3 }, 'apiText')).toEqual([
          text({ id: 'w1', v: 2 }),
          tricky,
          { id: 'w3', ownerType: 'merchant', balance: 2 },
        ]);
      });
    });

    describe('search and count', () => {
      beforeEach(async () => {
        await upsert(
          'wallets',
          { id: 'w1', status: 'open', phone: '+254 700 111 222', memo: 'Rent for ALICE' },
          { id: 'w2', status: 'open', phone: '+254 700 333 444', memo: '100% cashback' },
          { id: 'w3', status: 'frozen', phone: '+254 711 555 666', memo: '100 percent cashback' },
          { id: 'w4', status: 'open', phone: '+254 722 alice', memo: 'a_b' },
          { id: 'w5', status: 'frozen', memo: 'axb' },
          { id: 'w6', status: 'open', memo: "O'Brien paid C:\\temp (x+y).* [1]" },
          { id: 'w7', status: 'open', memo: 'École Ünïcode façade' },
          { id: 'w8', status: 'open', memo: 'ecole' },
        );
      });
      const search = (text: string, fields = ['phone', 'memo']) => sortedIds('wallets', { search: { text, fields } });

      it('given text in another case, when searching, then it matches case-insensitively', async () => {
        expect(await search('alice', ['memo'])).toEqual(['w1']);
        expect(await search('RENT FOR', ['memo'])).toEqual(['w1']);
      });

      it('given non-ASCII text, when searching, then it matches literally and case-insensitively', async () => {
        expect(await search('école')).toEqual(['w7']);
        expect(await search('ÜNÏCODE FAÇADE')).toEqual(['w7']);
      });

      it('given wildcard characters % and _, when searching, then they match only themselves', async () => {
        expect(await search('100%')).toEqual(['w2']);
        expect(await search('%')).toEqual(['w2']);
        expect(await search('a_b')).toEqual(['w4']);
        expect(await search('_')).toEqual(['w4']);
      });

      it('given quotes, backslashes and regex syntax, when searching, then they match only themselves', async () => {
        expect(await search("o'brien")).toEqual(['w6']);
        expect(await search('C:\\temp')).toEqual(['w6']);
        expect(await search('\\')).toEqual(['w6']);
        expect(await search('(x+y).*')).toEqual(['w6']);
        expect(await search('[1]')).toEqual(['w6']);
        expect(await search('.*')).toEqual(['w6']);
        expect(await search('^+254')).toEqual([]);
      });

      it('given several fields, when searching, then a match in any of them counts', async () => {
        expect(await search('alice')).toEqual(['w1', 'w4']);
        expect(await search('700')).toEqual(['w1', 'w2']);
      });

      it('given fields to search, when the text is only in another field, then it does not match', async () => {
        expect(await search('alice', ['phone'])).toEqual(['w4']);
        expect(await search('cashback', ['phone'])).toEqual([]);
      });

      it('given a search and a where, when finding, then both must hold', async () => {
        expect(
          await sortedIds('wallets', { where: { status: 'open' }, search: { text: 'cashback', fields: ['memo'] } }),
        ).toEqual(['w2']);
      });

      it('given a field not declared in searchFields, when searching it, then a ReadStoreQueryError is raised', async () => {
        await expect(store.find('wallets', { search: { text: 'open', fields: ['status'] } })).rejects.toBeInstanceOf(
          ReadStoreQueryError,
        );
        await expect(store.find('wallets', { search: { text: 'x', fields: ['memo', 'nope'] } })).rejects.toBeInstanceOf(
          ReadStoreQueryError,
        );
        await expect(store.count('entries', { search: { text: 'x', fields: ['memo'] } })).rejects.toBeInstanceOf(
          ReadStoreQueryError,
        );
      });

      it('given where and search, when counting, then the count is what find returns', async () => {
        expect(await store.count('wallets')).toBe(8);
        expect(await store.count('wallets', { where: { status: 'frozen' } })).toBe(2);
        expect(await store.count('wallets', { search: { text: 'CASHBACK', fields: ['memo'] } })).toBe(2);
        expect(
          await store.count('wallets', {
            where: { status: 'open' },
            search: { text: '100', fields: ['phone', 'memo'] },
          }),
        ).toBe(1);
        expect(await store.count('wallets', { where: { status: 'closed' } })).toBe(0);
      });
    });

    describe('range', () => {
      beforeEach(async () => {
        await upsert(
          'wallets',
          { id: 'r1', ownerType: 'agent', balance: 5, key: '2025-01-01T00:00:00.000Z|a' },
          { id: 'r2', ownerType: 'agent', balance: 10, key: '2025-01-02T00:00:00.000Z|b' },
          { id: 'r3', ownerType: 'agent', balance: 20, key: '2025-01-02T00:00:00.000Z|c' },
          { id: 'r4', ownerType: 'shop', balance: 30, key: '2025-01-03T00:00:00.000Z|d' },
          { id: 'r5', ownerType: 'agent', balance: '15', key: 7 },
          { id: 'r6', ownerType: 'agent', balance: null, key: null },
          { id: 'r7', ownerType: 'agent' },
        );
      });

      it('given number bounds, when finding, then only numbers inside them match, never strings, null or missing fields', async () => {
        expect(await sortedIds('wallets', { range: { balance: { gte: 10, lt: 30 } } })).toEqual(['r2', 'r3']);
        expect(await sortedIds('wallets', { range: { balance: { gt: 5 } } })).toEqual(['r2', 'r3', 'r4']);
        expect(await sortedIds('wallets', { range: { balance: { lte: 10 } } })).toEqual(['r1', 'r2']);
      });

      it('given string bounds, when finding, then strings compare by code point and numbers, null and missing fields never match', async () => {
        expect(await sortedIds('wallets', { range: { key: { gte: '2025-01-02', lt: '2025-01-03' } } })).toEqual([
          'r2',
          'r3',
        ]);
        expect(await sortedIds('wallets', { range: { key: { lt: '2025-01-02T00:00:00.000Z|c' } } })).toEqual([
          'r1',
          'r2',
        ]);
        expect(await sortedIds('wallets', { range: { key: { gt: '2025-01-02T00:00:00.000Z|b' } } })).toEqual([
          'r3',
          'r4',
        ]);
      });

      it('given a range with where, sort and limit, when finding and counting, then they combine as keyset paging needs', async () => {
        const page = {
          where: { ownerType: 'agent' },
          range: { key: { lt: '2025-01-03' } },
          sort: [['key', 'desc']] as FindQuery['sort'],
        };
        expect(await findIds('wallets', { ...page, limit: 2 })).toEqual(['r3', 'r2']);
        expect(
          await findIds('wallets', { ...page, range: { key: { lt: '2025-01-02T00:00:00.000Z|b' } }, limit: 2 }),
        ).toEqual(['r1']);
        expect(await store.count('wallets', { where: page.where, range: page.range })).toBe(3);
      });

      it('given bounds of mixed types, no bound or an unknown bound, when finding, then a ReadStoreQueryError is raised', async () => {
        await expect(store.find('wallets', { range: { balance: { gte: 1, lt: 'x' } } })).rejects.toBeInstanceOf(
          ReadStoreQueryError,
        );
        await expect(store.find('wallets', { range: { balance: {} } })).rejects.toBeInstanceOf(ReadStoreQueryError);
        await expect(store.count('wallets', { range: { balance: { ne: 1 } as never } })).rejects.toBeInstanceOf(
          ReadStoreQueryError,
        );
        await expect(store.find('wallets', { range: { balance: { gte: true } as never } })).rejects.toBeInstanceOf(
          ReadStoreQueryError,
        );
        await expect(store.find('wallets', { range: { "x') OR 1=1 --": { gte: 1 } } })).rejects.toBeInstanceOf(
          ReadStoreQueryError,
        );
      });
    });

    describe('commit and checkpoints', () => {
      it('given a projection that never committed, when reading its checkpoint, then it is null', async () => {
        expect(await store.getCheckpoint('balances')).toBeNull();
      });

      it('given commits with checkpoints, when reading them, then each projection has its last position', async () => {
        await store.commit([{ op: 'upsert', collection: 'wallets', doc: { id: 'w1' } }], {
          projection: 'balances',
          position: 3,
        });
        await store.commit([], { projection: 'balances', position: 42 });
        await store.commit([], { projection: 'statements', position: 7 });
        await store.commit([{ op: 'upsert', collection: 'wallets', doc: { id: 'w2' } }]);
        expect(await store.getCheckpoint('balances')).toBe(42);
        expect(await store.getCheckpoint('statements')).toBe(7);
        expect(await store.get('wallets', 'w2')).toEqual({ id: 'w2' });
      });

      it('given a batch whose last write has no string id, when committed, then nothing is written and the checkpoint stays', async () => {
        await store.commit([{ op: 'upsert', collection: 'wallets', doc: { id: 'w1', balance: 1 } }], {
          projection: 'balances',
          position: 5,
        });
        const bad = { id: 42 } as unknown as Document;
        await expect(
          store.commit(
            [
              { op: 'upsert', collection: 'wallets', doc: { id: 'w2' } },
              { op: 'patch', collection: 'wallets', id: 'w1', patch: { balance: 2 } },
              { op: 'delete', collection: 'wallets', id: 'w1' },
              { op: 'upsert', collection: 'wallets', doc: bad },
            ],
            { projection: 'balances', position: 6 },
          ),
        ).rejects.toThrow();
        expect(await store.get('wallets', 'w1')).toEqual({ id: 'w1', balance: 1 });
        expect(await store.get('wallets', 'w2')).toBeNull();
        expect(await store.getCheckpoint('balances')).toBe(5);
      });

      it('given a batch writing to an unknown collection, when committed, then nothing is written and the checkpoint stays', async () => {
        await expect(
          store.commit(
            [
              { op: 'upsert', collection: 'wallets', doc: { id: 'w1' } },
              { op: 'upsert', collection: 'unknown', doc: { id: 'u1' } },
            ],
            { projection: 'balances', position: 1 },
          ),
        ).rejects.toBeInstanceOf(ReadStoreQueryError);
        expect(await store.get('wallets', 'w1')).toBeNull();
        expect(await store.getCheckpoint('balances')).toBeNull();
      });
    });

    describe('search with several clauses', () => {
      beforeEach(async () => {
        await upsert(
          'wallets',
          { id: 'w1', status: 'open', phone: '+254 700 111 222', memo: 'Rent for ALICE' },
          { id: 'w2', status: 'open', phone: '+254 700 333 444', memo: 'groceries' },
          { id: 'w3', status: 'frozen', phone: '+254 711 555 666', memo: 'Paid by Alice' },
          { id: 'w4', status: 'open', phone: '+254 722 alice', memo: '333 percent' },
          { id: 'w5', status: 'open', memo: 'nothing here' },
        );
      });

      it('given clauses with their own texts and fields, when searching, then a document matching any clause is found', async () => {
        const search = [
          { text: 'alice', fields: ['memo'] },
          { text: '333', fields: ['phone'] },
        ];
        expect(await sortedIds('wallets', { search })).toEqual(['w1', 'w2', 'w3']);
        expect(await store.count('wallets', { search })).toBe(3);
      });

      it('given clauses, when a text is only in a field of another clause, then that clause does not match it', async () => {
        // 'alice' is in w4's phone and '333' in w4's memo: neither clause searches there.
        expect(
          await sortedIds('wallets', {
            search: [
              { text: 'ALICE', fields: ['memo'] },
              { text: '333', fields: ['phone'] },
            ],
          }),
        ).not.toContain('w4');
      });

      it('given one clause in an array, when searching, then it matches as the clause alone does', async () => {
        for (const clause of [
          { text: 'alice', fields: ['memo'] },
          { text: '700', fields: ['phone', 'memo'] },
        ]) {
          expect(await sortedIds('wallets', { search: [clause] })).toEqual(
            await sortedIds('wallets', { search: clause }),
          );
        }
      });

      it('given clauses and a where, when finding and counting, then the where holds and any clause may match', async () => {
        const query = {
          where: { status: 'open' },
          search: [
            { text: 'alice', fields: ['memo'] },
            { text: '333', fields: ['phone'] },
          ],
        };
        expect(await sortedIds('wallets', query)).toEqual(['w1', 'w2']);
        expect(await store.count('wallets', query)).toBe(2);
      });

      it('given clauses with %, _ and regex syntax, when searching, then each text matches literally', async () => {
        await upsert('wallets', { id: 'w6', memo: '50% off_all (x+y)' });
        expect(
          await sortedIds('wallets', {
            search: [
              { text: '%', fields: ['memo'] },
              { text: '(x+y)', fields: ['phone'] },
            ],
          }),
        ).toEqual(['w6']);
        expect(
          await sortedIds('wallets', {
            search: [
              { text: 'f_a', fields: ['phone'] },
              { text: '.*', fields: ['memo'] },
            ],
          }),
        ).toEqual([]);
      });

      it('given a clause naming a field not declared in searchFields, when searching, then a ReadStoreQueryError is raised', async () => {
        const search = [
          { text: 'alice', fields: ['memo'] },
          { text: 'open', fields: ['status'] },
        ];
        await expect(store.find('wallets', { search })).rejects.toBeInstanceOf(ReadStoreQueryError);
        await expect(store.count('wallets', { search })).rejects.toBeInstanceOf(ReadStoreQueryError);
      });
    });

    describe('commit with an expected checkpoint', () => {
      const w = (id: string, extra: Record<string, unknown> = {}): Write => ({
        op: 'upsert',
        collection: 'wallets',
        doc: { id, ...extra },
      });

      it('given a projection with no checkpoint, when a commit expects null, then it commits and sets the checkpoint', async () => {
        await store.commit([w('w1')], { projection: 'balances', position: 4, expected: null });
        expect(await store.get('wallets', 'w1')).toEqual({ id: 'w1' });
        expect(await store.getCheckpoint('balances')).toBe(4);
      });

      it('given a checkpoint, when a commit expects exactly it, then it commits and moves the checkpoint', async () => {
        await store.commit([w('w1', { balance: 1 })], { projection: 'balances', position: 4 });
        await store.commit([w('w1', { balance: 2 }), w('w2')], { projection: 'balances', position: 9, expected: 4 });
        expect(await store.get('wallets', 'w1')).toEqual({ id: 'w1', balance: 2 });
        expect(await store.get('wallets', 'w2')).toEqual({ id: 'w2' });
        expect(await store.getCheckpoint('balances')).toBe(9);
      });

      it('given a checkpoint, when a commit expects another one or null, then CheckpointConflictError is thrown and nothing is written', async () => {
        await store.commit([w('w1', { balance: 1 }), w('w2', { balance: 1 })], { projection: 'balances', position: 4 });
        for (const expected of [3, 5, 0, null]) {
          const writes: Write[] = [
            w('w1', { balance: 99 }),
            { op: 'patch', collection: 'wallets', id: 'w2', patch: { balance: 99 } },
            { op: 'delete', collection: 'wallets', id: 'w2' },
            w('w3'),
          ];
          const refused = store.commit(writes, { projection: 'balances', position: 10, expected });
          await expect(refused).rejects.toBeInstanceOf(CheckpointConflictError);
          await expect(refused).rejects.toMatchObject({
            code: 'CHECKPOINT_CONFLICT',
            projection: 'balances',
            expected,
            actual: 4,
          });
        }
        expect(await sortedIds('wallets')).toEqual(['w1', 'w2']);
        expect(await store.get('wallets', 'w1')).toEqual({ id: 'w1', balance: 1 });
        expect(await store.get('wallets', 'w2')).toEqual({ id: 'w2', balance: 1 });
        expect(await store.getCheckpoint('balances')).toBe(4);
      });

      it('given no checkpoint, when a commit expects a position, then CheckpointConflictError reports null and nothing is written', async () => {
        await expect(
          store.commit([w('w1')], { projection: 'balances', position: 1, expected: 0 }),
        ).rejects.toMatchObject({ expected: 0, actual: null });
        expect(await store.get('wallets', 'w1')).toBeNull();
        expect(await store.getCheckpoint('balances')).toBeNull();
      });

      it('given two projections, when one commits with an expectation, then only its own checkpoint is compared and moved', async () => {
        await store.commit([], { projection: 'balances', position: 4 });
        await store.commit([], { projection: 'statements', position: 7 });
        await store.commit([], { projection: 'statements', position: 8, expected: 7 });
        await expect(store.commit([], { projection: 'balances', position: 8, expected: 7 })).rejects.toBeInstanceOf(
          CheckpointConflictError,
        );
        expect(await store.getCheckpoint('balances')).toBe(4);
        expect(await store.getCheckpoint('statements')).toBe(8);
      });

      it('given several projections committing at once (the followers of one page), when one expects a stale checkpoint and one writes a bad document, then only those two are refused and the others are committed', async () => {
        for (const projection of ['p1', 'p2', 'p3', 'p4']) await store.commit([], { projection, position: 1 });
        const results = await Promise.allSettled([
          store.commit([w('a')], { projection: 'p1', position: 2, expected: 1 }),
          store.commit([w('b')], { projection: 'p2', position: 2, expected: 0 }),
          store.commit([w('c'), { op: 'upsert', collection: 'wallets', doc: { id: 5 } as unknown as Document }], {
            projection: 'p3',
            position: 2,
            expected: 1,
          }),
          store.commit([w('d')], { projection: 'p4', position: 2, expected: 1 }),
        ]);
        expect(results.map((result) => result.status)).toEqual(['fulfilled', 'rejected', 'rejected', 'fulfilled']);
        expect((results[1] as PromiseRejectedResult).reason).toBeInstanceOf(CheckpointConflictError);
        expect((results[2] as PromiseRejectedResult).reason).toBeInstanceOf(TypeError);
        expect((await store.find('wallets', { sort: [['id', 'asc']] })).map((doc) => doc.id)).toEqual(['a', 'd']);
        expect(
          await Promise.all(['p1', 'p2', 'p3', 'p4'].map((projection) => store.getCheckpoint(projection))),
        ).toEqual([2, 1, 1, 2]);
      });
    });

    describe('getMany', () => {
      it('given some of the ids exist, when they are fetched, then the existing documents come back once each and missing ids are skipped', async () => {
        await upsert('wallets', { id: 'w1', balance: 1 }, { id: 'w2', balance: 2 }, { id: 'w3', balance: 3 });
        const docs = await store.getMany('wallets', ['w3', 'missing', 'w1']);
        expect(docs.sort((a, b) => a.id.localeCompare(b.id))).toEqual([
          { id: 'w1', balance: 1 },
          { id: 'w3', balance: 3 },
        ]);
        expect(await store.getMany('wallets', [])).toEqual([]);
        expect(await store.getMany('wallets', ['nope'])).toEqual([]);
      });

      it('given more than 500 ids, when they are fetched, then every existing document comes back exactly once', async () => {
        await upsert('entries', ...Array.from({ length: 1_200 }, (_, i) => ({ id: `e${i}`, group: i % 7 })));
        const ids = [
          ...Array.from({ length: 1_150 }, (_, i) => `e${i}`),
          ...Array.from({ length: 100 }, (_, i) => `missing${i}`),
        ];
        const docs = await store.getMany('entries', ids);
        expect(docs).toHaveLength(1_150);
        expect(new Set(docs.map((d) => d.id))).toEqual(new Set(ids.filter((id) => id.startsWith('e'))));
        expect(docs.find((d) => d.id === 'e1000')).toEqual({ id: 'e1000', group: 1000 % 7 });
      });

      it('given an undeclared collection, when fetching many, then a ReadStoreQueryError is raised', async () => {
        await expect(store.getMany('nope', ['x'])).rejects.toBeInstanceOf(ReadStoreQueryError);
      });
    });

    describe('promote and dropCollection', () => {
      const SHADOW: CollectionDefinition = { ...WALLETS, name: 'wallets__rebuild', indexes: [] };

      beforeEach(async () => {
        await store.defineCollections([SHADOW]);
        await upsert(
          'wallets',
          { id: 'old1', ownerType: 'agent', balance: 1, memo: 'old' },
          { id: 'shared', ownerType: 'agent', balance: 1, memo: 'old' },
        );
        await store.commit([], { projection: 'wallets', position: 40 });
        await store.commit(
          [
            {
              op: 'upsert',
              collection: SHADOW.name,
              doc: { id: 'shared', ownerType: 'agent', balance: 2, memo: 'Rebuilt ONE' },
            },
            {
              op: 'upsert',
              collection: SHADOW.name,
              doc: { id: 'new1', ownerType: 'merchant', balance: 5, memo: 'rebuilt two' },
            },
            {
              op: 'upsert',
              collection: SHADOW.name,
              doc: { id: 'new2', ownerType: 'agent', balance: 3, phone: '+254 700 000 001' },
            },
          ],
          { projection: 'wallets__rebuild', position: 42 },
        );
      });

      it('when a source is promoted, then the target holds exactly the source documents and the checkpoint moved from the source to the target', async () => {
        await store.promote(SHADOW.name, 'wallets', { from: 'wallets__rebuild', to: 'wallets' });
        expect(await store.find('wallets', { sort: [['id', 'asc']] })).toEqual([
          { id: 'new1', ownerType: 'merchant', balance: 5, memo: 'rebuilt two' },
          { id: 'new2', ownerType: 'agent', balance: 3, phone: '+254 700 000 001' },
          { id: 'shared', ownerType: 'agent', balance: 2, memo: 'Rebuilt ONE' },
        ]);
        expect(await store.get('wallets', 'old1')).toBeNull();
        expect(await store.getCheckpoint('wallets')).toBe(42);
        expect(await store.getCheckpoint('wallets__rebuild')).toBeNull();
      });

      it('when a source is promoted, then the source is gone: defined again it is empty', async () => {
        await store.promote(SHADOW.name, 'wallets', { from: 'wallets__rebuild', to: 'wallets' });
        await store.defineCollections([SHADOW]);
        expect(await store.count(SHADOW.name)).toBe(0);
        expect(await store.count('wallets')).toBe(3);
      });

      it('when a source is promoted, then the target answers where, sort, search and writes as its definition declares', async () => {
        await store.promote(SHADOW.name, 'wallets', { from: 'wallets__rebuild', to: 'wallets' });
        expect(
          await findIds('wallets', {
            where: { ownerType: 'agent' },
            sort: [
              ['balance', 'desc'],
              ['id', 'asc'],
            ],
          }),
        ).toEqual(['new2', 'shared']);
        expect(
          await sortedIds('wallets', {
            search: [
              { text: 'rebuilt', fields: ['memo'] },
              { text: '000 001', fields: ['phone'] },
            ],
          }),
        ).toEqual(['new1', 'new2', 'shared']);
        await store.commit(
          [{ op: 'upsert', collection: 'wallets', doc: { id: 'later', ownerType: 'agent', balance: 9 } }],
          { projection: 'wallets', position: 43, expected: 42 },
        );
        expect(
          await findIds('wallets', {
            where: { ownerType: 'agent' },
            sort: [
              ['balance', 'desc'],
              ['id', 'asc'],
            ],
            limit: 1,
          }),
        ).toEqual(['later']);
      });

      it('when a source without a checkpoint is promoted, then the target has no checkpoint either', async () => {
        await store.dropCollection(SHADOW.name);
        await store.defineCollections([SHADOW]);
        const other = { projection: 'other__rebuild', to: 'wallets' };
        await store.promote(SHADOW.name, 'wallets', { from: other.projection, to: other.to });
        expect(await store.getCheckpoint('wallets')).toBeNull();
        expect(await store.count('wallets')).toBe(0);
      });

      it("when a source is promoted, then the target projection's generation rises and a commit expecting the old generation is refused", async () => {
        const before = await store.getGeneration('wallets');
        await store.promote(SHADOW.name, 'wallets', { from: 'wallets__rebuild', to: 'wallets' });
        expect(await store.getGeneration('wallets')).toBe(before + 1);
        const checkpoint = await store.getCheckpoint('wallets');
        await expect(
          store.commit([{ op: 'upsert', collection: 'wallets', doc: { id: 'stale', ownerType: 'agent' } }], {
            projection: 'wallets',
            position: (checkpoint ?? 0) + 1,
            expected: checkpoint,
            generation: before,
          }),
        ).rejects.toBeInstanceOf(CheckpointConflictError);
        expect(await store.get('wallets', 'stale')).toBeNull();
        await store.commit([{ op: 'upsert', collection: 'wallets', doc: { id: 'fresh', ownerType: 'agent' } }], {
          projection: 'wallets',
          position: (checkpoint ?? 0) + 1,
          expected: checkpoint,
          generation: before + 1,
        });
        expect(await store.get('wallets', 'fresh')).not.toBeNull();
      });

      it('given a promoted collection, when it is rebuilt aside and promoted again, then the second promote replaces the first', async () => {
        await store.promote(SHADOW.name, 'wallets', { from: 'wallets__rebuild', to: 'wallets' });
        await store.defineCollections([SHADOW]);
        await store.commit([{ op: 'upsert', collection: SHADOW.name, doc: { id: 'third', ownerType: 'agent' } }], {
          projection: 'wallets__rebuild',
          position: 50,
        });
        await store.promote(SHADOW.name, 'wallets', { from: 'wallets__rebuild', to: 'wallets' });
        expect(await findIds('wallets')).toEqual(['third']);
        expect(await store.getCheckpoint('wallets')).toBe(50);
      });

      it('when a collection is dropped, then its documents are gone, and dropping a missing collection is fine', async () => {
        await store.dropCollection(SHADOW.name);
        await store.dropCollection(SHADOW.name);
        await store.dropCollection('never_defined');
        await store.defineCollections([SHADOW]);
        expect(await store.count(SHADOW.name)).toBe(0);
        expect(await store.count('wallets')).toBe(2);
        expect(await store.getCheckpoint('wallets')).toBe(40);
      });
    });

    describe('incrementCounter', () => {
      const COUNTERS: CollectionDefinition = { name: 'counters', indexes: [['expiresAt']] };
      const NOW = 1_700_000_000_000;
      const bump = (id: string, by = 1, now = NOW, expiresAt = now + 60_000) =>
        store.incrementCounter(COUNTERS.name, id, { by, now, expiresAt });
      beforeEach(async () => {
        await store.defineCollections([COUNTERS]);
      });

      it('given no counter, when it is incremented twice, then it starts at the increment with the given expiry, and then adds to it and keeps that expiry', async () => {
        expect(await bump('a', 1, NOW, NOW + 60_000)).toEqual({ id: 'a', count: 1, expiresAt: NOW + 60_000 });
        expect(await bump('a', 2, NOW + 10, NOW + 70_000)).toEqual({ id: 'a', count: 3, expiresAt: NOW + 60_000 });
        expect(await store.get(COUNTERS.name, 'a')).toEqual({ id: 'a', count: 3, expiresAt: NOW + 60_000 });
      });

      it('given 50 increments of one counter at once, when they are answered, then each saw a different count, 1 to 50', async () => {
        const counts = (await Promise.all(Array.from({ length: 50 }, () => bump('parallel')))).map(
          (counter) => counter.count,
        );
        expect(counts.sort((x, y) => x - y)).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
        expect((await store.get(COUNTERS.name, 'parallel'))?.count).toBe(50);
      });

      it('given an expired counter, when it is incremented, then it starts afresh with the new expiry', async () => {
        await bump('old', 5, NOW, NOW + 1000);
        expect(await bump('old', 1, NOW + 1000, NOW + 61_000)).toEqual({
          id: 'old',
          count: 1,
          expiresAt: NOW + 61_000,
        });
      });

      it('given counters, when one is decremented past zero and a missing one is decremented, then both are 0', async () => {
        await bump('down', 1);
        expect((await bump('down', -2)).count).toBe(0);
        expect((await bump('missing', -1)).count).toBe(0);
      });

      it('given a counter, when its expiresAt is patched, then it keeps its count and expires at the new time', async () => {
        await bump('locked', 3, NOW, NOW + 1000);
        await store.commit([
          { op: 'patch', collection: COUNTERS.name, id: 'locked', patch: { expiresAt: NOW + 600_000 } },
        ]);
        expect(await bump('locked', 1, NOW + 5000)).toEqual({ id: 'locked', count: 4, expiresAt: NOW + 600_000 });
      });

      it('given expired and live counters, when a handle increments for the first time, then the expired ones are deleted and the live ones kept', async () => {
        await store.commit([
          { op: 'upsert', collection: COUNTERS.name, doc: { id: 'gone-1', count: 3, expiresAt: NOW - 1 } },
          { op: 'upsert', collection: COUNTERS.name, doc: { id: 'gone-2', count: 1, expiresAt: NOW } },
          { op: 'upsert', collection: COUNTERS.name, doc: { id: 'kept', count: 2, expiresAt: NOW + 1 } },
        ]);
        await bump('other');
        expect((await store.find(COUNTERS.name)).map((d) => d.id).sort()).toEqual(['kept', 'other']);
      });

      it('given a change that is not finite numbers or an undeclared collection, when incrementing, then it is refused and nothing is written', async () => {
        await expect(
          store.incrementCounter(COUNTERS.name, 'x', { by: Number.NaN, now: NOW, expiresAt: NOW + 1 }),
        ).rejects.toBeInstanceOf(TypeError);
        await expect(
          store.incrementCounter(COUNTERS.name, 'x', { by: 1, now: NOW, expiresAt: undefined as unknown as number }),
        ).rejects.toBeInstanceOf(TypeError);
        await expect(
          store.incrementCounter('nope', 'x', { by: 1, now: NOW, expiresAt: NOW + 1 }),
        ).rejects.toBeInstanceOf(ReadStoreQueryError);
        expect(await store.get(COUNTERS.name, 'x')).toBeNull();
      });
    });

    describe('take', () => {
      it('given a document, when it is taken, then it is returned and gone, and taking it again returns null', async () => {
        await upsert('entries', { id: 'e1', group: 1, secret: 'sealed' }, { id: 'e2', group: 1 });
        expect(await store.take('entries', 'e1')).toEqual({ id: 'e1', group: 1, secret: 'sealed' });
        expect(await store.get('entries', 'e1')).toBeNull();
        expect(await store.take('entries', 'e1')).toBeNull();
        expect(await findIds('entries')).toEqual(['e2']);
      });

      it('given a document, when 20 takes of it run at once, then exactly one gets it', async () => {
        await upsert('entries', { id: 'once', group: 2 });
        const taken = await Promise.all(Array.from({ length: 20 }, () => store.take('entries', 'once')));
        expect(taken.filter((doc) => doc !== null)).toEqual([{ id: 'once', group: 2 }]);
      });

      it('given no such document or an undeclared collection, when taking, then null or a ReadStoreQueryError', async () => {
        expect(await store.take('entries', 'missing')).toBeNull();
        await expect(store.take('nope', 'x')).rejects.toBeInstanceOf(ReadStoreQueryError);
      });
    });
  });
}

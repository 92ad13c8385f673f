/**
 * The pure half of the MongoDB read-store adapter: ReadStore queries and writes as MongoDB filters, sorts and
 * bulk operations. No I/O, so each rule is unit-tested without a server (test/adapters/mongodb-query.test.ts);
 * mongodb-read-store.ts runs what this builds.
 *
 * How it matches the embedded SQLite adapter (the reference behaviour):
 * - Documents are stored with `_id` = the port's `id` (and `id` kept as a field, so it sorts and filters like
 *   any other); `_id` is left out of what is read.
 * - where: `{field: {$eq: value}}`. MongoDB's equality is type-strict like the embedded one (`true` never
 *   matches `1`, `"10"` never matches `10`, integers and doubles compare as numbers), and `{$eq: null}`
 *   matches a null or a missing field. One difference: a field holding an array matches when an element
 *   equals the value; projections do not filter on arrays. Values are wrapped in `$eq` and only strings,
 *   finite numbers, booleans and null are accepted, so an object such as `{"$gt": ""}` passed as a value is
 *   refused rather than read as an operator, and a string such as `"{\"$gt\": \"\"}"` is only ever a string.
 * - Field names are checked against one pattern (letters, digits, `_`, dots between segments): no `$`, so
 *   neither `$where` nor any operator can be named as a field.
 * - sort: MongoDB orders null/missing < numbers < strings, numbers numerically and strings by their UTF-8
 *   bytes (code point order) without a collation, which is the embedded order.
 * - search: a case-insensitive `$regex` built from the text with every metacharacter escaped, so the text
 *   matches literally; fields of one clause and the clauses themselves are OR'ed. Case folding is PCRE's
 *   (per character) rather than JavaScript's toLowerCase: they differ only for rare letters.
 * - limit 0 returns nothing (MongoDB's limit(0) would mean "no limit": the adapter does not ask).
 */
import type { AnyBulkWriteOperation, Document as MongoDocument, Filter } from 'mongodb';
import type {
  CollectionDefinition,
  CounterChange,
  Document,
  FindQuery,
  RangeCondition,
  Scalar,
  SearchClause,
  Write,
} from '../../ports/read-store.ts';
import { ReadStoreQueryError } from '../../ports/read-store.ts';

export const COLLECTION_NAME = /^[a-z][a-z0-9_]*$/;
const FIELD_PATH = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$/;
/** Holds each projection's checkpoint (`position`) and generation: `{_id: projection, position?, generation?}`. */
export const CHECKPOINTS = 'checkpoints';

/** A stored document: the port's document with `_id` = its id. */
export type StoredDocument = { _id: string } & Record<string, unknown>;

export function checkField(field: string): string {
  if (typeof field !== 'string' || !FIELD_PATH.test(field))
    throw new ReadStoreQueryError(`bad field path ${JSON.stringify(field)}`);
  return field;
}

export function checkCollectionName(name: string): string {
  if (typeof name !== 'string' || !COLLECTION_NAME.test(name))
    throw new ReadStoreQueryError(`bad collection name ${JSON.stringify(name)}`);
  return name;
}

export function validateDefinition(def: CollectionDefinition): void {
  checkCollectionName(def.name);
  if (def.name === CHECKPOINTS) throw new ReadStoreQueryError(`reserved collection name ${def.name}`);
  for (const fields of def.indexes ?? []) {
    if (fields.length === 0) throw new ReadStoreQueryError(`${def.name}: an index needs at least one field`);
    fields.forEach(checkField);
  }
  (def.searchFields ?? []).forEach(checkField);
}

/** The key of a declared index: ascending on each field, in order. */
export function indexKey(fields: string[]): Array<[string, 1]> {
  return fields.map((field) => [checkField(field), 1]);
}

/** Whether an existing index (its `key` document as listIndexes returns it) is one of these declared ones. */
export function isDeclaredIndex(key: Record<string, unknown>, declared: string[][]): boolean {
  const fields = Object.entries(key);
  return declared.some(
    (wanted) =>
      wanted.length === fields.length && wanted.every((field, i) => fields[i]![0] === field && fields[i]![1] === 1),
  );
}

/**
 * Escapes text for a MongoDB (PCRE) regular expression so that it matches itself: each of
 * `\ ^ $ . | ? * + ( ) [ ] { }` (and `-`, `/`, `#`, which matter inside classes or with flags) gets a
 * backslash, and a NUL, which a BSON regex cannot hold, is written as `\x00`.
 */
export function escapeRegex(text: string): string {
  return text.replace(/[\\^$.|?*+()[\]{}\-/#]/g, '\\$&').replace(/\0/g, '\\x00');
}

/** The filter for `where` and `search` (ANDed): `{}` when there is neither. */
export function buildFilter(
  def: CollectionDefinition,
  query: Pick<FindQuery, 'where' | 'search' | 'range'> = {},
): Filter<StoredDocument> {
  const parts: Array<Filter<StoredDocument>> = [];
  const where = query.where ?? {};
  if (where === null || typeof where !== 'object' || Array.isArray(where))
    throw new ReadStoreQueryError('where must be an object of field: value');
  for (const [field, value] of Object.entries(where))
    parts.push({ [checkField(field)]: { $eq: checkScalar(field, value) } });
  for (const [field, condition] of Object.entries(query.range ?? {}))
    parts.push({ [checkField(field)]: rangeOperators(field, condition) });
  if (query.search !== undefined) {
    const clauses = Array.isArray(query.search) ? query.search : [query.search];
    if (clauses.length === 0) throw new ReadStoreQueryError('search needs at least one clause');
    parts.push({ $or: clauses.flatMap((clause) => searchConditions(def, clause)) });
  }
  if (parts.length === 0) return {};
  return parts.length === 1 ? parts[0]! : { $and: parts };
}

/**
 * `{$gt, $gte, $lt, $lte}`: MongoDB compares within a type bracket only, so a string range never matches a
 * number, null or a missing field, and a number range never a string: the embedded adapter's semantics.
 */
export function rangeOperators(field: string, condition: RangeCondition): Record<string, string | number> {
  if (condition === null || typeof condition !== 'object')
    throw new ReadStoreQueryError(`range ${field}: bounds must be an object`);
  const bounds = Object.entries(condition).filter(([, value]) => value !== undefined);
  if (bounds.length === 0) throw new ReadStoreQueryError(`range ${field}: at least one bound is needed`);
  const types = new Set(bounds.map(([, value]) => typeof value));
  if (types.size !== 1 || !(types.has('string') || types.has('number')))
    throw new ReadStoreQueryError(`range ${field}: bounds must all be strings or all be numbers`);
  const operators: Record<string, string | number> = {};
  for (const [name, value] of bounds) {
    if (!['gt', 'gte', 'lt', 'lte'].includes(name))
      throw new ReadStoreQueryError(`range ${field}: unknown bound ${JSON.stringify(name)}`);
    if (typeof value === 'number' && !Number.isFinite(value))
      throw new ReadStoreQueryError(`range ${field}: not a finite number`);
    operators[`$${name}`] = value as string | number;
  }
  return operators;
}

function checkScalar(field: string, value: Scalar): Scalar {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return value;
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new ReadStoreQueryError(`where ${field}: not a finite number`);
    return value;
  }
  throw new ReadStoreQueryError(`where ${field}: only strings, numbers, booleans and null are allowed`);
}

function searchConditions(def: CollectionDefinition, clause: SearchClause): Array<Filter<StoredDocument>> {
  if (clause === null || typeof clause !== 'object' || typeof clause.text !== 'string')
    throw new ReadStoreQueryError('search text must be a string');
  if (!Array.isArray(clause.fields) || clause.fields.length === 0)
    throw new ReadStoreQueryError('search needs at least one field');
  for (const field of clause.fields) {
    if (!def.searchFields?.includes(field))
      throw new ReadStoreQueryError(`${def.name}.${String(field)} is not declared in searchFields`);
    checkField(field);
  }
  const pattern = escapeRegex(clause.text);
  return clause.fields.map((field) => ({ [field]: { $regex: pattern, $options: 'i' } }));
}

export interface FindPlan {
  filter: Filter<StoredDocument>;
  sort: Array<[string, 1 | -1]>;
  skip: number;
  /** Undefined: no limit. */
  limit: number | undefined;
  /** True when the answer is empty whatever the data (limit 0): the adapter asks nothing. */
  empty: boolean;
}

export function buildFind(def: CollectionDefinition, query: FindQuery = {}): FindPlan {
  const filter = buildFilter(def, query);
  const sort = (query.sort ?? []).map(([field, direction]): [string, 1 | -1] => {
    if (direction !== 'asc' && direction !== 'desc')
      throw new ReadStoreQueryError(`bad sort direction ${JSON.stringify(direction)}`);
    return [checkField(field), direction === 'asc' ? 1 : -1];
  });
  const skip = query.skip === undefined ? 0 : nonNegativeInteger('skip', query.skip);
  const limit = query.limit === undefined ? undefined : nonNegativeInteger('limit', query.limit);
  return { filter, sort, skip, limit, empty: limit === 0 };
}

function nonNegativeInteger(name: string, value: number): number {
  if (!Number.isSafeInteger(value) || value < 0)
    throw new ReadStoreQueryError(`${name} must be a non-negative integer`);
  return value;
}

export interface WriteGroup {
  collection: string;
  operations: Array<AnyBulkWriteOperation<StoredDocument>>;
}

/**
 * The writes of one commit as ordered bulk operations, consecutive writes to one collection grouped, in the
 * given order. Everything is checked first, so a bad write anywhere in the batch fails before anything is
 * sent: unknown collection (ReadStoreQueryError), an upsert without a string id, an `_id` of its own, or a
 * patch that would change the id or name a field with `$` or `.` (TypeError, like the embedded adapter).
 */
export function planWrites(writes: Write[], definitionOf: (collection: string) => CollectionDefinition): WriteGroup[] {
  if (!Array.isArray(writes)) throw new TypeError('writes must be an array');
  const groups: WriteGroup[] = [];
  for (const write of writes) {
    const collection = definitionOf(write.collection).name;
    const operation = toOperation(write, collection);
    if (!operation) continue;
    const last = groups[groups.length - 1];
    if (last && last.collection === collection) last.operations.push(operation);
    else groups.push({ collection, operations: [operation] });
  }
  return groups;
}

function toOperation(write: Write, collection: string): AnyBulkWriteOperation<StoredDocument> | null {
  switch (write.op) {
    case 'upsert': {
      if (typeof write.doc?.id !== 'string')
        throw new TypeError(`upsert into ${collection}: the document needs a string id`);
      if ('_id' in write.doc)
        throw new TypeError(`upsert into ${collection}: _id is reserved (the id is stored as _id)`);
      return { replaceOne: { filter: { _id: write.doc.id }, replacement: toStored(write.doc), upsert: true } };
    }
    case 'patch': {
      if (typeof write.id !== 'string') throw new TypeError(`patch of ${collection}: the id must be a string`);
      if (write.patch === null || typeof write.patch !== 'object' || Array.isArray(write.patch))
        throw new TypeError(`patch of ${collection}: the patch must be an object`);
      if ('id' in write.patch && write.patch.id !== write.id)
        throw new TypeError(`patch of ${collection}: cannot change an id`);
      const set: Record<string, unknown> = {};
      for (const [key, value] of Object.entries(write.patch)) {
        if (key === '_id' || key.startsWith('$') || key.includes('.'))
          throw new TypeError(`patch of ${collection}: bad field name ${JSON.stringify(key)}`);
        if (value !== undefined) set[key] = value; // as JSON would: an undefined value is no value
      }
      if (Object.keys(set).length === 0) return null;
      return { updateOne: { filter: { _id: write.id }, update: { $set: set }, upsert: false } };
    }
    case 'delete':
      if (typeof write.id !== 'string') throw new TypeError(`delete from ${collection}: the id must be a string`);
      return { deleteOne: { filter: { _id: write.id } } };
    default:
      throw new TypeError(`unknown write ${JSON.stringify((write as { op?: unknown }).op)}`);
  }
}

export function toStored(doc: Document): StoredDocument {
  return { ...doc, _id: doc.id };
}

/** A stored document as the port's: without `_id`. */
export function fromStored<T extends Document>(stored: MongoDocument): T {
  const { _id, ...doc } = stored;
  return doc as T;
}

/**
 * findText's projection (aggregation expressions, MongoDB 4.4+): the field when it holds a string, otherwise the
 * whole stored document (one stored before the model kept the field), so one query serves both.
 */
export function textProjection(field: string): MongoDocument {
  const value = `$${checkField(field)}`;
  const isText = { $eq: [{ $type: value }, 'string'] };
  return { _id: 0, text: { $cond: [isText, value, '$$REMOVE'] }, doc: { $cond: [isText, '$$REMOVE', '$$ROOT'] } };
}

/** A row of textProjection as the port's: the text, or the document without `_id`. */
export function fromTextRow<T extends Document>(row: MongoDocument): string | T {
  return typeof row.text === 'string' ? row.text : fromStored<T>(row.doc as MongoDocument);
}

/**
 * Where a promoted projection's checkpoint ends up. `source`: the rebuilt model's checkpoint; `window`: what
 * the target's checkpoint became while the promote was under way (a runner that restarted in the window may
 * have committed), null when nothing did. A checkpoint that is too low only replays events the documents
 * already hold (each carries the position of the last event applied, and the runner skips older events); one
 * that is too high would lose events. So the lower of the two is kept (none when the source has none).
 */
export function promotedCheckpoint(source: number | null, window: number | null): number | null {
  if (source === null) return null;
  return window === null ? source : Math.min(source, window);
}

/**
 * The update pipeline of `incrementCounter`, for findOneAndUpdate with upsert: a counter that is live (its
 * `expiresAt` after `now`) gets `by` added, floored at 0, and keeps its expiry; a missing one (the upsert sees
 * only `_id`, so `$expiresAt` is missing, which compares below any number) or an expired one starts afresh.
 * Every expression of a `$set` stage reads the document as it entered the stage, so `count` and `expiresAt`
 * decide on the same `$expiresAt`. The id goes in as a `$literal`, so an id starting with `$` is never a path.
 */
export function counterUpdate(id: string, change: CounterChange): MongoDocument[] {
  checkCounterChange(id, change);
  const live = { $gt: ['$expiresAt', change.now] };
  return [
    {
      $set: {
        id: { $literal: id },
        count: { $cond: [live, { $max: [0, { $add: ['$count', change.by] }] }, Math.max(0, change.by)] },
        expiresAt: { $cond: [live, '$expiresAt', change.expiresAt] },
      },
    },
  ];
}

export function checkCounterChange(id: string, change: CounterChange): void {
  if (typeof id !== 'string') throw new TypeError('a counter needs a string id');
  for (const name of ['by', 'now', 'expiresAt'] as const) {
    if (!Number.isFinite(change?.[name])) throw new TypeError(`incrementCounter: ${name} must be a finite number`);
  }
}

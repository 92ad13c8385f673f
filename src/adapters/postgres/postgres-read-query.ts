/**
 * The pure half of the PostgreSQL read store: ReadStore queries as SQL over `rm_<collection>` tables of
 * `(id TEXT PRIMARY KEY, doc JSONB NOT NULL)`. No I/O; postgres-read-store.ts runs what this builds.
 *
 * Every field is reached through one expression, `read_store_key(doc->'a'->'b') COLLATE "C"` (the function is
 * created by the store's migration): a text that orders as the embedded adapter and MongoDB order values, and
 * that the declared indexes are built on, so the planner matches `where`, `range` and `sort` to them:
 * - null and a missing field: `0` (equal, first ascending, last descending);
 * - a number: `1` and the 16 hex digits of its IEEE double with the sign flipped (negatives: every bit), whose
 *   byte order is numeric order, so 2 < 10 and -1.5 < 0;
 * - a string: `2` and the string, compared in the "C" collation: UTF-8 byte order, which is code point order,
 *   whatever the database's own collation;
 * - a boolean: `3false`/`3true`; an object or array: `4` and its JSON text (do not sort on them).
 * The leading type digit makes equality type-strict (`true` never matches `1` nor `"5"` matches `5`) and brackets
 * ranges by type: a string range is bounded below by `'2'` and above by `'3'`, a number range by `'1'` and `'2'`,
 * so other types, null and missing fields never fall inside, as in MongoDB.
 *
 * Search is `lower()` of the string field in a Unicode-aware collation, matched with LIKE against the lowered
 * text whose `\`, `%` and `_` are escaped, so the text is always literal. Non-string values never match.
 *
 * PostgreSQL's TEXT and JSONB cannot hold U+0000, so no stored string contains one: an equality or a search with a
 * NUL matches nothing and compiles to FALSE, and no NUL is ever sent (it would fail the statement: a 500). The
 * inputs' own validation refuses a NUL first, with a 400 (src/domain/text.ts); this is the last guard.
 */
import { createHash } from 'node:crypto';
import type { CollectionDefinition, FindQuery, RangeCondition, Scalar, SearchClause } from '../../ports/read-store.ts';
import { ReadStoreQueryError } from '../../ports/read-store.ts';

export const COLLECTION_NAME = /^[a-z][a-z0-9_]*$/;
const FIELD_PATH = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$/;
/** Table and index names stay within PostgreSQL's 63 bytes: `rm_`, the name, `_` and a 12-digit hash. */
const MAX_COLLECTION_NAME = 46;
/** Reserved as in the embedded adapter, so that a collection name valid on one store is valid on every one. */
const RESERVED = new Set(['checkpoints', 'checkpoint_generations']);
export const CHECKPOINTS_TABLE = 'read_checkpoints';
export const KEY_FUNCTION = 'read_store_key';

export interface Compiled {
  sql: string;
  params: unknown[];
}

/** The migrations of the read store's own objects (collection tables are created by defineCollections). */
export const READ_STORE_MIGRATIONS = [
  {
    version: 1,
    sql: `
      CREATE TABLE IF NOT EXISTS ${CHECKPOINTS_TABLE} (
        projection TEXT PRIMARY KEY,
        position BIGINT,
        generation INTEGER NOT NULL DEFAULT 0
      );
      -- IMMUTABLE (indexes are built on it) and a single expression, so the planner inlines it.
      CREATE OR REPLACE FUNCTION ${KEY_FUNCTION}(value JSONB) RETURNS TEXT LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
        SELECT CASE jsonb_typeof(value)
          WHEN 'string' THEN '2' || (value #>> '{}')
          WHEN 'number' THEN '1' || CASE
            WHEN value::float8 >= 0
            THEN translate(left(encode(float8send(value::float8), 'hex'), 1), '01234567', '89abcdef')
              || substr(encode(float8send(value::float8), 'hex'), 2)
            ELSE translate(encode(float8send(value::float8), 'hex'), '0123456789abcdef', 'fedcba9876543210')
          END
          WHEN 'boolean' THEN '3' || (value #>> '{}')
          WHEN 'object' THEN '4' || value::text
          WHEN 'array' THEN '4' || value::text
          ELSE '0'
        END
      $$;
    `,
  },
];

export function tableName(collection: string): string {
  return `rm_${collection}`;
}

/** Each declared index's name: the table's and a hash of its fields (field lists can be longer than a name). */
export function indexName(table: string, fields: string[]): string {
  return `${table}_${createHash('sha256').update(fields.join(',')).digest('hex').slice(0, 12)}`;
}

/** Whether an index of the table has the name indexName gives a declared index (not the primary key's, nor another). */
export function isDeclaredIndexName(table: string, name: string): boolean {
  return name.length === table.length + 13 && name.startsWith(`${table}_`) && /^[0-9a-f]{12}$/.test(name.slice(-12));
}

export function indexSql(table: string, fields: string[]): string {
  return (
    `CREATE INDEX IF NOT EXISTS ${quote(indexName(table, fields))} ON ${quote(table)} ` +
    `(${fields.map((field) => `(${fieldExpr(field)})`).join(', ')})`
  );
}

export function checkCollectionName(name: string): string {
  if (typeof name !== 'string' || !COLLECTION_NAME.test(name) || name.length > MAX_COLLECTION_NAME) {
    throw new ReadStoreQueryError(
      `bad collection name ${JSON.stringify(name)} (lower-case letters, digits and _, at most ${MAX_COLLECTION_NAME})`,
    );
  }
  return name;
}

export function validateDefinition(def: CollectionDefinition): void {
  checkCollectionName(def.name);
  if (RESERVED.has(def.name)) throw new ReadStoreQueryError(`reserved collection name ${def.name}`);
  for (const fields of def.indexes ?? []) {
    if (fields.length === 0) throw new ReadStoreQueryError(`${def.name}: an index needs at least one field`);
    fields.forEach(fieldExpr);
  }
  (def.searchFields ?? []).forEach(fieldExpr);
}

/**
 * The JSONB value at a dot path: `doc->'a'->'b'`. The path is spliced into SQL (indexes hold no parameters): the
 * pattern admits no quote.
 */
function valueExpr(field: string): string {
  if (typeof field !== 'string' || !FIELD_PATH.test(field))
    throw new ReadStoreQueryError(`bad field path ${JSON.stringify(field)}`);
  return `doc${field
    .split('.')
    .map((segment) => `->'${segment}'`)
    .join('')}`;
}

/** The one expression for a field, used alike by indexes and queries so that the planner matches them. */
export function fieldExpr(field: string): string {
  return `${KEY_FUNCTION}(${valueExpr(field)}) COLLATE "C"`;
}

/** Whether a value holds U+0000, which no PostgreSQL text can (the statement would fail). */
export const holdsNul = (value: unknown): boolean => typeof value === 'string' && value.includes('\u0000');

/** Binds parameters as `$n` in the order they are pushed. */
class Params {
  readonly values: unknown[] = [];
  add(value: unknown): string {
    if (holdsNul(value)) throw new ReadStoreQueryError('a text with U+0000 cannot be sent to PostgreSQL');
    this.values.push(value);
    return `$${this.values.length}`;
  }
  /** A scalar's key, computed by the same function as the indexed one. */
  key(value: Scalar): string {
    // JSON escapes it as \u0000, which a JSONB cast refuses as surely as TEXT refuses the byte.
    if (holdsNul(value)) throw new ReadStoreQueryError('a text with U+0000 cannot be sent to PostgreSQL');
    return `${KEY_FUNCTION}(${this.add(JSON.stringify(value))}::jsonb)`;
  }
}

/** The SQL `find` runs; exported so that tests can check its query plan. */
export function compileFind(
  def: CollectionDefinition,
  query: FindQuery,
  searchCollation: string | null = null,
  columns = 'doc',
): Compiled {
  const params = new Params();
  const where = filterSql(def, query, params, searchCollation);
  const order = (query.sort ?? []).map(([field, direction]) => {
    if (direction !== 'asc' && direction !== 'desc')
      throw new ReadStoreQueryError(`bad sort direction ${JSON.stringify(direction)}`);
    return `${fieldExpr(field)} ${direction.toUpperCase()}`;
  });
  const orderBy = order.length ? ` ORDER BY ${order.join(', ')}` : '';
  const limit = query.limit === undefined ? '' : ` LIMIT ${params.add(nonNegativeInteger('limit', query.limit))}`;
  const skip =
    query.skip === undefined || query.skip === 0 ? '' : ` OFFSET ${params.add(nonNegativeInteger('skip', query.skip))}`;
  return {
    sql: `SELECT ${columns} FROM ${quote(tableName(def.name))}${where}${orderBy}${limit}${skip}`,
    params: params.values,
  };
}

/**
 * findText's columns: the field's string as TEXT (`#>> '{}'`), which node-postgres hands over as it is, and the
 * document (JSONB, which it parses) only for a row whose field is not a string.
 */
export function textColumns(field: string): string {
  const value = valueExpr(field);
  const isText = `jsonb_typeof(${value}) = 'string'`;
  return `CASE WHEN ${isText} THEN ${value} #>> '{}' END AS text, CASE WHEN ${isText} THEN NULL ELSE doc END AS doc`;
}

export function compileCount(
  def: CollectionDefinition,
  query: Pick<FindQuery, 'where' | 'search' | 'range'>,
  searchCollation: string | null = null,
): Compiled {
  const params = new Params();
  const where = filterSql(def, query, params, searchCollation);
  return { sql: `SELECT count(*) AS n FROM ${quote(tableName(def.name))}${where}`, params: params.values };
}

/** `DELETE` of a counter collection's counters expired at `now`: a number range on the indexed `expiresAt`. */
export function compileSweep(collection: string, now: number): Compiled {
  const params = new Params();
  return {
    sql: `DELETE FROM ${quote(tableName(collection))} WHERE ${between('expiresAt', { lte: now }, params)}`,
    params: params.values,
  };
}

/** The WHERE clause (with its leading space) for `where`, `range` and `search`, or an empty string. */
function filterSql(
  def: CollectionDefinition,
  query: Pick<FindQuery, 'where' | 'search' | 'range'>,
  params: Params,
  searchCollation: string | null,
): string {
  const where = query.where ?? {};
  if (where === null || typeof where !== 'object' || Array.isArray(where))
    throw new ReadStoreQueryError('where must be an object of field: value');
  const parts = Object.entries(where).map(([field, value]) => equals(field, value, params));
  for (const [field, condition] of Object.entries(query.range ?? {})) parts.push(between(field, condition, params));
  if (query.search !== undefined) {
    const clauses = (Array.isArray(query.search) ? query.search : [query.search]).map((clause) =>
      contains(def, clause, params, searchCollation),
    );
    if (clauses.length === 0) throw new ReadStoreQueryError('search needs at least one clause');
    parts.push(`(${clauses.join(' OR ')})`);
  }
  return parts.length === 0 ? '' : ` WHERE ${parts.join(' AND ')}`;
}

function equals(field: string, value: Scalar, params: Params): string {
  const expr = fieldExpr(field);
  if (typeof value === 'number' && !Number.isFinite(value))
    throw new ReadStoreQueryError(`where ${field}: not a finite number`);
  if (value !== null && !['string', 'number', 'boolean'].includes(typeof value)) {
    throw new ReadStoreQueryError(`where ${field}: only strings, numbers, booleans and null are allowed`);
  }
  if (holdsNul(value)) return 'FALSE';
  return `${expr} = ${params.key(value)}`;
}

const RANGE_OPERATORS = { gt: '>', gte: '>=', lt: '<', lte: '<=' } as const;
/** The key range of each type (see the type digits above): a bound of one type never reaches into another. */
const TYPE_BRACKET = { number: { from: '1', to: '2' }, string: { from: '2', to: '3' } } as const;

function between(field: string, condition: RangeCondition, params: Params): string {
  const expr = fieldExpr(field);
  if (condition === null || typeof condition !== 'object')
    throw new ReadStoreQueryError(`range ${field}: bounds must be an object`);
  const bounds = Object.entries(condition).filter(([, value]) => value !== undefined);
  if (bounds.length === 0) throw new ReadStoreQueryError(`range ${field}: at least one bound is needed`);
  const types = new Set(bounds.map(([, value]) => typeof value));
  if (types.size !== 1 || !(types.has('string') || types.has('number')))
    throw new ReadStoreQueryError(`range ${field}: bounds must all be strings or all be numbers`);
  const parts: string[] = [];
  for (const [name, value] of bounds) {
    const operator = RANGE_OPERATORS[name as keyof typeof RANGE_OPERATORS];
    if (!operator) throw new ReadStoreQueryError(`range ${field}: unknown bound ${JSON.stringify(name)}`);
    if (typeof value === 'number' && !Number.isFinite(value))
      throw new ReadStoreQueryError(`range ${field}: not a finite number`);
    parts.push(`${expr} ${operator} ${params.key(value as string | number)}`);
  }
  const bracket = TYPE_BRACKET[types.has('string') ? 'string' : 'number'];
  const names = bounds.map(([name]) => name);
  if (!names.some((n) => n === 'gt' || n === 'gte')) parts.push(`${expr} >= '${bracket.from}'`);
  if (!names.some((n) => n === 'lt' || n === 'lte')) parts.push(`${expr} < '${bracket.to}'`);
  return parts.join(' AND ');
}

function contains(
  def: CollectionDefinition,
  clause: SearchClause,
  params: Params,
  searchCollation: string | null,
): string {
  if (clause === null || typeof clause !== 'object' || typeof clause.text !== 'string')
    throw new ReadStoreQueryError('search text must be a string');
  if (!Array.isArray(clause.fields) || clause.fields.length === 0)
    throw new ReadStoreQueryError('search needs at least one field');
  for (const field of clause.fields) {
    if (!def.searchFields?.includes(field))
      throw new ReadStoreQueryError(`${def.name}.${String(field)} is not declared in searchFields`);
  }
  if (holdsNul(clause.text)) return 'FALSE';
  const pattern = params.add(`%${escapeLike(clause.text.toLowerCase())}%`);
  const collate = searchCollation === null ? '' : ` COLLATE ${quote(searchCollation)}`;
  const fields = clause.fields.map((field) => {
    const value = valueExpr(field);
    return `(jsonb_typeof(${value}) = 'string' AND lower((${value} #>> '{}')${collate}) LIKE ${pattern})`;
  });
  return `(${fields.join(' OR ')})`;
}

/** LIKE's wildcards and its escape character (the default, `\`) as literal characters. */
export function escapeLike(text: string): string {
  return text.replace(/[\\%_]/g, '\\$&');
}

function nonNegativeInteger(name: string, value: number): number {
  if (!Number.isSafeInteger(value) || value < 0)
    throw new ReadStoreQueryError(`${name} must be a non-negative integer`);
  return value;
}

/** Names are validated first; quoting keeps keywords usable and the case as written. */
export function quote(identifier: string): string {
  return `"${identifier.replace(/"/g, '""')}"`;
}

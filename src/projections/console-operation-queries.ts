import type { OperationType } from '../domain/events.ts';
import type { EventStore } from '../ports/event-store.ts';
import type { FindQuery, RangeCondition, ReadStore } from '../ports/read-store.ts';
import {
  CONSOLE_OPERATIONS_COLLECTION,
  CONSOLE_OPERATIONS_PROJECTION,
  type ConsoleOperationDoc,
} from './console-operations.ts';
import type { ContractStatus } from '../domain/operation-status.ts';

/**
 * The console's queries over console_operations. Every filter is an equality on an indexed field or a range
 * on a key string (sortKey for dates and paging, amountKey for amounts), so a page reads an index range and
 * stops after `limit + 1` documents; paging is by keyset (the last row's sortKey), never by skipping rows.
 */
export interface OperationFilter {
  /** `<partyType>:<partyID>`: always present, the viewer's party. */
  party: string;
  status?: ContractStatus;
  operationType?: OperationType;
  keyID?: string;
  /** An individual's E.164 phone or a party's short code. */
  counterparty?: string;
  /** ISO times: created at or after `from`, before `to`. */
  from?: string;
  to?: string;
  /** amountKey strings, both inclusive. */
  minAmountKey?: string;
  maxAmountKey?: string;
  /** What the search box holds: see `searchCondition`. */
  search?: string;
}

/**
 * What a search looks for. An operation id (`op_` and hex, or 8 or more hex digits) and a phone (`+` or digits,
 * spaces and dashes allowed) are prefix ranges on indexed fields, answered from the index whatever the number
 * of operations; any other text is a case-insensitive substring of the memo, the operation id or the
 * counterparty's id, which reads the [party, text] index entry of every operation of the party.
 */
export function searchCondition(
  text: string,
): { field: 'operationID' | 'counterparty'; prefix: string } | { substring: string } {
  const trimmed = text.trim();
  const id = /^(op_)?([0-9a-f]{1,32})$/i.exec(trimmed);
  if (id?.[1] !== undefined) return { field: 'operationID', prefix: `op_${id[2]!.toLowerCase()}` };
  // Digits alone are a phone, although they are hex too.
  if (/^\+?\d[\d -]{4,}$/.test(trimmed)) return { field: 'counterparty', prefix: `+${trimmed.replace(/[^\d]/g, '')}` };
  if (id && id[2]!.length >= 8) return { field: 'operationID', prefix: `op_${id[2]!.toLowerCase()}` };
  return { substring: trimmed.toLowerCase() };
}

export type SortOrder = 'newest' | 'oldest';

export interface PageRequest {
  order: SortOrder;
  /** A sortKey: the page starts after this row (in the order). */
  after?: string;
  /** A sortKey: the page ends just before this row (paging back). */
  before?: string;
  limit: number;
}

export interface OperationPage {
  rows: ConsoleOperationDoc[];
  /** 1-based position of the first row among all that match; 0 when there are none. */
  start: number;
  total: number;
  /** Cursors for the pages either side, absent at the ends. */
  previous?: string;
  next?: string;
}

const COLLECTION = CONSOLE_OPERATIONS_COLLECTION.name;

/** The sortKey bounds: the date range, narrowed by a cursor. */
function sortKeyRange(filter: OperationFilter, cursor?: { gt?: string; lt?: string }): RangeCondition | undefined {
  const range: RangeCondition = {};
  if (filter.from) range.gte = filter.from;
  if (filter.to) range.lt = filter.to;
  if (cursor?.gt !== undefined) range.gt = cursor.gt;
  if (cursor?.lt !== undefined)
    range.lt = range.lt === undefined || cursor.lt < String(range.lt) ? cursor.lt : range.lt;
  return Object.keys(range).length > 0 ? range : undefined;
}

function query(
  filter: OperationFilter,
  cursor?: { gt?: string; lt?: string },
): Pick<FindQuery, 'where' | 'range' | 'search'> {
  const where: NonNullable<FindQuery['where']> = { party: filter.party };
  if (filter.status) where.status = filter.status;
  if (filter.operationType) where.operationType = filter.operationType;
  if (filter.keyID) where.keyID = filter.keyID;
  if (filter.counterparty) where.counterparty = filter.counterparty;
  const range: NonNullable<FindQuery['range']> = {};
  const search = filter.search ? searchCondition(filter.search) : undefined;
  // '~' sorts after every character of an id or a phone: [prefix, prefix~) is every value that starts with it. An
  // operation id is where `text` starts (followed by a newline, which sorts first), so the [party, text] index
  // answers an id's prefix as well as the substring search, and the model keeps one index fewer to write.
  if (search && 'prefix' in search)
    range[search.field === 'operationID' ? 'text' : search.field] = { gte: search.prefix, lt: `${search.prefix}~` };
  // Always true (text is a string), but it lets the planner read the [party, text] index, whose entries hold the
  // text itself: the search runs over the index instead of every document, then sorts what matched.
  if (search && 'substring' in search) range.text = { gte: '' };
  const sortKey = sortKeyRange(filter, cursor);
  if (sortKey) range.sortKey = sortKey;
  if (filter.minAmountKey || filter.maxAmountKey) {
    range.amountKey = {
      ...(filter.minAmountKey ? { gte: filter.minAmountKey } : {}),
      ...(filter.maxAmountKey ? { lte: filter.maxAmountKey } : {}),
    };
  }
  return {
    where,
    ...(Object.keys(range).length > 0 ? { range } : {}),
    ...(search && 'substring' in search ? { search: { text: search.substring, fields: ['text'] } } : {}),
  };
}

/** One page of the party's operations that match, with where it is among them ("51–100 of 1,234"). */
export async function findOperations(
  readStore: ReadStore,
  filter: OperationFilter,
  page: PageRequest,
): Promise<OperationPage> {
  const newest = page.order === 'newest';
  // Rows "after" a cursor come later in the order: lower sortKeys when newest first.
  const later = (key: string) => (newest ? { lt: key } : { gt: key });
  const earlier = (key: string) => (newest ? { gt: key } : { lt: key });
  const backwards = page.before !== undefined && page.after === undefined;
  const cursor = backwards ? earlier(page.before!) : page.after !== undefined ? later(page.after) : undefined;
  const direction = newest !== backwards ? 'desc' : 'asc';
  const found = await readStore.find<ConsoleOperationDoc>(COLLECTION, {
    ...query(filter, cursor),
    sort: [['sortKey', direction]],
    limit: page.limit + 1,
  });
  const more = found.length > page.limit;
  const rows = found.slice(0, page.limit);
  if (backwards) rows.reverse();
  // A first page that holds every match needs no count: rare search matches cost one scan, not two.
  const total =
    page.after === undefined && !backwards && !more ? rows.length : await readStore.count(COLLECTION, query(filter));
  const first = rows[0];
  const before =
    first === undefined
      ? 0
      : page.after === undefined && !backwards
        ? 0
        : await readStore.count(COLLECTION, query(filter, earlier(first.sortKey)));
  const last = rows[rows.length - 1];
  const hasNext = backwards ? last !== undefined && before + rows.length < total : more;
  const hasPrevious = backwards ? more : before > 0;
  return {
    rows,
    start: first === undefined ? 0 : before + 1,
    total,
    ...(hasPrevious && first ? { previous: first.sortKey } : {}),
    ...(hasNext && last ? { next: last.sortKey } : {}),
  };
}

/**
 * Every matching row in the order, a batch at a time, for a streamed export: one keyset query per batch, so
 * memory holds one batch whatever the size of the export.
 */
export async function* allOperations(
  readStore: ReadStore,
  filter: OperationFilter,
  order: SortOrder,
  batch = 500,
): AsyncGenerator<ConsoleOperationDoc> {
  let after: string | undefined;
  for (;;) {
    const cursor = after === undefined ? undefined : order === 'newest' ? { lt: after } : { gt: after };
    const rows = await readStore.find<ConsoleOperationDoc>(COLLECTION, {
      ...query(filter, cursor),
      sort: [['sortKey', order === 'newest' ? 'desc' : 'asc']],
      limit: batch,
    });
    yield* rows;
    if (rows.length < batch) return;
    after = rows[rows.length - 1]!.sortKey;
  }
}

/** The operations one key created, newest first (the key's page). */
export function operationsOfKey(
  readStore: ReadStore,
  party: string,
  keyID: string,
  limit: number,
): Promise<OperationPage> {
  return findOperations(readStore, { party, keyID }, { order: 'newest', limit });
}

/**
 * The party's own operations waiting for its checker (a cash-in a merchant received is the distributor's to decide).
 */
const pendingWhere = (party: string): NonNullable<FindQuery['where']> => ({ party, status: 'pending', side: 'own' });

/** Most decisions read past the read model's checkpoint: beyond that the model is far behind (a stopped runner). */
export const PENDING_TAIL_LIMIT = 1000;

/**
 * The party's pending operations, newest first, as the Pending approval page lists them: the console_operations
 * documents, less those a checker decided after the read model's checkpoint (a moment ago, not applied yet),
 * found in one read of the log's decisions past that checkpoint. The checkpoint is read first: the documents
 * are then at least that fresh, and every later decision is in the tail. Reads are the same whatever the number
 * of rows: no operation's stream is read. Beyond PENDING_TAIL_LIMIT decisions a decided row may still show; the
 * approve and reject routes check the operation's stream, and refuse it (409).
 */
export async function pendingOperationsOfParty(
  stores: { readStore: ReadStore; eventStore: EventStore },
  party: string,
  limit: number,
): Promise<ConsoleOperationDoc[]> {
  const checkpoint = await stores.readStore.getCheckpoint(CONSOLE_OPERATIONS_PROJECTION);
  const docs = await stores.readStore.find<ConsoleOperationDoc>(COLLECTION, {
    where: pendingWhere(party),
    sort: [['sortKey', 'desc']],
    limit,
  });
  if (docs.length === 0) return docs;
  const decided = await stores.eventStore.readAll({
    fromPosition: (checkpoint ?? 0) + 1,
    maxCount: PENDING_TAIL_LIMIT,
    filter: { eventTypes: ['OperationApproved', 'OperationRejected'] },
  });
  const gone = new Set(decided.map((event) => (event.data as { operationID: string }).operationID));
  return docs.filter((doc) => !gone.has(doc.operationID));
}

/** How many operations wait for the party's checker: what the Pending approval tab and the waiting counts say. */
export function countPendingOfParty(readStore: ReadStore, party: string): Promise<number> {
  return readStore.count(COLLECTION, { where: pendingWhere(party) });
}

import type { Document, FindQuery, ReadStore } from '../ports/read-store.ts';
import { API_TEXT } from './api-text.ts';

/** What the read API's lists take beyond the party (extensions of the contract): a status, a creation range. */
export interface ListFilter {
  status?: string | undefined;
  /** ISO times: created at or after `createdFrom`, before `createdTo`. */
  createdFrom?: string | undefined;
  createdTo?: string | undefined;
}

/** A page of a list: newest first, `offset` items skipped. */
export interface ListPage {
  limit: number;
  offset: number;
}

/** A list's find: the party's own items (`where`, `sort`), then the filter's status and creation range. */
export function listFind(
  where: NonNullable<FindQuery['where']>,
  sort: FindQuery['sort'],
  filter: ListFilter,
): Omit<FindQuery, 'skip' | 'limit'> {
  const bounds = {
    ...(filter.createdFrom !== undefined ? { gte: filter.createdFrom } : {}),
    ...(filter.createdTo !== undefined ? { lt: filter.createdTo } : {}),
  };
  return {
    where: { ...where, ...(filter.status !== undefined ? { status: filter.status } : {}) },
    sort,
    ...(Object.keys(bounds).length > 0 ? { range: { createdAt: bounds } } : {}),
  };
}

/**
 * A list's JSON: the documents' stored API texts joined, neither parsed nor serialized again (api-text.ts). A
 * document stored before it kept its text is serialized here, by the toApi that makes the text, to the same bytes.
 */
export async function listText<Doc extends Document>(
  readStore: ReadStore,
  collection: string,
  find: Omit<FindQuery, 'skip' | 'limit'>,
  page: ListPage,
  toApi: (doc: Doc) => unknown,
): Promise<string> {
  const items = await readStore.findText<Doc>(collection, { ...find, skip: page.offset, limit: page.limit }, API_TEXT);
  return `[${items.map((item) => (typeof item === 'string' ? item : JSON.stringify(toApi(item)))).join(',')}]`;
}

/** One item's JSON as its list shows it (its stored text, or serialized by the same toApi). */
export function itemText<Doc extends Document>(doc: Doc, toApi: (doc: Doc) => unknown): string {
  const text = doc[API_TEXT];
  return typeof text === 'string' ? text : JSON.stringify(toApi(doc));
}

/** Ids are short tokens (op_…, wo_…): anything else cannot name an item, and is not looked up. */
export const plausibleID = (id: string): boolean => /^[A-Za-z0-9_-]{1,100}$/.test(id);

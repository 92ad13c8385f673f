/** A page request of the list endpoints. */
export interface Page {
  limit: number;
  offset: number;
}

/** What every iterator (allOperations, allPayments) takes beside its list's filters. */
export interface PageOptions {
  /** Items fetched per request, 1 to 1000 (default 100). */
  pageSize?: number;
}

/**
 * Every item of a list, page after page, as the API pages: offset grows by limit, and a page shorter than
 * limit is the last. Pages are fetched as the iteration reaches them; stopping early fetches no more.
 */
export async function* paginate<T>(
  fetchPage: (page: Page) => Promise<T[]>,
  pageSize = 100,
): AsyncGenerator<T, void, undefined> {
  if (!Number.isInteger(pageSize) || pageSize < 1 || pageSize > 1000)
    throw new RangeError('pageSize must be a whole number from 1 to 1000');
  for (let offset = 0; ; offset += pageSize) {
    const items = await fetchPage({ limit: pageSize, offset });
    yield* items;
    if (items.length < pageSize) return;
  }
}

import type { ReadStore } from '../ports/read-store.ts';
import { PENDING_OPERATIONS_COLLECTION, type PendingOperationDoc } from './pending-operations.ts';

const COLLECTION = PENDING_OPERATIONS_COLLECTION.name;

/**
 * Every pending operation of a key, oldest first, in one query: one consistent answer (paging would skip
 * documents that decisions remove between two pages). A key's pending operations are few.
 */
export function pendingOperationsOfKey(readStore: ReadStore, keyID: string): Promise<PendingOperationDoc[]> {
  return readStore.find<PendingOperationDoc>(COLLECTION, {
    where: { keyID },
    sort: [['requestPosition', 'asc']],
  }); // unique: one request per position
}

/**
 * A page of every pending operation, in request order, after `afterPosition` (keyset paging: decisions may remove
 * documents meanwhile).
 */
export function pendingOperationsAfter(
  readStore: ReadStore,
  afterPosition: number,
  limit: number,
): Promise<PendingOperationDoc[]> {
  return readStore.find<PendingOperationDoc>(COLLECTION, {
    range: { requestPosition: { gt: afterPosition } },
    sort: [['requestPosition', 'asc']],
    limit,
  });
}

/** How many operations of a key wait for a checker (the console's waiting counts). */
export function countPendingOfKey(readStore: ReadStore, keyID: string): Promise<number> {
  return readStore.count(COLLECTION, { where: { keyID } });
}

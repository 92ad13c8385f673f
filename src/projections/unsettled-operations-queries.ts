import type { ReadStore } from '../ports/read-store.ts';
import { UNSETTLED_OPERATIONS_COLLECTION, type UnsettledOperationDoc } from './unsettled-operations.ts';

/** The oldest approved operations without an outcome, by approval position, at most `limit` (the executor's sweep). */
export function oldestUnsettledOperations(readStore: ReadStore, limit: number): Promise<UnsettledOperationDoc[]> {
  return readStore.find<UnsettledOperationDoc>(UNSETTLED_OPERATIONS_COLLECTION.name, {
    sort: [['approvalPosition', 'asc']],
    limit,
  });
}

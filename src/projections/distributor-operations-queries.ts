import type { ReadStore } from '../ports/read-store.ts';
import {
  DISTRIBUTOR_OPERATIONS_COLLECTION,
  DISTRIBUTOR_OPERATIONS_SORT,
  distributorOperationsWhere,
  toApi,
  type DistributorOperationDoc,
} from './distributor-operations.ts';
import { itemText, listFind, listText, plausibleID, type ListFilter, type ListPage } from './list-queries.ts';

const COLLECTION = DISTRIBUTOR_OPERATIONS_COLLECTION.name;

/** GET …/distributors/{id}/operations: one page of the distributor's operations, newest first, as JSON text. */
export function listDistributorOperations(
  readStore: ReadStore,
  distributorID: string,
  filter: ListFilter,
  page: ListPage,
): Promise<string> {
  const find = listFind(distributorOperationsWhere(distributorID), DISTRIBUTOR_OPERATIONS_SORT, filter);
  return listText<DistributorOperationDoc>(readStore, COLLECTION, find, page, toApi);
}

/** One of the distributor's operations as its list shows it (JSON text), or null: absent or another party's. */
export async function getDistributorOperation(
  readStore: ReadStore,
  distributorID: string,
  operationID: string,
): Promise<string | null> {
  if (!plausibleID(operationID)) return null;
  const doc = await readStore.get<DistributorOperationDoc>(COLLECTION, operationID);
  return doc && doc.distributorID === distributorID ? itemText(doc, toApi) : null;
}

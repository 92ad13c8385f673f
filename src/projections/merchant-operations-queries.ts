import type { ReadStore } from '../ports/read-store.ts';
import {
  MERCHANT_OPERATIONS_COLLECTION,
  MERCHANT_OPERATIONS_SORT,
  merchantOperationsWhere,
  toApi,
  type MerchantOperationDoc,
} from './merchant-operations.ts';
import { itemText, listFind, listText, plausibleID, type ListFilter, type ListPage } from './list-queries.ts';

const COLLECTION = MERCHANT_OPERATIONS_COLLECTION.name;

/** GET …/merchants/{id}/operations: one page of the merchant's listed operations, newest first, as JSON text. */
export function listMerchantOperations(
  readStore: ReadStore,
  merchantID: string,
  filter: ListFilter,
  page: ListPage,
): Promise<string> {
  const find = listFind(merchantOperationsWhere(merchantID), MERCHANT_OPERATIONS_SORT, filter);
  return listText<MerchantOperationDoc>(readStore, COLLECTION, find, page, toApi);
}

/** One of the merchant's listed operations as its list shows it (JSON text), or null: absent, hidden or another's. */
export async function getMerchantOperation(
  readStore: ReadStore,
  merchantID: string,
  operationID: string,
): Promise<string | null> {
  if (!plausibleID(operationID)) return null;
  const doc = await readStore.get<MerchantOperationDoc>(COLLECTION, operationID);
  return doc && doc.merchantID === merchantID && doc.visible ? itemText(doc, toApi) : null;
}

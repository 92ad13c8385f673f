import type { ReadStore } from '../ports/read-store.ts';
import {
  MERCHANT_PAYMENTS_COLLECTION,
  MERCHANT_PAYMENTS_SORT,
  merchantPaymentsWhere,
  paymentSearch,
  toApi,
  type MerchantPaymentDoc,
} from './merchant-payments.ts';
import { itemText, listFind, listText, plausibleID, type ListFilter, type ListPage } from './list-queries.ts';

const COLLECTION = MERCHANT_PAYMENTS_COLLECTION.name;

/**
 * GET …/merchants/{id}/payments: one page of the merchant's completed payments, newest first, as JSON text;
 * `search` matches the sender's phone or the memo (paymentSearch), nothing when blank.
 */
export function listMerchantPayments(
  readStore: ReadStore,
  merchantID: string,
  filter: ListFilter & { search?: string | undefined },
  page: ListPage,
): Promise<string> {
  const { search, ...rest } = filter;
  const clauses = search !== undefined && search.trim() !== '' ? paymentSearch(search) : undefined;
  const find = {
    ...listFind(merchantPaymentsWhere(merchantID), MERCHANT_PAYMENTS_SORT, rest),
    ...(clauses ? { search: clauses } : {}),
  };
  return listText<MerchantPaymentDoc>(readStore, COLLECTION, find, page, toApi);
}

/**
 * One of the merchant's payments as its list shows it (JSON text), or null. A payment is named by its wallet
 * operation (wo_…), which the document keeps beside its own id (the op_…).
 */
export async function getMerchantPayment(
  readStore: ReadStore,
  merchantID: string,
  walletOperationID: string,
): Promise<string | null> {
  if (!plausibleID(walletOperationID)) return null;
  const [doc] = await readStore.find<MerchantPaymentDoc>(COLLECTION, {
    where: { ...merchantPaymentsWhere(merchantID), operationID: walletOperationID },
    limit: 1,
  });
  return doc && doc.merchantID === merchantID && doc.visible ? itemText(doc, toApi) : null;
}

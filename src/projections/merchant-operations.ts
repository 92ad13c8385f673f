import type { OperationRequested } from '../domain/events.ts';
import { DEFAULT_ASSET_SCALE, formatAmount } from '../domain/money.ts';
import type { CollectionDefinition, FindQuery } from '../ports/read-store.ts';
import type { Projection } from './projection.ts';
import {
  isOperationEvent,
  lifecycleChange,
  OPERATION_EVENT_TYPES,
  type LaterOperationEvent,
} from './operation-lifecycle.ts';
import type { ContractStatus } from '../domain/operation-status.ts';
import { API_TEXT, withApiText } from './api-text.ts';

/**
 * A merchant's operations for GET /api/v1/merchants/{merchantID}/operations, newest creation first: the ones
 * it created (cash-out, pay-merchant, pay-individual) and the cash-ins a distributor sent it. Every one is
 * listed from its request, with its status (a received cash-in too, since issue 18: pending, then completed,
 * rejected or failed), so an item enters the list once, at its creation, and its place never changes.
 * Ordered by `listedPosition` (the log position of the request), newest first: newest creation first.
 */
export type ListedMerchantOperationType = 'cash-in' | 'cash-out' | 'pay-merchant' | 'pay-individual';

export type MerchantOperationDoc = {
  /** The operationID (a cash-in is never the receiving merchant's own operation, so one id suffices). */
  id: string;
  operationID: string;
  merchantID: string;
  operationType: ListedMerchantOperationType;
  amount: string;
  /** "0.00" (at the asset scale) for a cash-in. */
  fee: string;
  /** cash-out: the destination; cash-in: the source distributor. */
  distributorTo?: string;
  distributorName?: string;
  /** pay-merchant. */
  merchantTo?: string;
  merchantName?: string;
  /** pay-individual. */
  phoneTo?: string;
  /** Absent when the operation has none. */
  memo?: string;
  /** Empty while processing. */
  blockchainID: string;
  /**
   * `wo_...`, set at completion: the wallet operation it became, which is the `operationID` of the payment in the
   * payee's payments list (a pay-merchant's payee, or this merchant for a received cash-in). Absent before.
   */
  walletOperationID?: string;
  sequenceNumber: number | null;
  lastError: string | null;
  /**
   * Set once rejected: the reason given (a checker's, or that of the key's revocation). Absent from documents stored
   * before it existed.
   */
  rejectionReason?: string;
  status: ContractStatus;
  createdAt: string;
  /** The time of the last change, from the event's data (so that a rebuild gives identical documents). */
  updatedAt: string;
  /** Whether the merchant's list shows it: always, from the request (kept for the index and older documents). */
  visible: boolean;
  /** The log position of the request that listed it: the list's ordering key; never changes. */
  listedPosition: number;
  position: number;
  /** `JSON.stringify(toApi(doc))`, what a list sends (api-text.ts); absent from documents stored before it existed. */
  apiText?: string;
};

/** The contract's Merchant operation object: the document without its internal fields. */
export type MerchantOperation = Omit<
  MerchantOperationDoc,
  'id' | 'visible' | 'listedPosition' | 'position' | 'rejectionReason' | 'walletOperationID' | 'apiText'
> & {
  walletOperationID: string;
  rejectionReason: string | null;
};

export const MERCHANT_OPERATIONS_PROJECTION = 'merchant-operations';
export const MERCHANT_OPERATIONS_COLLECTION: CollectionDefinition = {
  name: 'merchant_operations',
  indexes: [['merchantID', 'visible', 'listedPosition', 'id']],
  textField: API_TEXT,
};

/** The list's filter: one merchant's visible operations. */
export const merchantOperationsWhere = (merchantID: string): NonNullable<FindQuery['where']> => ({
  merchantID,
  visible: true,
});
/**
 * Newest creation first, by the log position of the request (the order of `createdAt`, free of clock skew
 * between writers): every item enters the list at its request and always on top, so a client polling the
 * first page never misses one. The id breaks ties (there are none: one request per position).
 */
export const MERCHANT_OPERATIONS_SORT: NonNullable<FindQuery['sort']> = [
  ['listedPosition', 'desc'],
  ['id', 'desc'],
];

/** For a received cash-in the counterparty is the merchant paid: the distributor is the payer (`payerName`). */
type RequestedData = OperationRequested['data'];

const isOwnOperation = (data: RequestedData): boolean =>
  data.party?.type === 'merchant' && ['cash-out', 'pay-merchant', 'pay-individual'].includes(data.operationType);
const isReceivedCashIn = (data: RequestedData): boolean =>
  data.operationType === 'cash-in' && data.payee.kind === 'merchant';

function requested(data: RequestedData, id: string, position: number, scale: number): MerchantOperationDoc {
  const { counterparty, operationType } = data;
  const cashIn = operationType === 'cash-in';
  return {
    id,
    operationID: data.operationID,
    merchantID: cashIn ? data.payee.id : (data.party?.id ?? ''),
    operationType: operationType as ListedMerchantOperationType,
    amount: data.amount,
    fee: cashIn ? formatAmount('0', scale) : data.fee,
    ...(cashIn ? { distributorTo: data.payer.id, distributorName: data.payerName ?? '' } : {}),
    ...(operationType === 'cash-out' ? { distributorTo: counterparty.id, distributorName: counterparty.name } : {}),
    ...(operationType === 'pay-merchant' ? { merchantTo: counterparty.id, merchantName: counterparty.name } : {}),
    ...(operationType === 'pay-individual' ? { phoneTo: counterparty.id } : {}),
    ...(data.memo !== null ? { memo: data.memo } : {}),
    blockchainID: '',
    sequenceNumber: null,
    lastError: null,
    status: 'pending',
    createdAt: data.createdAt,
    updatedAt: data.createdAt,
    visible: true,
    listedPosition: position,
    position,
  };
}

/** What a later event of the operation's stream changes: status and its fields, never the list position. */
function progressed(doc: MerchantOperationDoc, event: LaterOperationEvent): MerchantOperationDoc {
  return { ...doc, ...lifecycleChange(event) };
}

export function merchantOperationsProjection(options: { assetScale?: number } = {}): Projection<MerchantOperationDoc> {
  const scale = options.assetScale ?? DEFAULT_ASSET_SCALE;
  const concerns = (data: RequestedData) => isOwnOperation(data) || isReceivedCashIn(data);
  return {
    name: MERCHANT_OPERATIONS_PROJECTION,
    collection: MERCHANT_OPERATIONS_COLLECTION,
    eventTypes: OPERATION_EVENT_TYPES,
    documentIds(event) {
      if (!isOperationEvent(event)) return [];
      if (event.type === 'OperationRequested' && !concerns(event.data)) return [];
      return [event.data.operationID];
    },
    evolve(doc, event, id) {
      if (!isOperationEvent(event)) return doc;
      if (event.type === 'OperationRequested')
        return concerns(event.data) ? withApiText(requested(event.data, id, event.position, scale), toApi) : doc;
      // A later event of an operation that concerns no merchant here: no document, none made.
      return doc ? withApiText({ ...progressed(doc, event), position: event.position }, toApi) : null;
    },
  };
}

/** The contract's object, field by field: internal fields and fields of other kinds never leave. */
export function toApi(doc: MerchantOperationDoc): MerchantOperation {
  return {
    operationID: doc.operationID,
    merchantID: doc.merchantID,
    operationType: doc.operationType,
    amount: doc.amount,
    fee: doc.fee,
    ...present(doc, 'distributorTo', 'distributorName', 'merchantTo', 'merchantName', 'phoneTo', 'memo'),
    blockchainID: doc.blockchainID,
    // Extension: the link to the payment it became; "" until completed, as in the distributor's list.
    walletOperationID: doc.walletOperationID ?? '',
    sequenceNumber: doc.sequenceNumber,
    lastError: doc.lastError,
    // Extension: why it was rejected; null unless rejected (and on documents stored before the field existed).
    rejectionReason: doc.rejectionReason ?? null,
    // The contract leaves the status field unnamed; ours is `status` (see the README).
    status: doc.status,
    createdAt: doc.createdAt,
    updatedAt: doc.updatedAt,
  };
}

/** The fields among `keys` that the document has: a kind's fields are absent from documents of other kinds. */
function present<K extends keyof MerchantOperationDoc>(
  doc: MerchantOperationDoc,
  ...keys: K[]
): Partial<Pick<MerchantOperationDoc, K>> {
  const picked: Partial<Pick<MerchantOperationDoc, K>> = {};
  for (const key of keys) if (doc[key] !== undefined) picked[key] = doc[key];
  return picked;
}

import type { DistributorOperationType, OperationRequested } from '../domain/events.ts';
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
 * The operations a distributor created with its keys (cash-in, cash-out-fulfillment), for
 * GET /api/v1/distributors/{distributorID}/operations, newest creation first.
 */
export type DistributorOperationDoc = {
  /** The operationID. */
  id: string;
  operationID: string;
  distributorID: string;
  operationType: DistributorOperationType;
  amount: string;
  /** cash-in to an individual. */
  phoneTo?: string;
  /** cash-in to a merchant. */
  merchantTo?: string;
  merchantName?: string;
  merchantShortCode?: number;
  /** Absent when the operation has none. */
  memo?: string;
  /** cash-out-fulfillment. */
  phoneFrom?: string;
  /** `wo_...`; empty until completed. */
  walletOperationID: string;
  /** cash-out-fulfillment only. */
  cashOutFulfillmentType?: string | null;
  cashOutFulfillmentID?: string | null;
  sequenceNumber: number | null;
  /** Empty until completed. */
  blockchainID: string;
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
  position: number;
  /** `JSON.stringify(toApi(doc))`, what a list sends (api-text.ts); absent from documents stored before it existed. */
  apiText?: string;
};

/** The contract's Distributor operation object: the document without its internal fields. */
export type DistributorOperation = Omit<DistributorOperationDoc, 'id' | 'position' | 'rejectionReason' | 'apiText'> & {
  rejectionReason: string | null;
};

export const DISTRIBUTOR_OPERATIONS_PROJECTION = 'distributor-operations';
export const DISTRIBUTOR_OPERATIONS_COLLECTION: CollectionDefinition = {
  name: 'distributor_operations',
  indexes: [['distributorID', 'createdAt', 'id']],
  textField: API_TEXT,
};

/** The list's filter: one distributor's operations. */
export const distributorOperationsWhere = (distributorID: string): NonNullable<FindQuery['where']> => ({
  distributorID,
});
/** Newest creation first; the id breaks ties. */
export const DISTRIBUTOR_OPERATIONS_SORT: NonNullable<FindQuery['sort']> = [
  ['createdAt', 'desc'],
  ['id', 'desc'],
];

const isDistributorOperation = (data: OperationRequested['data']): boolean =>
  data.party?.type === 'distributor' &&
  (data.operationType === 'cash-in' || data.operationType === 'cash-out-fulfillment');

const shortCodeNumber = (code: string | undefined): number | undefined => {
  const value = code === undefined || code.trim() === '' ? NaN : Number(code);
  return Number.isSafeInteger(value) ? value : undefined;
};

function requested(data: OperationRequested['data'], id: string, position: number): DistributorOperationDoc {
  const { counterparty } = data;
  const toMerchant = data.operationType === 'cash-in' && data.payee.kind === 'merchant';
  const shortCode = toMerchant ? shortCodeNumber(counterparty.shortCode) : undefined;
  return {
    id,
    operationID: data.operationID,
    distributorID: data.party?.id ?? '',
    operationType: data.operationType as DistributorOperationType,
    amount: data.amount,
    ...(data.operationType === 'cash-in' && !toMerchant ? { phoneTo: counterparty.id } : {}),
    ...(toMerchant ? { merchantTo: counterparty.id, merchantName: counterparty.name } : {}),
    ...(shortCode !== undefined ? { merchantShortCode: shortCode } : {}),
    ...(data.memo !== null ? { memo: data.memo } : {}),
    ...(data.operationType === 'cash-out-fulfillment'
      ? {
          phoneFrom: counterparty.id,
          cashOutFulfillmentType: data.cashOutFulfillmentType,
          cashOutFulfillmentID: data.cashOutFulfillmentID,
        }
      : {}),
    walletOperationID: '',
    sequenceNumber: null,
    blockchainID: '',
    lastError: null,
    status: 'pending',
    createdAt: data.createdAt,
    updatedAt: data.createdAt,
    position,
  };
}

/** What a later event of the operation's stream changes. */
function progressed(doc: DistributorOperationDoc, event: LaterOperationEvent): DistributorOperationDoc {
  return { ...doc, ...lifecycleChange(event) };
}

export function distributorOperationsProjection(
  _options: { assetScale?: number } = {},
): Projection<DistributorOperationDoc> {
  return {
    name: DISTRIBUTOR_OPERATIONS_PROJECTION,
    collection: DISTRIBUTOR_OPERATIONS_COLLECTION,
    eventTypes: OPERATION_EVENT_TYPES,
    documentIds(event) {
      if (!isOperationEvent(event)) return [];
      if (event.type === 'OperationRequested' && !isDistributorOperation(event.data)) return [];
      return [event.data.operationID];
    },
    evolve(doc, event, id) {
      if (!isOperationEvent(event)) return doc;
      if (event.type === 'OperationRequested')
        return isDistributorOperation(event.data) ? withApiText(requested(event.data, id, event.position), toApi) : doc;
      // A later event of an operation that is not a distributor's: no document, none made.
      return doc ? withApiText({ ...progressed(doc, event), position: event.position }, toApi) : null;
    },
  };
}

/** The contract's object, field by field: internal fields and fields of other kinds never leave. */
export function toApi(doc: DistributorOperationDoc): DistributorOperation {
  return {
    operationID: doc.operationID,
    distributorID: doc.distributorID,
    operationType: doc.operationType,
    amount: doc.amount,
    ...present(doc, 'phoneTo', 'merchantTo', 'merchantName', 'merchantShortCode', 'memo', 'phoneFrom'),
    walletOperationID: doc.walletOperationID,
    ...present(doc, 'cashOutFulfillmentType', 'cashOutFulfillmentID'),
    sequenceNumber: doc.sequenceNumber,
    blockchainID: doc.blockchainID,
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
function present<K extends keyof DistributorOperationDoc>(
  doc: DistributorOperationDoc,
  ...keys: K[]
): Partial<Pick<DistributorOperationDoc, K>> {
  const picked: Partial<Pick<DistributorOperationDoc, K>> = {};
  for (const key of keys) if (doc[key] !== undefined) picked[key] = doc[key];
  return picked;
}

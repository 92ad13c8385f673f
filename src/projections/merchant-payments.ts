import type {
  OperationCompleted,
  OperationFailed,
  OperationRejected,
  OperationRequested,
  OperationSettledFromLedger,
} from '../domain/events.ts';
import type { CollectionDefinition, FindQuery } from '../ports/read-store.ts';
import type { ProjectedEvent, Projection } from './projection.ts';
import { API_TEXT, withApiText } from './api-text.ts';

/**
 * Payments a merchant received, for GET /api/v1/merchants/{merchantID}/payments, newest first: another
 * merchant's pay-merchant, an individual's payment from the wallet app, and a distributor's cash-in. A
 * payment is listed only once completed, under its wallet operation (`wo_...`). Its `createdAt` is the
 * request's time, as in every other list (issue 18); the completion time is the extension `completedAt`.
 * The list is ordered by when each payment entered it (`listedPosition`, the log position of its
 * completion), newest first, so that a payment completed later always lands above the ones a client saw.
 */
export type PaymentFromType = 'individual' | 'merchant' | 'distributor';

export type MerchantPaymentDoc = {
  /** The operation's operationID (`op_...`). */
  id: string;
  /** The merchant paid. */
  merchantID: string;
  /** Listed once completed. */
  visible: boolean;
  status: 'pending' | 'rejected' | 'completed' | 'failed';
  /** The wallet operation (`wo_...`); empty until completed. */
  operationID: string;
  type: 'payment' | 'cash-in';
  amount: string;
  /** Phone (individual), merchant name or distributor name. */
  from: string;
  fromType: PaymentFromType;
  /** Merchants only (absent if the request carried no short code). */
  fromShortCode?: number;
  memo: string | null;
  /** Empty until completed. */
  blockchainID: string;
  /** The request's time (the operation's creation), the same instant every list shows. */
  createdAt: string;
  requestedAt: string;
  /** Extension field: the completion time; null until completed. */
  completedAt: string | null;
  /** The log position of the completion that listed it: the list's ordering key; null until listed. */
  listedPosition: number | null;
  /** Digits of an individual sender's phone, without `+`, for search; null for other senders. */
  searchPhone: string | null;
  position: number;
  /** `JSON.stringify(toApi(doc))`, what a list sends (api-text.ts); absent from documents stored before it existed. */
  apiText?: string;
};

/** The contract's Payment object, with the extension field `completedAt` (a listed payment is completed). */
export type Payment = Pick<
  MerchantPaymentDoc,
  'operationID' | 'type' | 'amount' | 'from' | 'fromType' | 'fromShortCode' | 'memo' | 'blockchainID' | 'createdAt'
> & {
  completedAt: string;
  /**
   * Extension: the operation (`op_...`) the payment came from, as the payer's (or distributor's) operations list names
   * it.
   */
  sourceOperationID: string;
};

export const MERCHANT_PAYMENTS_COLLECTION: CollectionDefinition = {
  name: 'merchant_payments',
  indexes: [['merchantID', 'visible', 'listedPosition', 'id']],
  textField: API_TEXT,
  searchFields: ['searchPhone', 'memo'],
};

/** The list's filter: one merchant's completed payments. */
export const merchantPaymentsWhere = (merchantID: string): NonNullable<FindQuery['where']> => ({
  merchantID,
  visible: true,
});
/**
 * Newest first by the moment a payment entered the list (the log position of its completion, which is also
 * the order of `completedAt`): a payment that completes later always lands on top, never below items a
 * client already saw. The id breaks ties (there are none: one completion per position).
 */
export const MERCHANT_PAYMENTS_SORT: NonNullable<FindQuery['sort']> = [
  ['listedPosition', 'desc'],
  ['id', 'desc'],
];

/**
 * The search clauses for the `search` parameter, any of which may match: the memo contains the text as
 * given (case-insensitive), or, when the text looks like a phone fragment (digits and spaces, with an
 * optional leading `+`), the sender's phone digits contain its digits. No clause for an empty text.
 */
export function paymentSearch(text: string): Array<{ text: string; fields: string[] }> {
  if (text.trim() === '') return [];
  const clauses = [{ text, fields: ['memo'] }];
  const digits = text.replace(/[\s+]/g, '');
  if (/^\s*\+?[\d\s]+$/.test(text) && digits !== '') clauses.unshift({ text: digits, fields: ['searchPhone'] });
  return clauses;
}

const EVENT_TYPES = [
  'OperationRequested',
  'OperationRejected',
  'OperationCompleted',
  'OperationFailed',
  'OperationSettledFromLedger',
] as const;

/**
 * The payer's name and short code come from the request (`payerName`, `payerShortCode`); the counterparty is the
 * merchant paid.
 */
type RequestedData = OperationRequested['data'];
type Event = ProjectedEvent &
  (OperationRequested | OperationRejected | OperationCompleted | OperationFailed | OperationSettledFromLedger);
const isPaymentEvent = (event: ProjectedEvent): event is Event =>
  (EVENT_TYPES as readonly string[]).includes(event.type);

const isReceivedPayment = (data: RequestedData): boolean =>
  data.payee.kind === 'merchant' && ['pay-merchant', 'individual-payment', 'cash-in'].includes(data.operationType);

const shortCodeNumber = (code: string | null | undefined): number | undefined => {
  const value = code == null || code.trim() === '' ? NaN : Number(code);
  return Number.isSafeInteger(value) ? value : undefined;
};

function sender(
  data: RequestedData,
): Pick<MerchantPaymentDoc, 'type' | 'from' | 'fromType' | 'fromShortCode' | 'searchPhone'> {
  switch (data.operationType) {
    case 'individual-payment':
      return {
        type: 'payment',
        from: data.payer.id,
        fromType: 'individual',
        searchPhone: data.payer.id.replace(/\D/g, ''),
      };
    case 'cash-in':
      return { type: 'cash-in', from: data.payerName ?? '', fromType: 'distributor', searchPhone: null };
    default: {
      const shortCode = shortCodeNumber(data.payerShortCode);
      return {
        type: 'payment',
        from: data.payerName ?? '',
        fromType: 'merchant',
        ...(shortCode !== undefined ? { fromShortCode: shortCode } : {}),
        searchPhone: null,
      };
    }
  }
}

function requested(data: RequestedData, id: string, position: number): MerchantPaymentDoc {
  return {
    id,
    merchantID: data.payee.id,
    visible: false,
    status: 'pending',
    operationID: '',
    amount: data.amount,
    ...sender(data),
    memo: data.memo,
    blockchainID: '',
    createdAt: data.createdAt,
    requestedAt: data.createdAt,
    completedAt: null,
    listedPosition: null,
    position,
  };
}

export function merchantPaymentsProjection(_options: { assetScale?: number } = {}): Projection<MerchantPaymentDoc> {
  return {
    name: 'merchant-payments',
    collection: MERCHANT_PAYMENTS_COLLECTION,
    eventTypes: EVENT_TYPES,
    documentIds(event) {
      if (!isPaymentEvent(event)) return [];
      if (event.type === 'OperationRequested' && !isReceivedPayment(event.data)) return [];
      return [event.data.operationID];
    },
    evolve(doc, event, id) {
      const next = changed(doc, event, id);
      return next === doc || next === null ? next : withApiText(next, toApi);
    },
  };
}

/** The document after one of its events (the same document for an event of no interest). */
function changed(doc: MerchantPaymentDoc | null, event: ProjectedEvent, id: string): MerchantPaymentDoc | null {
  if (!isPaymentEvent(event)) return doc;
  if (event.type === 'OperationRequested')
    return isReceivedPayment(event.data) ? requested(event.data, id, event.position) : doc;
  // A later event of an operation that pays no merchant: no document, none made.
  if (!doc) return null;
  const position = event.position;
  switch (event.type) {
    case 'OperationCompleted': {
      const { walletOperationID, blockchainID, completedAt } = event.data;
      return {
        ...doc,
        status: 'completed',
        visible: true,
        operationID: walletOperationID,
        blockchainID,
        completedAt,
        listedPosition: position,
        position,
      };
    }
    case 'OperationRejected':
      return { ...doc, status: 'rejected', position };
    case 'OperationFailed':
      return { ...doc, status: 'failed', position };
    case 'OperationSettledFromLedger': {
      // Failed, but the money had moved: two operators recorded the ledger's transaction. The payment was received.
      const { walletOperationID, blockchainID, settledAt } = event.data;
      return {
        ...doc,
        status: 'completed',
        visible: true,
        operationID: walletOperationID,
        blockchainID,
        completedAt: settledAt,
        listedPosition: position,
        position,
      };
    }
  }
}

/** The contract's object, field by field: internal fields never leave, fromShortCode only for a merchant. */
export function toApi(doc: MerchantPaymentDoc): Payment {
  return {
    operationID: doc.operationID,
    type: doc.type,
    amount: doc.amount,
    from: doc.from,
    fromType: doc.fromType,
    ...(doc.fromType === 'merchant' && doc.fromShortCode !== undefined ? { fromShortCode: doc.fromShortCode } : {}),
    memo: doc.memo,
    blockchainID: doc.blockchainID,
    createdAt: doc.createdAt,
    // Extension field (issue 18): when the payment was received; a listed payment is always completed.
    completedAt: doc.completedAt ?? doc.createdAt,
    sourceOperationID: doc.id,
  };
}

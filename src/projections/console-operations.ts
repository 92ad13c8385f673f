import { type Decimal, formatAmount } from '../domain/money.ts';
import type { OperationRequested, OperationType } from '../domain/events.ts';
import type { CollectionDefinition } from '../ports/read-store.ts';
import type { ProjectedEvent, Projection } from './projection.ts';
import { isOperationEvent, lifecycleChange, OPERATION_EVENT_TYPES } from './operation-lifecycle.ts';
import type { ContractStatus } from '../domain/operation-status.ts';

/**
 * Every operation a party sees in the console, one document per (party, operation): the ones it created with
 * its keys, and the cash-ins a merchant received from a distributor. Its fields are made for the console's
 * filters: each filter is an equality on an indexed field followed by `sortKey`, so that a filtered page is
 * an index range, newest first, and paging goes by keyset (`sortKey` below or above the last row's) rather
 * than by skipping rows. Dates and amounts are ranges on strings that sort as their values do. The Pending
 * approval page lists from it too (`party`, `status` pending, `side` own): a document holds everything its row
 * shows, so no operation's stream is read for it.
 */
export type ConsoleOperationDoc = {
  /** The operationID for the creating party's document, `received:<operationID>` for the receiving merchant's. */
  id: string;
  /** `<partyType>:<partyID>`: whose list it is in. */
  party: string;
  operationID: string;
  operationType: OperationType;
  /** `own`: the party created it; `received`: a cash-in to a merchant, created by the distributor. */
  side: 'own' | 'received';
  amount: string;
  fee: string;
  /** The amount as a fixed-width string (see amountKey): compares as the decimal does. */
  amountKey: string;
  payerName: string;
  payerShortCode: string | null;
  /** The other side as this party sees it. */
  counterpartyKind: 'distributor' | 'merchant' | 'individual';
  counterpartyID: string;
  counterpartyName: string;
  counterpartyShortCode: string | null;
  /** The counterparty filter's key: an individual's E.164 phone, a party's short code. */
  counterparty: string;
  memo: string | null;
  keyID: string | null;
  status: ContractStatus;
  blockchainID: string;
  walletOperationID: string;
  sequenceNumber: number | null;
  lastError: string | null;
  /** Once rejected: the reason given. */
  rejectionReason?: string;
  createdAt: string;
  updatedAt: string;
  /** `<createdAt>|<operationID>`: unique, sorts by creation time; the keyset of every page. */
  sortKey: string;
  /**
   * What the search box matches, lower case: the operation id, the counterparty's phone or id, the memo, one a line.
   * It starts with the operation id (lower case already), so that an id's prefix is a range on `text` too.
   */
  text: string;
  position: number;
};

export const CONSOLE_OPERATIONS_PROJECTION = 'console-operations';
export const CONSOLE_OPERATIONS_COLLECTION: CollectionDefinition = {
  name: 'console_operations',
  indexes: [
    ['party', 'sortKey'],
    ['party', 'status', 'sortKey'],
    ['party', 'operationType', 'sortKey'],
    ['party', 'keyID', 'sortKey'],
    ['party', 'counterparty', 'sortKey'],
    ['party', 'amountKey'],
    // Substring search reads these entries; an operation id's prefix is a range of them (`text` starts with the id).
    ['party', 'text'],
  ],
  searchFields: ['text'],
};

/** Integer digits of an amount key: more than any amount the domain accepts (18). */
const KEY_INTEGER_DIGITS = 20;

/** A non-negative decimal as a string of fixed width, so that string order is numeric order. */
export function amountKey(amount: Decimal.Value, scale: number): string {
  const [integer = '0', fraction = ''] = formatAmount(amount, scale).split('.');
  return scale > 0
    ? `${integer.padStart(KEY_INTEGER_DIGITS, '0')}.${fraction}`
    : integer.padStart(KEY_INTEGER_DIGITS, '0');
}

export const partyKey = (party: { type: string; id: string }): string => `${party.type}:${party.id}`;

/** The parties whose console lists show an operation, and which side they are on. */
function viewers(data: OperationRequested['data']): Array<{ id: string; party: string; side: 'own' | 'received' }> {
  const found: Array<{ id: string; party: string; side: 'own' | 'received' }> = [];
  if (data.party) found.push({ id: data.operationID, party: partyKey(data.party), side: 'own' });
  if (data.operationType === 'cash-in' && data.payee.kind === 'merchant')
    found.push({ id: `received:${data.operationID}`, party: `merchant:${data.payee.id}`, side: 'received' });
  return found;
}

function requested(
  data: OperationRequested['data'],
  id: string,
  position: number,
  scale: number,
): ConsoleOperationDoc | null {
  const viewer = viewers(data).find((v) => v.id === id);
  if (!viewer) return null;
  const received = viewer.side === 'received';
  const counterparty = received
    ? {
        kind: data.payer.kind as 'distributor',
        id: data.payer.id,
        name: data.payerName,
        shortCode: data.payerShortCode,
      }
    : {
        kind: data.counterparty.kind,
        id: data.counterparty.id,
        name: data.counterparty.name,
        shortCode: data.counterparty.shortCode ?? null,
      };
  return {
    id,
    party: viewer.party,
    operationID: data.operationID,
    operationType: data.operationType,
    side: viewer.side,
    amount: data.amount,
    fee: received ? formatAmount('0', scale) : data.fee,
    amountKey: amountKey(data.amount, scale),
    payerName: data.payerName,
    payerShortCode: data.payerShortCode,
    counterpartyKind: counterparty.kind,
    counterpartyID: counterparty.id,
    counterpartyName: counterparty.name,
    counterpartyShortCode: counterparty.shortCode,
    counterparty: counterparty.kind === 'individual' ? counterparty.id : (counterparty.shortCode ?? counterparty.id),
    memo: data.memo,
    keyID: received ? null : data.keyID,
    status: 'pending',
    blockchainID: '',
    walletOperationID: '',
    sequenceNumber: null,
    lastError: null,
    createdAt: data.createdAt,
    updatedAt: data.createdAt,
    sortKey: `${data.createdAt}|${data.operationID}`,
    text: [data.operationID, counterparty.id, data.memo ?? ''].join('\n').toLowerCase(),
    position,
  };
}

export function consoleOperationsProjection(options: { assetScale: number }): Projection<ConsoleOperationDoc> {
  return {
    name: CONSOLE_OPERATIONS_PROJECTION,
    collection: CONSOLE_OPERATIONS_COLLECTION,
    eventTypes: OPERATION_EVENT_TYPES,
    documentIds(event: ProjectedEvent) {
      if (!isOperationEvent(event)) return [];
      if (event.type === 'OperationRequested') return viewers(event.data).map((v) => v.id);
      // Later events carry only the operation id: both possible documents are read, a missing one stays missing.
      return [event.data.operationID, `received:${event.data.operationID}`];
    },
    evolve(doc, event, id) {
      if (!isOperationEvent(event)) return doc;
      if (event.type === 'OperationRequested') return requested(event.data, id, event.position, options.assetScale);
      return doc ? { ...doc, ...lifecycleChange(event), position: event.position } : null;
    },
  };
}

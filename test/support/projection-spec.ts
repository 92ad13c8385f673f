import { expect } from 'vitest';
import type {
  OperationCompleted,
  OperationFailed,
  OperationRequested,
  WalletCredited,
  WalletDebited,
  WalletOpsEvent,
  WalletRef,
} from '../../src/domain/events.ts';
import type { Document } from '../../src/ports/read-store.ts';
import type { ProjectedEvent, Projection } from '../../src/projections/projection.ts';

export type Docs<Doc> = Record<string, Doc>;
type AnyEvent = WalletOpsEvent | { type: string; data: unknown };

/** Events as the store hands them out: positions 1, 2, ... and a stored time one second apart. */
export function stored(events: readonly AnyEvent[], firstPosition = 1): ProjectedEvent[] {
  return events.map((event, index) => ({
    type: event.type,
    data: event.data,
    position: firstPosition + index,
    createdAt: new Date(Date.UTC(2025, 0, 1, 0, 0, firstPosition + index)).toISOString(),
  }));
}

const deepFreeze = <T>(value: T): T => {
  if (value && typeof value === 'object') for (const inner of Object.values(value)) deepFreeze(inner);
  return Object.freeze(value);
};

/**
 * Given/when/then for projections. `fold` does what the runner does: only the projection's event types, per
 * document id the event names, skip when the document has seen the event's position, evolve (on a frozen
 * copy: evolve must not mutate), stamp id and position, delete on null, and keep what a JSON store keeps.
 */
export function projectionSpec<Doc extends Document>(projection: Projection<Doc>) {
  const fold = (events: readonly ProjectedEvent[], start: Docs<Doc> = {}): Docs<Doc> => {
    const docs: Docs<Doc> = structuredClone(start);
    for (const event of events) {
      if (!projection.eventTypes.includes(event.type)) continue;
      for (const id of projection.documentIds(event)) {
        const doc = docs[id] ?? null;
        if (doc && (doc.position as number) >= event.position) continue;
        const next = projection.evolve(doc === null ? null : deepFreeze(structuredClone(doc)), event, id);
        if (next === null) delete docs[id];
        else docs[id] = JSON.parse(JSON.stringify({ ...next, id, position: event.position })) as Doc;
      }
    }
    return docs;
  };
  return {
    fold,
    given: (...given: AnyEvent[]) => ({
      when: (...when: AnyEvent[]) => {
        const before = fold(stored(given));
        const docs = fold(stored(when, given.length + 1), before);
        return {
          before,
          docs,
          then: (expected: Docs<Doc>) => expect(docs).toEqual(expected),
          thenNothingChanged: () => expect(docs).toEqual(before),
        };
      },
    }),
  };
}

// Operation fixtures --------------------------------------------------------------------------------------
export const DISTRIBUTOR = { id: '7d1f0c2e-1111-4a6b-9c1d-000000000001', name: 'Lagos Cash Point', shortCode: '4001' };
export const MERCHANT = { id: '9a2b3c4d-2222-4e5f-8a9b-000000000002', name: 'Ikeja Groceries', shortCode: '5001' };
export const OTHER_MERCHANT = { id: '9a2b3c4d-3333-4e5f-8a9b-000000000003', name: 'Yaba Books', shortCode: '5002' };
export const PHONE = '+2348012345678';
export const T0 = '2025-03-01T10:00:00.000Z';
/** T0 plus this many minutes. */
export const at = (minutes: number) => new Date(Date.parse(T0) + minutes * 60_000).toISOString();

type RequestedData = OperationRequested['data'];
const base = (
  operationID: string,
): Omit<
  RequestedData,
  'operationType' | 'party' | 'payer' | 'payee' | 'payerName' | 'payerShortCode' | 'counterparty'
> => ({
  operationID,
  keyID: 'key_1',
  amount: '100.00',
  fee: '0.00',
  memo: null,
  cashOutFulfillmentType: null,
  cashOutFulfillmentID: null,
  volumeDay: null,
  createdAt: T0,
});
const requested = (data: RequestedData): OperationRequested => ({ type: 'OperationRequested', data });
const distributorParty = { type: 'distributor', id: DISTRIBUTOR.id } as const;
const merchantParty = { type: 'merchant', id: MERCHANT.id } as const;
const distributorPayer = { payerName: DISTRIBUTOR.name, payerShortCode: DISTRIBUTOR.shortCode };
const merchantPayer = { payerName: MERCHANT.name, payerShortCode: MERCHANT.shortCode };

/** OperationRequested of every kind, as the write side builds them; `over` changes any field. */
export const request = {
  cashInToIndividual: (id: string, over: Partial<RequestedData> = {}) =>
    requested({
      ...base(id),
      operationType: 'cash-in',
      party: distributorParty,
      payer: { kind: 'distributor', id: DISTRIBUTOR.id },
      payee: { kind: 'individual', id: PHONE },
      ...distributorPayer,
      counterparty: { kind: 'individual', id: PHONE, name: 'Ada Obi' },
      ...over,
    }),
  cashInToMerchant: (id: string, over: Partial<RequestedData> = {}) =>
    requested({
      ...base(id),
      operationType: 'cash-in',
      party: distributorParty,
      payer: { kind: 'distributor', id: DISTRIBUTOR.id },
      payee: { kind: 'merchant', id: MERCHANT.id },
      ...distributorPayer,
      counterparty: { kind: 'merchant', ...MERCHANT },
      ...over,
    }),
  cashOutFulfillment: (id: string, over: Partial<RequestedData> = {}) =>
    requested({
      ...base(id),
      operationType: 'cash-out-fulfillment',
      party: distributorParty,
      payer: { kind: 'individual', id: PHONE },
      payee: { kind: 'distributor', id: DISTRIBUTOR.id },
      payerName: 'Ada Obi',
      payerShortCode: null,
      counterparty: { kind: 'individual', id: PHONE, name: 'Ada Obi' },
      cashOutFulfillmentType: 'cash',
      cashOutFulfillmentID: 'rcpt-42',
      ...over,
    }),
  cashOut: (id: string, over: Partial<RequestedData> = {}) =>
    requested({
      ...base(id),
      operationType: 'cash-out',
      party: merchantParty,
      fee: '1.50',
      payer: { kind: 'merchant', id: MERCHANT.id },
      payee: { kind: 'distributor', id: DISTRIBUTOR.id },
      ...merchantPayer,
      counterparty: { kind: 'distributor', ...DISTRIBUTOR },
      ...over,
    }),
  payMerchant: (id: string, over: Partial<RequestedData> = {}) =>
    requested({
      ...base(id),
      operationType: 'pay-merchant',
      party: merchantParty,
      fee: '0.50',
      payer: { kind: 'merchant', id: MERCHANT.id },
      payee: { kind: 'merchant', id: OTHER_MERCHANT.id },
      ...merchantPayer,
      counterparty: { kind: 'merchant', ...OTHER_MERCHANT },
      ...over,
    }),
  payIndividual: (id: string, over: Partial<RequestedData> = {}) =>
    requested({
      ...base(id),
      operationType: 'pay-individual',
      party: merchantParty,
      fee: '0.25',
      payer: { kind: 'merchant', id: MERCHANT.id },
      payee: { kind: 'individual', id: PHONE },
      ...merchantPayer,
      counterparty: { kind: 'individual', id: PHONE, name: 'Ada Obi' },
      ...over,
    }),
  individualPayment: (id: string, over: Partial<RequestedData> = {}) =>
    requested({
      ...base(id),
      operationType: 'individual-payment',
      party: null,
      keyID: null,
      payer: { kind: 'individual', id: PHONE },
      payee: { kind: 'merchant', id: MERCHANT.id },
      payerName: 'Ada Obi',
      payerShortCode: null,
      counterparty: { kind: 'merchant', ...MERCHANT },
      ...over,
    }),
  issue: (id: string, over: Partial<RequestedData> = {}) =>
    requested({
      ...base(id),
      operationType: 'issue',
      party: null,
      keyID: null,
      payer: { kind: 'platform', id: 'issuance' },
      payee: { kind: 'distributor', id: DISTRIBUTOR.id },
      payerName: 'Treasury',
      payerShortCode: null,
      counterparty: { kind: 'distributor', ...DISTRIBUTOR },
      ...over,
    }),
};

export const approved = (operationID: string, approvedAt = at(1)) =>
  ({ type: 'OperationApproved', data: { operationID, approvedBy: 'user-checker', approvedAt } }) as const;
export const rejected = (operationID: string, rejectedAt = at(1)) =>
  ({
    type: 'OperationRejected',
    data: { operationID, rejectedBy: 'user-checker', reason: 'not ours', rejectedAt },
  }) as const;
export const submitted = (operationID: string, sequenceNumber = 7001, submittedAt = at(2)) =>
  ({ type: 'OperationSubmitted', data: { operationID, sequenceNumber, submittedAt } }) as const;
export const completed = (operationID: string, over: Partial<OperationCompleted['data']> = {}): OperationCompleted => ({
  type: 'OperationCompleted',
  data: {
    operationID,
    blockchainID: `tx-${operationID}`,
    walletOperationID: `wo_${operationID.slice(3)}`,
    sequenceNumber: 7001,
    completedAt: at(3),
    ...over,
  },
});
export const failed = (
  operationID: string,
  lastError = 'ledger refused: insufficient funds',
  failedAt = at(3),
): OperationFailed => ({
  type: 'OperationFailed',
  data: { operationID, lastError, failedAt },
});
export const credited = (wallet: WalletRef, amount: string, operationID = 'op_x'): WalletCredited => ({
  type: 'WalletCredited',
  data: { wallet, operationID, amount },
});
/** A completed debit; by default it settles a hold of the same amount (pass "0" for a debit that held nothing, e.g. issuance). */
export const debited = (
  wallet: WalletRef,
  amount: string,
  operationID = 'op_x',
  heldAmount = amount,
): WalletDebited => ({
  type: 'WalletDebited',
  data: { wallet, operationID, amount, heldAmount },
});

import { randomBytes, randomUUID } from 'node:crypto';
import { releaseWrites } from '../../src/commands/operations.ts';
import type { OperationRequested, WalletRef } from '../../src/domain/events.ts';
import { Decimal } from '../../src/domain/money.ts';
import { streams } from '../../src/domain/streams.ts';
import type { EventStore, NewEvent, StreamAppend } from '../../src/ports/event-store.ts';

/**
 * Stands in for the executor in read-side tests: until the executor exists, an operation completes or fails
 * only by appending the events the executor will append, so these helpers append exactly those, on the same
 * streams and with the same atomicity:
 *   operation-<id>       OperationApproved (unless already approved), OperationSubmitted {sequenceNumber}
 *   then in one appendMulti:
 *   operation-<id>       OperationCompleted {blockchainID, walletOperationID: wo_…, sequenceNumber, completedAt}
 *   wallet-<payer>       WalletDebited {amount + fee, heldAmount: amount + fee}
 *   wallet-<payee>       WalletCredited {amount}
 *   wallet-platform_fees WalletCredited {fee} (only when fee > 0)
 * or, for a failure, OperationFailed with the releases of what the operation held.
 * The operation's payer, payee, amount and fee come from its OperationRequested event, read back.
 *
 * The real executor (src/executor) now runs in the test system too. The approval and the submission are
 * appended together, at the revision read, so an executor woken by that approval finds the operation already
 * submitted and leaves it alone; and one that claimed a checker-approved operation first makes this append
 * fail rather than both acting. Use it on pending operations; let the executor carry checker approvals.
 */
const META = { actor: 'system:executor-stand-in' };
const FEES: WalletRef = { kind: 'platform', id: 'fees' };

export const hex = (bytes: number) => randomBytes(bytes).toString('hex');
/** A fresh operation id as the write side makes them. */
export const newOperationID = () => `op_${hex(16)}`;

export interface Completion {
  operationID: string;
  blockchainID: string;
  walletOperationID: string;
  sequenceNumber: number;
  completedAt: string;
}

interface Options {
  /** Time of every event appended; defaults to now. */
  at?: Date;
  sequenceNumber?: number;
}

/** Amounts in events are written at the asset scale: its decimal places are the scale. */
const scaleOf = (amount: string) => amount.split('.')[1]?.length ?? 0;

let sequence = 90_000 + Math.floor(Math.random() * 10_000);

async function readOperation(store: EventStore, operationID: string) {
  const events = await store.readStream(streams.operation(operationID));
  const first = events[0];
  if (!first || first.type !== 'OperationRequested')
    throw new Error(`operation ${operationID} has no OperationRequested`);
  return {
    requested: first.data as OperationRequested['data'],
    types: events.map((e) => e.type),
    revision: events.length - 1,
  };
}

/** Approval (when still pending) and submission, as one append on the operation stream. */
async function approveAndSubmit(store: EventStore, operationID: string, sequenceNumber: number, now: string) {
  const { requested, types, revision } = await readOperation(store, operationID);
  if (types.some((t) => t !== 'OperationRequested' && t !== 'OperationApproved')) {
    throw new Error(`operation ${operationID} is already ${types.at(-1)}`);
  }
  const events: NewEvent[] = [];
  if (!types.includes('OperationApproved'))
    events.push({
      type: 'OperationApproved',
      data: { operationID, approvedBy: 'system:test', approvedAt: now },
      metadata: META,
    });
  events.push({ type: 'OperationSubmitted', data: { operationID, sequenceNumber, submittedAt: now }, metadata: META });
  const appended = await store.append(streams.operation(operationID), events, revision);
  return { requested, revision: appended.nextExpectedRevision };
}

/** Completes an operation on the ledger: see the file comment for what is appended. */
export async function completeOperation(
  store: EventStore,
  operationID: string,
  options: Options & { blockchainID?: string } = {},
): Promise<Completion> {
  const now = (options.at ?? new Date()).toISOString();
  const sequenceNumber = options.sequenceNumber ?? sequence++;
  const { requested, revision } = await approveAndSubmit(store, operationID, sequenceNumber, now);
  const completion: Completion = {
    operationID,
    blockchainID: options.blockchainID ?? `tx_${hex(16)}`,
    walletOperationID: `wo_${hex(16)}`,
    sequenceNumber,
    completedAt: now,
  };
  const { payer, payee, amount, fee } = requested;
  const debit = new Decimal(amount).plus(fee).toFixed(scaleOf(amount));
  const requests: StreamAppend[] = [
    {
      stream: streams.operation(operationID),
      events: [{ type: 'OperationCompleted', data: { ...completion }, metadata: META }],
      expectedRevision: revision,
    },
    {
      stream: streams.wallet(payer),
      events: [
        {
          type: 'WalletDebited',
          data: { wallet: payer, operationID, amount: debit, heldAmount: debit },
          metadata: META,
        },
      ],
      expectedRevision: 'any',
    },
    {
      stream: streams.wallet(payee),
      events: [{ type: 'WalletCredited', data: { wallet: payee, operationID, amount }, metadata: META }],
      expectedRevision: 'any',
    },
  ];
  if (new Decimal(fee).gt(0)) {
    requests.push({
      stream: streams.wallet(FEES),
      events: [{ type: 'WalletCredited', data: { wallet: FEES, operationID, amount: fee }, metadata: META }],
      expectedRevision: 'any',
    });
  }
  await store.appendMulti(requests);
  return completion;
}

/** Fails an operation after approval and submission, with the releases of its hold (and the key's volume). */
export async function failOperation(
  store: EventStore,
  operationID: string,
  lastError: string,
  options: Options = {},
): Promise<{ failedAt: string; sequenceNumber: number }> {
  const now = (options.at ?? new Date()).toISOString();
  const sequenceNumber = options.sequenceNumber ?? sequence++;
  const { requested, revision } = await approveAndSubmit(store, operationID, sequenceNumber, now);
  const scale = scaleOf(requested.amount);
  const releases = releaseWrites(requested, 'failed', scale).map((write): StreamAppend => ({
    stream: write.stream,
    events: write.events.map((event) => ({ ...event, metadata: META })),
    expectedRevision: write.expectedRevision ?? 'any',
  }));
  await store.appendMulti([
    {
      stream: streams.operation(operationID),
      events: [{ type: 'OperationFailed', data: { operationID, lastError, failedAt: now }, metadata: META }],
      expectedRevision: revision,
    },
    ...releases,
  ]);
  return { failedAt: now, sequenceNumber };
}

/**
 * Requests an operation by appending what the write side appends for one (OperationRequested and the
 * payer's FundsHeld), for operations no endpoint creates (an individual's payment from the wallet app) or
 * for seeding many at once.
 */
export function requestAppends(data: OperationRequested['data']): StreamAppend[] {
  const held = new Decimal(data.amount).plus(data.fee).toFixed(scaleOf(data.amount));
  return [
    {
      stream: streams.operation(data.operationID),
      events: [{ type: 'OperationRequested', data, metadata: { actor: 'system:test', correlationId: randomUUID() } }],
      expectedRevision: 'no_stream',
    },
    {
      stream: streams.wallet(data.payer),
      events: [{ type: 'FundsHeld', data: { wallet: data.payer, operationID: data.operationID, amount: held } }],
      expectedRevision: 'any',
    },
  ];
}

export async function requestOperation(store: EventStore, data: OperationRequested['data']): Promise<string> {
  await store.appendMulti(requestAppends(data));
  return data.operationID;
}

/** An individual's payment to a merchant from the wallet app: no party, no key. */
export function individualPayment(over: {
  phone: string;
  merchant: { id: string; name: string; shortCode: string };
  amount: string;
  memo?: string | null;
  createdAt?: string;
  individualName?: string;
}): OperationRequested['data'] {
  return {
    operationID: newOperationID(),
    party: null,
    keyID: null,
    operationType: 'individual-payment',
    amount: over.amount,
    fee: new Decimal(0).toFixed(scaleOf(over.amount)),
    payer: { kind: 'individual', id: over.phone },
    payee: { kind: 'merchant', id: over.merchant.id },
    payerName: over.individualName ?? 'Test Individual',
    payerShortCode: null,
    counterparty: {
      kind: 'merchant',
      id: over.merchant.id,
      name: over.merchant.name,
      shortCode: over.merchant.shortCode,
    },
    memo: over.memo ?? null,
    cashOutFulfillmentType: null,
    cashOutFulfillmentID: null,
    volumeDay: null,
    createdAt: over.createdAt ?? new Date().toISOString(),
  };
}

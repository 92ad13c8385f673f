/**
 * A realistic history for the benchmarks: parties onboarded, then operations of every type requested,
 * approved, submitted and completed with their wallet movements, some rejected or failed with their holds
 * released, over a few thousand parties, appended with appendMulti in large batches. A generator can be
 * extended: `extendTo` appends until the store holds the target count, continuing the same interleaved
 * lifecycles, so one store can be measured at 1M events and then grown to 10M.
 */
import { randomUUID } from 'node:crypto';
import type { Counterparty, OperationRequested, OperationType, WalletRef } from '../../src/domain/events.ts';
import { streams } from '../../src/domain/streams.ts';
import type { EventStore, NewEvent, StreamAppend } from '../../src/ports/event-store.ts';

export const APPEND_BATCH_EVENTS = 20_000;
export const DISTRIBUTORS = 300;
export const MERCHANTS = 1500;
export const INDIVIDUALS = 4000;
/** Operations between a request and its approval, its submission and its outcome: the lifecycles interleave. */
const LAG = { approve: 40, submit: 80, finish: 120 };

export interface Party {
  kind: 'distributor' | 'merchant';
  id: string;
  name: string;
  shortCode: string;
}
const parties = (kind: Party['kind'], count: number, firstCode: number): Party[] =>
  Array.from({ length: count }, (_, i) => ({
    kind,
    id: randomUUID(),
    name: `${kind} ${i}`,
    shortCode: String(firstCode + i),
  }));
export const distributors = parties('distributor', DISTRIBUTORS, 1000);
export const merchants = parties('merchant', MERCHANTS, 20_000);
export const phones = Array.from(
  { length: INDIVIDUALS },
  (_, i) => `+2348${String(100_000_000 + i * 7919).slice(0, 9)}`,
);

const wallet = (party: Party): WalletRef => ({ kind: party.kind, id: party.id });
const asCounterparty = (party: Party): Counterparty => ({
  kind: party.kind,
  id: party.id,
  name: party.name,
  shortCode: party.shortCode,
});
const individual = (phone: string): Counterparty => ({
  kind: 'individual',
  id: phone,
  name: `Customer ${phone.slice(-4)}`,
});
const FEES: WalletRef = { kind: 'platform', id: 'fees' };

/** Collects the events of many commands into one appendMulti call: one request per stream, in first-touch order. */
class Batch {
  private readonly byStream = new Map<string, NewEvent[]>();
  events = 0;
  add(stream: string, ...events: NewEvent[]): void {
    let list = this.byStream.get(stream);
    if (!list) this.byStream.set(stream, (list = []));
    list.push(...events);
    this.events += events.length;
  }
  take(): StreamAppend[] {
    const requests = [...this.byStream].map(([stream, events]) => ({
      stream,
      events,
      expectedRevision: 'any' as const,
    }));
    this.byStream.clear();
    this.events = 0;
    return requests;
  }
}

const meta = (actor: string) => ({ correlationId: randomUUID(), actor });

interface Operation {
  data: OperationRequested['data'];
  fate: 'completed' | 'rejected' | 'failed' | 'pending';
}

/** The i-th operation: its type by a fixed mix, its payer, payee and fate. */
function operation(i: number, at: string): Operation {
  const pick = <T>(list: T[], salt: number) => list[(i * 2654435761 + salt) % list.length]!;
  const distributor = pick(distributors, 1);
  const merchant = pick(merchants, 2);
  const other = pick(merchants, 3);
  const phone = pick(phones, 4);
  const roll = i % 20;
  const type: OperationType =
    roll < 6
      ? 'cash-in'
      : roll < 8
        ? 'cash-out-fulfillment'
        : roll < 10
          ? 'cash-out'
          : roll < 13
            ? 'pay-merchant'
            : roll < 15
              ? 'pay-individual'
              : 'individual-payment';
  const toMerchant = type === 'cash-in' && i % 3 === 0;
  const amount = `${(i % 5000) + 1}.${String(i % 100).padStart(2, '0')}`;
  const byMerchant = type === 'cash-out' || type === 'pay-merchant' || type === 'pay-individual';
  const [payer, payee, counterparty, payerName, payerShortCode]: [
    WalletRef,
    WalletRef,
    Counterparty,
    string,
    string | null,
  ] =
    type === 'cash-in'
      ? [
          wallet(distributor),
          toMerchant ? wallet(merchant) : { kind: 'individual', id: phone },
          toMerchant ? asCounterparty(merchant) : individual(phone),
          distributor.name,
          distributor.shortCode,
        ]
      : type === 'cash-out-fulfillment'
        ? [{ kind: 'individual', id: phone }, wallet(distributor), individual(phone), individual(phone).name, null]
        : type === 'cash-out'
          ? [wallet(merchant), wallet(distributor), asCounterparty(distributor), merchant.name, merchant.shortCode]
          : type === 'pay-merchant'
            ? [wallet(merchant), wallet(other), asCounterparty(other), merchant.name, merchant.shortCode]
            : type === 'pay-individual'
              ? [
                  wallet(merchant),
                  { kind: 'individual', id: phone },
                  individual(phone),
                  merchant.name,
                  merchant.shortCode,
                ]
              : [
                  { kind: 'individual', id: phone },
                  wallet(merchant),
                  asCounterparty(merchant),
                  individual(phone).name,
                  null,
                ];
  const fateRoll = i % 100;
  return {
    fate: fateRoll < 85 ? 'completed' : fateRoll < 92 ? 'rejected' : fateRoll < 97 ? 'failed' : 'pending',
    data: {
      operationID: `op_${randomUUID().replaceAll('-', '')}`,
      party:
        type === 'individual-payment'
          ? null
          : { type: byMerchant ? 'merchant' : 'distributor', id: byMerchant ? merchant.id : distributor.id },
      keyID: type === 'individual-payment' ? null : `key_${String(i % 997).padStart(16, '0')}`,
      operationType: type,
      amount,
      fee: byMerchant ? '0.50' : '0.00',
      payer,
      payee,
      payerName,
      payerShortCode,
      counterparty,
      memo: i % 4 === 0 ? `invoice ${i}` : null,
      cashOutFulfillmentType: type === 'cash-out-fulfillment' ? 'cash' : null,
      cashOutFulfillmentID: type === 'cash-out-fulfillment' ? `RCPT-${i}` : null,
      volumeDay: i % 2 === 0 ? at.slice(0, 10) : null,
      createdAt: at,
    },
  };
}

function requested(batch: Batch, { data }: Operation): void {
  const actor = data.keyID ? `apikey:${data.keyID}` : 'system:wallet-app';
  const debit = (Number(data.amount) + Number(data.fee)).toFixed(2);
  batch.add(streams.operation(data.operationID), { type: 'OperationRequested', data, metadata: meta(actor) });
  batch.add(streams.wallet(data.payer), {
    type: 'FundsHeld',
    data: { wallet: data.payer, operationID: data.operationID, amount: debit },
    metadata: meta(actor),
  });
  if (data.volumeDay && data.keyID) {
    batch.add(streams.keyVolume(data.keyID, data.volumeDay), {
      type: 'VolumeReserved',
      data: { keyID: data.keyID, day: data.volumeDay, operationID: data.operationID, amount: data.amount },
      metadata: meta(actor),
    });
  }
}

/** The later steps of an operation, `step` 1 (approve or reject), 2 (submit), 3 (complete or fail). */
function progressed(
  batch: Batch,
  { data, fate }: Operation,
  step: 1 | 2 | 3,
  at: string,
  sequenceNumber: number,
): void {
  const { operationID } = data;
  const stream = streams.operation(operationID);
  const debit = (Number(data.amount) + Number(data.fee)).toFixed(2);
  const checker = meta('user:checker');
  const executor = meta('system:executor');
  if (fate === 'pending') return;
  if (step === 1) {
    if (fate === 'rejected') {
      batch.add(stream, {
        type: 'OperationRejected',
        data: { operationID, rejectedBy: 'user-checker', reason: 'not expected', rejectedAt: at },
        metadata: checker,
      });
      batch.add(streams.wallet(data.payer), {
        type: 'HoldReleased',
        data: { wallet: data.payer, operationID, amount: debit, reason: 'rejected' },
        metadata: checker,
      });
    } else {
      batch.add(stream, {
        type: 'OperationApproved',
        data: { operationID, approvedBy: 'user-checker', approvedAt: at },
        metadata: checker,
      });
    }
  } else if (fate === 'rejected') {
    return;
  } else if (step === 2) {
    batch.add(stream, {
      type: 'OperationSubmitted',
      data: { operationID, sequenceNumber, submittedAt: at },
      metadata: executor,
    });
  } else if (fate === 'failed') {
    batch.add(stream, {
      type: 'OperationFailed',
      data: { operationID, lastError: 'tx_failed: op_underfunded', failedAt: at },
      metadata: executor,
    });
    batch.add(streams.wallet(data.payer), {
      type: 'HoldReleased',
      data: { wallet: data.payer, operationID, amount: debit, reason: 'failed' },
      metadata: executor,
    });
  } else {
    const walletOperationID = `wo_${randomUUID().replaceAll('-', '')}`;
    batch.add(stream, {
      type: 'OperationCompleted',
      data: {
        operationID,
        blockchainID: randomUUID().replaceAll('-', '').repeat(2),
        walletOperationID,
        sequenceNumber,
        completedAt: at,
      },
      metadata: executor,
    });
    batch.add(streams.wallet(data.payer), {
      type: 'WalletDebited',
      data: { wallet: data.payer, operationID, amount: debit, heldAmount: debit },
      metadata: executor,
    });
    batch.add(streams.wallet(data.payee), {
      type: 'WalletCredited',
      data: { wallet: data.payee, operationID, amount: data.amount },
      metadata: executor,
    });
    if (data.fee !== '0.00')
      batch.add(streams.wallet(FEES), {
        type: 'WalletCredited',
        data: { wallet: FEES, operationID, amount: data.fee },
        metadata: executor,
      });
  }
}

/** Appends the history; `extendTo` may be called again with a larger target to grow the same store. */
export class HistoryGenerator {
  private appended = 0;
  private next = 0;
  private readonly live = new Map<number, Operation>();
  private readonly start = Date.parse('2026-02-01T00:00:00.000Z');

  get events(): number {
    return this.appended;
  }

  get operations(): number {
    return this.next;
  }

  async extendTo(store: EventStore, target: number): Promise<{ events: number; operations: number; seconds: number }> {
    const started = performance.now();
    const batch = new Batch();
    const flush = async () => {
      const count = batch.events;
      if (count > 0) await store.appendMulti(batch.take());
      this.appended += count;
    };
    if (this.appended === 0) {
      const onboardedAt = '2026-01-01T00:00:00.000Z';
      for (const party of [...distributors, ...merchants]) {
        const type = party.kind === 'distributor' ? 'DistributorOnboarded' : 'MerchantOnboarded';
        const idField = party.kind === 'distributor' ? 'distributorID' : 'merchantID';
        batch.add(streams[party.kind](party.id), {
          type,
          data: { [idField]: party.id, name: party.name, shortCode: party.shortCode, onboardedAt },
          metadata: meta('operator:bench'),
        });
        batch.add(streams.shortCode(party.kind, party.shortCode), {
          type: 'ShortCodeClaimed',
          data: { partyType: party.kind, shortCode: party.shortCode, partyID: party.id },
          metadata: meta('operator:bench'),
        });
      }
      for (const phone of new Set(phones))
        batch.add(streams.individual(phone), {
          type: 'IndividualRegistered',
          data: { phone, name: individual(phone).name, registeredAt: onboardedAt },
          metadata: meta('operator:bench'),
        });
      await flush();
    }

    const { live } = this;
    // Operation i is requested at step i, approved at i + 40, submitted at i + 80, finished at i + 120.
    for (let i = this.next; this.appended + batch.events < target; i++, this.next = i) {
      const at = new Date(this.start + i * 1000).toISOString();
      live.set(i, operation(i, at));
      requested(batch, live.get(i)!);
      if (i >= LAG.approve) progressed(batch, live.get(i - LAG.approve)!, 1, at, i);
      if (i >= LAG.submit) progressed(batch, live.get(i - LAG.submit)!, 2, at, i);
      if (i >= LAG.finish) {
        progressed(batch, live.get(i - LAG.finish)!, 3, at, i);
        live.delete(i - LAG.finish); // let it go
      }
      if (batch.events >= APPEND_BATCH_EVENTS) await flush();
    }
    await flush();
    return { events: this.appended, operations: this.next, seconds: (performance.now() - started) / 1000 };
  }
}

/** Appends a history of about `target` events (the whole of it in one go). */
export function generate(
  store: EventStore,
  target: number,
): Promise<{ events: number; operations: number; seconds: number }> {
  return new HistoryGenerator().extendTo(store, target);
}

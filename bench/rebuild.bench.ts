/**
 * Projection rebuild throughput on the embedded store:
 *   npm run bench:rebuild                      (writes the "Rebuild" section of docs/benchmarks.md)
 *   BENCH_EVENTS=100000 npm run bench:rebuild  (a quick check)
 * Generates BENCH_EVENTS events (default 1,000,000) of a realistic history: parties onboarded, then operations
 * of every type requested, approved, submitted and completed with their wallet movements, some rejected or
 * failed with their holds released, over a few thousand parties. They are appended with appendMulti in large
 * batches into a temporary embedded store. Then every projection is rebuilt with rebuildProjection (what
 * `projections rebuild` runs), beside the floor of any rebuild measured in the same run: reading the events
 * with readAll pages of the same size, all of them and with each projection's own filter.
 */
import { randomUUID } from 'node:crypto';
import { openStores } from '../src/adapters/open-stores.ts';
import type { Counterparty, OperationRequested, OperationType, WalletRef } from '../src/domain/events.ts';
import { streams } from '../src/domain/streams.ts';
import type { EventFilter, EventStore, NewEvent, StreamAppend } from '../src/ports/event-store.ts';
import { allProjections } from '../src/projections/index.ts';
import { rebuildProjection, rebuildProjections } from '../src/projections/rebuild.ts';
import { tempDir } from '../test/support/temp-dir.ts';
import { machineNote, writeBenchSection } from './support/report.ts';

const TARGET_EVENTS = Number(process.env.BENCH_EVENTS ?? 1_000_000);
const APPEND_BATCH_EVENTS = 20_000;
/** The page size the rebuild reads with (src/projections/rebuild.ts). */
const PAGE = 20_000;
const DISTRIBUTORS = 300;
const MERCHANTS = 1500;
const INDIVIDUALS = 4000;
/** Operations between a request and its approval, its submission and its outcome: the lifecycles interleave. */
const LAG = { approve: 40, submit: 80, finish: 120 };
const HEADING = '## Rebuild (npm run bench:rebuild)';
/** Events applied per second that a rebuild should reach on the embedded store. */
const AIM = 100_000;

// ---- the history ------------------------------------------------------------------------------------------

interface Party { kind: 'distributor' | 'merchant'; id: string; name: string; shortCode: string }
const parties = (kind: Party['kind'], count: number, firstCode: number): Party[] =>
  Array.from({ length: count }, (_, i) => ({ kind, id: randomUUID(), name: `${kind} ${i}`, shortCode: String(firstCode + i) }));
const distributors = parties('distributor', DISTRIBUTORS, 1000);
const merchants = parties('merchant', MERCHANTS, 20_000);
const phones = Array.from({ length: INDIVIDUALS }, (_, i) => `+2348${String(100_000_000 + i * 7919).slice(0, 9)}`);

const wallet = (party: Party): WalletRef => ({ kind: party.kind, id: party.id });
const asCounterparty = (party: Party): Counterparty => ({ kind: party.kind, id: party.id, name: party.name, shortCode: party.shortCode });
const individual = (phone: string): Counterparty => ({ kind: 'individual', id: phone, name: `Customer ${phone.slice(-4)}` });
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
    const requests = [...this.byStream].map(([stream, events]) => ({ stream, events, expectedRevision: 'any' as const }));
    this.byStream.clear();
    this.events = 0;
    return requests;
  }
}

const meta = (actor: string) => ({ correlationId: randomUUID(), actor });

interface Operation { data: OperationRequested['data']; fate: 'completed' | 'rejected' | 'failed' | 'pending' }

/** The i-th operation: its type by a fixed mix, its payer, payee and fate. */
function operation(i: number, at: string): Operation {
  const pick = <T>(list: T[], salt: number) => list[(i * 2654435761 + salt) % list.length]!;
  const distributor = pick(distributors, 1);
  const merchant = pick(merchants, 2);
  const other = pick(merchants, 3);
  const phone = pick(phones, 4);
  const roll = i % 20;
  const type: OperationType = roll < 6 ? 'cash-in' : roll < 8 ? 'cash-out-fulfillment' : roll < 10 ? 'cash-out' : roll < 13 ? 'pay-merchant' : roll < 15 ? 'pay-individual' : 'individual-payment';
  const toMerchant = type === 'cash-in' && i % 3 === 0;
  const amount = `${(i % 5000) + 1}.${String(i % 100).padStart(2, '0')}`;
  const byMerchant = type === 'cash-out' || type === 'pay-merchant' || type === 'pay-individual';
  const [payer, payee, counterparty, payerName, payerShortCode]: [WalletRef, WalletRef, Counterparty, string, string | null] =
    type === 'cash-in' ? [wallet(distributor), toMerchant ? wallet(merchant) : { kind: 'individual', id: phone }, toMerchant ? asCounterparty(merchant) : individual(phone), distributor.name, distributor.shortCode]
    : type === 'cash-out-fulfillment' ? [{ kind: 'individual', id: phone }, wallet(distributor), individual(phone), individual(phone).name, null]
    : type === 'cash-out' ? [wallet(merchant), wallet(distributor), asCounterparty(distributor), merchant.name, merchant.shortCode]
    : type === 'pay-merchant' ? [wallet(merchant), wallet(other), asCounterparty(other), merchant.name, merchant.shortCode]
    : type === 'pay-individual' ? [wallet(merchant), { kind: 'individual', id: phone }, individual(phone), merchant.name, merchant.shortCode]
    : [{ kind: 'individual', id: phone }, wallet(merchant), asCounterparty(merchant), individual(phone).name, null];
  const fateRoll = i % 100;
  return {
    fate: fateRoll < 85 ? 'completed' : fateRoll < 92 ? 'rejected' : fateRoll < 97 ? 'failed' : 'pending',
    data: {
      operationID: `op_${randomUUID().replaceAll('-', '')}`,
      party: type === 'individual-payment' ? null : { type: byMerchant ? 'merchant' : 'distributor', id: byMerchant ? merchant.id : distributor.id },
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
  batch.add(streams.wallet(data.payer), { type: 'FundsHeld', data: { wallet: data.payer, operationID: data.operationID, amount: debit }, metadata: meta(actor) });
  if (data.volumeDay && data.keyID) {
    batch.add(streams.keyVolume(data.keyID, data.volumeDay), { type: 'VolumeReserved', data: { keyID: data.keyID, day: data.volumeDay, operationID: data.operationID, amount: data.amount }, metadata: meta(actor) });
  }
}

/** The later steps of an operation, `step` 1 (approve or reject), 2 (submit), 3 (complete or fail). */
function progressed(batch: Batch, { data, fate }: Operation, step: 1 | 2 | 3, at: string, sequenceNumber: number): void {
  const { operationID } = data;
  const stream = streams.operation(operationID);
  const debit = (Number(data.amount) + Number(data.fee)).toFixed(2);
  const checker = meta('user:checker');
  const executor = meta('system:executor');
  if (fate === 'pending') return;
  if (step === 1) {
    if (fate === 'rejected') {
      batch.add(stream, { type: 'OperationRejected', data: { operationID, rejectedBy: 'user-checker', reason: 'not expected', rejectedAt: at }, metadata: checker });
      batch.add(streams.wallet(data.payer), { type: 'HoldReleased', data: { wallet: data.payer, operationID, amount: debit, reason: 'rejected' }, metadata: checker });
    } else {
      batch.add(stream, { type: 'OperationApproved', data: { operationID, approvedBy: 'user-checker', approvedAt: at }, metadata: checker });
    }
  } else if (fate === 'rejected') {
    return;
  } else if (step === 2) {
    batch.add(stream, { type: 'OperationSubmitted', data: { operationID, sequenceNumber, submittedAt: at }, metadata: executor });
  } else if (fate === 'failed') {
    batch.add(stream, { type: 'OperationFailed', data: { operationID, lastError: 'tx_failed: op_underfunded', failedAt: at }, metadata: executor });
    batch.add(streams.wallet(data.payer), { type: 'HoldReleased', data: { wallet: data.payer, operationID, amount: debit, reason: 'failed' }, metadata: executor });
  } else {
    const walletOperationID = `wo_${randomUUID().replaceAll('-', '')}`;
    batch.add(stream, { type: 'OperationCompleted', data: { operationID, blockchainID: randomUUID().replaceAll('-', '').repeat(2), walletOperationID, sequenceNumber, completedAt: at }, metadata: executor });
    batch.add(streams.wallet(data.payer), { type: 'WalletDebited', data: { wallet: data.payer, operationID, amount: debit, heldAmount: debit }, metadata: executor });
    batch.add(streams.wallet(data.payee), { type: 'WalletCredited', data: { wallet: data.payee, operationID, amount: data.amount }, metadata: executor });
    if (data.fee !== '0.00') batch.add(streams.wallet(FEES), { type: 'WalletCredited', data: { wallet: FEES, operationID, amount: data.fee }, metadata: executor });
  }
}

async function generate(store: EventStore, target: number): Promise<{ events: number; operations: number; seconds: number }> {
  const started = performance.now();
  const batch = new Batch();
  let appended = 0;
  const flush = async () => {
    const count = batch.events;
    if (count > 0) await store.appendMulti(batch.take());
    appended += count;
  };
  const onboardedAt = '2026-01-01T00:00:00.000Z';
  for (const party of [...distributors, ...merchants]) {
    const type = party.kind === 'distributor' ? 'DistributorOnboarded' : 'MerchantOnboarded';
    const idField = party.kind === 'distributor' ? 'distributorID' : 'merchantID';
    batch.add(streams[party.kind](party.id), { type, data: { [idField]: party.id, name: party.name, shortCode: party.shortCode, onboardedAt }, metadata: meta('operator:bench') });
    batch.add(streams.shortCode(party.kind, party.shortCode), { type: 'ShortCodeClaimed', data: { partyType: party.kind, shortCode: party.shortCode, partyID: party.id }, metadata: meta('operator:bench') });
  }
  for (const phone of new Set(phones)) batch.add(streams.individual(phone), { type: 'IndividualRegistered', data: { phone, name: individual(phone).name, registeredAt: onboardedAt }, metadata: meta('operator:bench') });
  await flush();

  const live: Operation[] = [];
  const start = Date.parse('2026-02-01T00:00:00.000Z');
  let i = 0;
  // Operation i is requested at step i, approved at i + 40, submitted at i + 80, finished at i + 120.
  for (; appended + batch.events < target; i++) {
    const at = new Date(start + i * 1000).toISOString();
    live[i] = operation(i, at);
    requested(batch, live[i]!);
    if (i >= LAG.approve) progressed(batch, live[i - LAG.approve]!, 1, at, i);
    if (i >= LAG.submit) progressed(batch, live[i - LAG.submit]!, 2, at, i);
    if (i >= LAG.finish) {
      progressed(batch, live[i - LAG.finish]!, 3, at, i);
      live[i - LAG.finish] = undefined as unknown as Operation; // let it go
    }
    if (batch.events >= APPEND_BATCH_EVENTS) await flush();
  }
  await flush();
  return { events: appended, operations: i, seconds: (performance.now() - started) / 1000 };
}

// ---- the measurements -------------------------------------------------------------------------------------

/** The floor: readAll pages of PAGE events from the start to the head, as a rebuild reads them, nothing applied. */
async function readFloor(store: EventStore, filter?: EventFilter): Promise<{ events: number; seconds: number }> {
  const started = performance.now();
  const head = await store.headPosition();
  let position = 0;
  let events = 0;
  for (;;) {
    const page = await store.readAll({ fromPosition: position + 1, toPosition: head, maxCount: PAGE, ...(filter ? { filter } : {}) });
    events += page.length;
    if (page.length < PAGE) break;
    position = page.at(-1)!.position;
  }
  return { events, seconds: (performance.now() - started) / 1000 };
}

const cpuSeconds = (since: NodeJS.CpuUsage) => {
  const used = process.cpuUsage(since);
  return (used.user + used.system) / 1e6;
};
const rate = (events: number, seconds: number) => Math.round(events / seconds).toLocaleString('en-US');
const fmt = (n: number) => n.toLocaleString('en-US');

async function main(): Promise<void> {
  const started = performance.now();
  const dir = tempDir('rebuild-bench-');
  const stores = await openStores({ dataDir: dir.path });
  try {
    console.log(`bench:rebuild: generating ${fmt(TARGET_EVENTS)} events`);
    const generated = await generate(stores.eventStore, TARGET_EVENTS);
    console.log(`appended ${fmt(generated.events)} events (${fmt(generated.operations)} operations) in ${generated.seconds.toFixed(1)} s`);

    const all = await readFloor(stores.eventStore);
    console.log(`readAll floor: ${fmt(all.events)} events in ${all.seconds.toFixed(2)} s`);
    const rows: string[] = [];
    let rebuildSeconds = 0;
    let applied = 0;
    for (const projection of allProjections(2)) {
      const floor = await readFloor(stores.eventStore, { eventTypes: [...projection.eventTypes] });
      const result = await rebuildProjection(stores, projection);
      if (result.events !== floor.events) throw new Error(`${projection.name}: rebuilt ${result.events} events, the filter selects ${floor.events}`);
      rebuildSeconds += result.seconds;
      applied += result.events;
      console.log(`${projection.name}: ${fmt(result.events)} events in ${result.seconds.toFixed(2)} s; filtered read floor ${floor.seconds.toFixed(2)} s`);
      const perSecond = result.events / result.seconds;
      rows.push(`| ${projection.name} | ${fmt(result.events)} | ${result.seconds.toFixed(2)} | ${rate(result.events, result.seconds)} | ${rate(floor.events, floor.seconds)} | ${floor.events === 0 ? '' : `${Math.round((100 * perSecond) / (floor.events / floor.seconds))}%`} | ${perSecond >= AIM ? 'met' : 'not met'} |`);
    }
    // What `wallet-ops projections rebuild` does: all of them in one pass over the history.
    const count = allProjections(2).length;
    const cpuBefore = process.cpuUsage();
    const union = await readFloor(stores.eventStore, { eventTypes: [...new Set(allProjections(2).flatMap((p) => p.eventTypes))] });
    const cpuFloor = cpuSeconds(cpuBefore);
    // The process's CPU time as well: on a shared machine it moves less than the wall clock. Taken at the last
    // page's progress report, after its commit and before the promotes, as the one-pass seconds are.
    const cpuStart = process.cpuUsage();
    let cpuOnePass = 0;
    const onePass = await rebuildProjections(stores, allProjections(2), () => (cpuOnePass = cpuSeconds(cpuStart)));
    const onePassSeconds = onePass[0]!.seconds;
    console.log(`all ${count} in one pass: ${onePassSeconds.toFixed(2)} s; union read floor ${union.seconds.toFixed(2)} s; CPU ${cpuOnePass.toFixed(2)} s vs ${cpuFloor.toFixed(2)} s`);
    const section = [
      HEADING,
      '',
      machineNote(),
      `${fmt(generated.events)} events of ${fmt(generated.operations)} operations (all seven types; 85% completed, 7% rejected, 5% failed, 3% pending) over`,
      `${DISTRIBUTORS} distributors, ${MERCHANTS} merchants and ${INDIVIDUALS} individuals, with their holds, wallet movements, volume reservations and`,
      `onboarding events, appended with appendMulti in batches of ${fmt(APPEND_BATCH_EVENTS)} events (${generated.seconds.toFixed(0)} s, ${rate(generated.events, generated.seconds)} events/s) into a temporary embedded store.`,
      `Each projection is rebuilt with rebuildProjection (readAll pages of ${PAGE} with the projection's type filter, folded into documents held in memory, committed to a shadow collection every 100,000 events read, promote).`,
      'The floor is the same paged readAll without applying anything: no rebuild can be faster.',
      '',
      `| projection | events applied | seconds | events/s | floor: its filtered readAll, events/s | vs floor | aim (${fmt(AIM)}/s) |`,
      '|---|---:|---:|---:|---:|---:|---|',
      ...rows,
      `| all ${count}, one after the other | ${fmt(applied)} | ${rebuildSeconds.toFixed(2)} | ${rate(applied, rebuildSeconds)} | | | ${applied / rebuildSeconds >= AIM ? 'met' : 'not met'} |`,
      `| **all ${count} in one pass (projections rebuild), per store event** | ${fmt(generated.events)} in the store, ${fmt(union.events)} read, ${fmt(applied)} applied | ${onePassSeconds.toFixed(2)} | ${rate(generated.events, onePassSeconds)} | ${rate(union.events, union.seconds)} | ${Math.round((100 * union.seconds) / onePassSeconds)}% | ${generated.events / onePassSeconds >= AIM ? 'met' : 'not met'} |`,
      `| floor: readAll of every event, no filter | ${fmt(all.events)} | ${all.seconds.toFixed(2)} | ${rate(all.events, all.seconds)} | | | |`,
      '',
      `Rebuilding all ${count} read models in one pass (what \`wallet-ops projections rebuild\` does) takes ${onePassSeconds.toFixed(1)} s for a store of ${fmt(generated.events)} events: ${rate(generated.events, onePassSeconds)} store events/s.`,
      `CPU time of the process (user + system): the union floor ${cpuFloor.toFixed(2)} s, the one pass ${cpuOnePass.toFixed(2)} s: ${Math.round((100 * cpuFloor) / cpuOnePass)}% of the floor's rate by CPU.`,
      `Whole run: ${((performance.now() - started) / 1000).toFixed(0)} s.`,
      '',
    ].join('\n');
    writeBenchSection(HEADING, section);
    console.log(section);
  } finally {
    await stores.close();
    dir.cleanup();
  }
}

await main();

import { chainID } from '../../src/adapters/ledger/embedded-ledger.ts';
import type { Stores } from '../../src/adapters/open-stores.ts';
import { walletState } from '../../src/commands/wallet-state.ts';
import { loadState } from '../../src/commands/pipeline.ts';
import type { OperationCompleted, OperationRequested, WalletRef } from '../../src/domain/events.ts';
import { Decimal } from '../../src/domain/money.ts';
import { streams } from '../../src/domain/streams.ts';
import { legsOf } from '../../src/executor/workflow.ts';
import { ISSUANCE_ADDRESS, type Ledger, type LedgerLeg, type LedgerTransaction } from '../../src/ports/ledger.ts';
import type { RecordedEvent } from '../../src/ports/event-store.ts';
import { BALANCES_COLLECTION, type BalanceDoc } from '../../src/projections/balances.ts';
import { allProjections } from '../../src/projections/index.ts';
import { projectionStatus } from '../../src/projections/rebuild.ts';

/**
 * The invariants that tie the ledger (the money that really moved) to the event store and the read models,
 * checked after every executor test. Plain errors, no test framework: the bench reuses them.
 *
 *  1. Supply: the sum of every ledger balance except platform:issuance equals minus the issuance balance, and
 *     equals what was issued (legs from platform:issuance) minus what was redeemed (legs back to it).
 *  2. Every wallet's ledger balance equals its projected balance in the `balances` read model and its
 *     write-side balance (its wallet stream folded), once the projections have caught up.
 *  3. Every completed operation has exactly one OperationCompleted and exactly one ledger transaction with the
 *     same operation id, amount(s) and wallets (legsOf), blockchainID and sequence number.
 *  4. No ledger transaction lacks a completed operation; no failed operation has a ledger transaction.
 *  5. The ledger's hash chain verifies: contiguous sequence numbers from 1, each id = chainID(previous, content).
 */
export interface InvariantSubject {
  system: { stores: Pick<Stores, 'eventStore' | 'readStore'>; ledger: Ledger };
  config: { ASSET_SCALE: number };
}

export interface InvariantOptions {
  /**
   * Operation ids of transactions a test submitted to the ledger directly, outside the event store (e.g. to
   * drain a payer behind the write side's back). They need no completed operation, and their legs account
   * for the difference between the ledger and the projections of the wallets they touch.
   */
  external?: string[];
  /** How long to wait for the projections to catch up and for in-flight executions to settle. Default 15 s. */
  timeoutMs?: number;
}

const GENESIS = '0'.repeat(64);
const PAGE = 1000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Every ledger transaction, in sequence order. */
export async function allLedgerTransactions(ledger: Ledger): Promise<LedgerTransaction[]> {
  const all: LedgerTransaction[] = [];
  for (;;) {
    const page = await ledger.transactions({ fromSequence: (all.at(-1)?.sequenceNumber ?? 0) + 1, maxCount: PAGE });
    all.push(...page);
    if (page.length < PAGE) return all;
  }
}

/** Every stored event of these types, in position order. */
export async function allEvents(eventStore: Stores['eventStore'], eventTypes: string[]): Promise<RecordedEvent[]> {
  const all: RecordedEvent[] = [];
  for (;;) {
    const page = await eventStore.readAll({
      fromPosition: (all.at(-1)?.position ?? 0) + 1,
      maxCount: PAGE,
      filter: { eventTypes },
    });
    all.push(...page);
    if (page.length < PAGE) return all;
  }
}

/** The problems with a ledger's hash chain: none when every id is chainID(previous id, content) and sequences run 1, 2, 3… */
export function chainProblems(transactions: LedgerTransaction[]): string[] {
  const problems: string[] = [];
  let previous = GENESIS;
  transactions.forEach((tx, index) => {
    if (tx.sequenceNumber !== index + 1)
      problems.push(`transaction #${index + 1} has sequence number ${tx.sequenceNumber}`);
    const { blockchainID, ...content } = tx;
    // A chain's transaction hashes (0x…) are the chain's own affair; the embedded ledger's ids chain.
    const expected = blockchainID.startsWith('0x') ? blockchainID : chainID(previous, content);
    if (expected !== blockchainID)
      problems.push(`chain broken at sequence ${tx.sequenceNumber}: id ${blockchainID}, recomputed ${expected}`);
    previous = blockchainID;
  });
  return problems;
}

/** Net effect of legs per wallet address. */
function netOf(legs: LedgerLeg[], into = new Map<string, Decimal>()): Map<string, Decimal> {
  for (const leg of legs) {
    into.set(leg.from, (into.get(leg.from) ?? new Decimal(0)).minus(leg.amount));
    into.set(leg.to, (into.get(leg.to) ?? new Decimal(0)).plus(leg.amount));
  }
  return into;
}

const walletOfAddress = (address: string): WalletRef => {
  const at = address.indexOf(':');
  return { kind: address.slice(0, at), id: address.slice(at + 1) } as WalletRef;
};

async function projectionsCaughtUp(subject: InvariantSubject): Promise<boolean> {
  const status = await projectionStatus(subject.system.stores, allProjections(subject.config.ASSET_SCALE));
  return status.every((s) => s.lagEvents === 0);
}

/** Every invariant, checked once: the list of what does not hold (empty when all do). */
export async function ledgerProblems(subject: InvariantSubject, options: InvariantOptions = {}): Promise<string[]> {
  const { ledger, stores } = subject.system;
  const external = new Set(options.external ?? []);
  const problems: string[] = [];

  // 5. The chain.
  const transactions = await allLedgerTransactions(ledger);
  problems.push(...chainProblems(transactions));

  // 1. Supply, and the ledger's stored balances against a replay of its own transactions.
  const replayed = new Map<string, Decimal>();
  let issued = new Decimal(0);
  let redeemed = new Decimal(0);
  for (const tx of transactions) {
    netOf(tx.legs, replayed);
    for (const leg of tx.legs) {
      if (leg.from === ISSUANCE_ADDRESS) issued = issued.plus(leg.amount);
      if (leg.to === ISSUANCE_ADDRESS) redeemed = redeemed.plus(leg.amount);
    }
  }
  const ledgerBalances = new Map<string, Decimal>();
  for (const wallet of replayed.keys()) ledgerBalances.set(wallet, new Decimal(await ledger.balance(wallet)));
  for (const [wallet, balance] of replayed) {
    if (!ledgerBalances.get(wallet)!.eq(balance))
      problems.push(
        `ledger balance of ${wallet} is ${ledgerBalances.get(wallet)!.toFixed()}, its transactions sum to ${balance.toFixed()}`,
      );
    if (wallet !== ISSUANCE_ADDRESS && balance.isNegative())
      problems.push(`ledger balance of ${wallet} is negative: ${balance.toFixed()}`);
  }
  const supply = [...ledgerBalances]
    .filter(([wallet]) => wallet !== ISSUANCE_ADDRESS)
    .reduce((sum, [, b]) => sum.plus(b), new Decimal(0));
  const issuance = ledgerBalances.get(ISSUANCE_ADDRESS) ?? new Decimal(0);
  if (!supply.eq(issuance.negated()))
    problems.push(`total supply ${supply.toFixed()} is not minus the issuance balance ${issuance.toFixed()}`);
  if (!supply.eq(issued.minus(redeemed)))
    problems.push(
      `total supply ${supply.toFixed()} is not issued ${issued.toFixed()} minus redeemed ${redeemed.toFixed()}`,
    );

  // 3 and 4. Operations against ledger transactions.
  const events = await allEvents(stores.eventStore, ['OperationRequested', 'OperationCompleted', 'OperationFailed']);
  const requested = new Map<string, OperationRequested['data']>();
  const completed = new Map<string, OperationCompleted['data'][]>();
  const failed = new Set<string>();
  for (const event of events) {
    const data = event.data as { operationID: string };
    if (event.type === 'OperationRequested') requested.set(data.operationID, event.data as OperationRequested['data']);
    else if (event.type === 'OperationCompleted')
      completed.set(data.operationID, [
        ...(completed.get(data.operationID) ?? []),
        event.data as OperationCompleted['data'],
      ]);
    else failed.add(data.operationID);
  }
  const byOperation = new Map<string, LedgerTransaction[]>();
  for (const tx of transactions) byOperation.set(tx.operationID, [...(byOperation.get(tx.operationID) ?? []), tx]);

  for (const [operationID, completions] of completed) {
    if (completions.length !== 1)
      problems.push(`operation ${operationID} has ${completions.length} OperationCompleted events`);
    if (failed.has(operationID)) problems.push(`operation ${operationID} both completed and failed`);
    const txs = byOperation.get(operationID) ?? [];
    if (txs.length !== 1) {
      problems.push(`completed operation ${operationID} has ${txs.length} ledger transactions`);
      continue;
    }
    const tx = txs[0]!;
    const operation = requested.get(operationID);
    if (!operation) {
      problems.push(`completed operation ${operationID} has no OperationRequested`);
      continue;
    }
    const expectedLegs = legsOf(operation);
    const sameLegs =
      expectedLegs.length === tx.legs.length &&
      expectedLegs.every(
        (leg, i) =>
          leg.from === tx.legs[i]!.from && leg.to === tx.legs[i]!.to && new Decimal(leg.amount).eq(tx.legs[i]!.amount),
      );
    if (!sameLegs)
      problems.push(
        `operation ${operationID}: ledger legs ${JSON.stringify(tx.legs)}, expected ${JSON.stringify(expectedLegs)}`,
      );
    for (const completion of completions) {
      if (completion.blockchainID !== tx.blockchainID)
        problems.push(
          `operation ${operationID} completed as ${completion.blockchainID}, the ledger has ${tx.blockchainID}`,
        );
      if (completion.sequenceNumber !== tx.sequenceNumber)
        problems.push(
          `operation ${operationID} completed at sequence ${completion.sequenceNumber}, the ledger has ${tx.sequenceNumber}`,
        );
    }
  }
  for (const tx of transactions) {
    if (external.has(tx.operationID)) continue;
    if (!completed.has(tx.operationID))
      problems.push(`ledger transaction ${tx.sequenceNumber} (${tx.operationID}) has no completed operation`);
  }
  for (const operationID of failed) {
    if (byOperation.has(operationID)) problems.push(`failed operation ${operationID} has a ledger transaction`);
  }

  // 2. Balances: ledger = projection (+ what external transactions moved) = write side.
  const externalNet = netOf(transactions.filter((tx) => external.has(tx.operationID)).flatMap((tx) => tx.legs));
  const docs = await stores.readStore.find<BalanceDoc>(BALANCES_COLLECTION.name, {});
  const projected = new Map(docs.map((doc) => [doc.id, new Decimal(doc.balance)]));
  for (const wallet of new Set([...ledgerBalances.keys(), ...projected.keys()])) {
    const onLedger = ledgerBalances.get(wallet) ?? new Decimal(await ledger.balance(wallet));
    const inProjection = projected.get(wallet) ?? new Decimal(0);
    const expected = inProjection.plus(externalNet.get(wallet) ?? 0);
    if (!onLedger.eq(expected)) {
      problems.push(
        `wallet ${wallet}: ledger ${onLedger.toFixed()}, projected ${inProjection.toFixed()}${externalNet.has(wallet) ? ` + external ${externalNet.get(wallet)!.toFixed()}` : ''}`,
      );
    }
    const { state } = await loadState(
      { store: stores.eventStore },
      streams.wallet(walletOfAddress(wallet)),
      walletState,
    );
    if (!new Decimal(state.balance).eq(inProjection))
      problems.push(`wallet ${wallet}: write-side balance ${state.balance}, projected ${inProjection.toFixed()}`);
  }
  // 3. Holds: what the balance endpoints show as held (and so available) is what the write side checks creates against.
  for (const doc of docs) {
    const { state } = await loadState({ store: stores.eventStore }, streams.wallet(doc.wallet), walletState);
    if (!new Decimal(state.held).eq(doc.held ?? 0))
      problems.push(`wallet ${doc.id}: write-side held ${state.held}, projected ${doc.held}`);
  }
  return problems;
}

/**
 * Asserts every invariant. Waits for the projections to catch up first; the whole check is taken again
 * until it holds or the timeout passes (an execution in flight may be between the ledger and its
 * completion for a moment), and then fails with everything that did not hold.
 */
export async function assertLedgerMatchesProjections(
  subject: InvariantSubject,
  options: InvariantOptions = {},
): Promise<void> {
  const deadline = Date.now() + (options.timeoutMs ?? 15_000);
  for (;;) {
    const caughtUp = await projectionsCaughtUp(subject);
    const problems = caughtUp
      ? await ledgerProblems(subject, options)
      : ['the projections did not catch up with the event store'];
    if (problems.length === 0) return;
    if (Date.now() > deadline) {
      throw new Error(
        `ledger and projections disagree:\n  - ${problems.slice(0, 30).join('\n  - ')}${problems.length > 30 ? `\n  … and ${problems.length - 30} more` : ''}`,
      );
    }
    await sleep(50);
  }
}

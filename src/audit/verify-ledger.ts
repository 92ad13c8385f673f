import type { EventStore } from '../ports/event-store.ts';
import { type Ledger, type LedgerLeg, type LedgerTransaction } from '../ports/ledger.ts';
import { toUnits } from './amounts.ts';
import { GENESIS_HASH } from './hash-chain.ts';
import { ProblemLog } from './verify-report.ts';
import { FEES_ADDRESS, type BusinessChecker, type OpState } from './verify-business.ts';

// ---- the ledger --------------------------------------------------------------------------------------------

function expectedLegs(op: OpState): LedgerLeg[] {
  const legs: LedgerLeg[] = [{ from: op.payer, to: op.payee, amount: op.amount }];
  if (toUnits(op.fee) > 0n) legs.push({ from: op.payer, to: FEES_ADDRESS, amount: op.fee });
  return legs;
}

const sameLegs = (a: LedgerLeg[], b: LedgerLeg[]) =>
  a.length === b.length && a.every((leg, i) => leg.from === b[i]!.from && leg.to === b[i]!.to && toUnits(leg.amount) === toUnits(b[i]!.amount));

/**
 * The history is read up to the head it had when verify started, the ledger after that: a transaction whose
 * operation was approved and not yet completed at that head (or requested after it) is an execution in
 * flight, listed as such, not a discrepancy.
 */
export type LedgerChainID = (previousID: string, transaction: Omit<LedgerTransaction, 'blockchainID'>) => string;

const IN_FLIGHT: ReadonlySet<string> = new Set(['approved', 'executing', 'submitted']);

export async function reconcileLedger(
  ledger: Ledger,
  business: BusinessChecker,
  problems: ProblemLog,
  pageSize: number,
  history: { store: EventStore; head: number; inFlight: string[] },
  chainID: LedgerChainID | undefined,
): Promise<number> {
  let previous = GENESIS_HASH;
  let count = 0;
  let matched = 0;
  for (;;) {
    const page = await ledger.transactions({ fromSequence: count + 1, maxCount: pageSize });
    for (const tx of page) {
      count += 1;
      if (tx.sequenceNumber !== count) problems.add({ check: 'ledger-chain', operationID: tx.operationID, detail: `ledger transaction #${count} has sequence number ${tx.sequenceNumber}` });
      const { blockchainID, ...content } = tx;
      const recomputed = chainID ? chainID(previous, content) : blockchainID;
      if (recomputed !== blockchainID) {
        problems.add({ check: 'ledger-chain', operationID: tx.operationID, detail: `ledger chain broken at sequence ${tx.sequenceNumber}: id ${blockchainID.slice(0, 16)}…, recomputed ${recomputed.slice(0, 16)}…` });
      }
      previous = blockchainID;
      const op = business.operations.get(tx.operationID);
      const what = `ledger transaction ${tx.sequenceNumber} (${tx.operationID})`;
      if (op && IN_FLIGHT.has(op.status)) {
        history.inFlight.push(tx.operationID);
        continue;
      }
      if (!op) {
        const [requested] = await history.store.readStream(`operation-${tx.operationID}`, { maxCount: 1 });
        if (requested && requested.position > history.head) {
          history.inFlight.push(tx.operationID);
          continue;
        }
      }
      if (!op || op.status !== 'completed') {
        problems.add({ check: 'ledger', operationID: tx.operationID, detail: `${what} has no completed operation${op ? ` (the operation is ${op.status})` : ' (no such operation in the history)'}` });
        continue;
      }
      if (op.ledgerSequence !== null) {
        problems.add({ check: 'ledger', operationID: tx.operationID, position: op.completedPosition, detail: `${what} is a second ledger transaction for the operation (the first is ${op.ledgerSequence})` });
        continue;
      }
      op.ledgerSequence = tx.sequenceNumber;
      matched += 1;
      const legs = expectedLegs(op);
      if (!sameLegs(legs, tx.legs)) {
        problems.add({ check: 'ledger', operationID: tx.operationID, position: op.completedPosition, detail: `${what} moves ${JSON.stringify(tx.legs)}, the operation requested ${JSON.stringify(legs)}` });
      }
      if (op.blockchainID !== tx.blockchainID || op.sequenceNumber !== tx.sequenceNumber) {
        problems.add({ check: 'ledger', operationID: tx.operationID, position: op.completedPosition, detail: `operation completed as ${String(op.blockchainID).slice(0, 16)}… at sequence ${op.sequenceNumber}, the ledger has ${tx.blockchainID.slice(0, 16)}… at ${tx.sequenceNumber}` });
      }
    }
    if (page.length < pageSize) break;
  }
  if (matched < business.completed) {
    for (const [operationID, op] of business.operations) {
      if (op.status === 'completed' && op.ledgerSequence === null) {
        problems.add({ check: 'ledger', operationID, position: op.completedPosition, detail: `completed operation ${operationID} has no ledger transaction` });
      }
    }
  }
  return count;
}


import { Decimal } from '../../src/domain/money.ts';
import { legsOf } from '../../src/executor/workflow.ts';
import type { LedgerTransaction } from '../../src/ports/ledger.ts';
import type { OperationHistory } from './history.ts';
import type { SoakStats } from './stats.ts';

const SHOWN = 20;

/** Adds at most SHOWN problems of one kind, then a count of the rest. */
function report(stats: SoakStats, problems: string[]): void {
  for (const problem of problems.slice(0, SHOWN)) stats.problem(problem);
  if (problems.length > SHOWN) stats.problem(`… and ${problems.length - SHOWN} more like the above`);
}

/** Every create the API acknowledged is in the event store. */
export function checkAcknowledged(history: OperationHistory, stats: SoakStats): void {
  report(
    stats,
    [...stats.acknowledged.keys()]
      .filter((id) => !history.requested.has(id))
      .map((id) => `acknowledged create ${id} is not in the event store`),
  );
  for (const id of stats.individualPayIDs)
    if (!history.requested.has(id)) stats.problem(`individual payment ${id} (CLI succeeded) is not in the event store`);
}

/**
 * Exactly-once settlement, the event store against the ledger: every approved operation has exactly one
 * outcome; a completed one has exactly one ledger transaction, with its legs, id and sequence; a failed one
 * none; and no ledger transaction lacks a completed operation.
 */
export function checkSettlement(history: OperationHistory, transactions: LedgerTransaction[], stats: SoakStats): void {
  const problems: string[] = [];
  const byOperation = new Map<string, LedgerTransaction[]>();
  for (const tx of transactions) byOperation.set(tx.operationID, [...(byOperation.get(tx.operationID) ?? []), tx]);

  for (const id of history.approved.keys()) {
    const outcomes = history.outcomes.get(id) ?? [];
    if (outcomes.length > 1)
      problems.push(`operation ${id} has ${outcomes.length} outcomes: ${outcomes.map((o) => o.type).join(', ')}`);
    if (history.rejected.has(id)) problems.push(`operation ${id} was both approved and rejected`);
  }
  for (const [id, outcomes] of history.outcomes) {
    if (!history.approved.has(id)) problems.push(`operation ${id} has an outcome but was never approved`);
    const txs = byOperation.get(id) ?? [];
    const completed = outcomes.filter((o) => o.type === 'OperationCompleted');
    if (completed.length === 0) {
      if (txs.length > 0) problems.push(`failed operation ${id} has ${txs.length} ledger transaction(s)`);
      continue;
    }
    if (txs.length !== 1) {
      problems.push(`completed operation ${id} has ${txs.length} ledger transactions`);
      continue;
    }
    const tx = txs[0]!;
    for (const completion of completed) {
      if (completion.data.blockchainID !== tx.blockchainID)
        problems.push(
          `operation ${id} completed as ${String(completion.data.blockchainID)}, the ledger has ${tx.blockchainID}`,
        );
      if (completion.data.sequenceNumber !== tx.sequenceNumber)
        problems.push(
          `operation ${id} completed at sequence ${String(completion.data.sequenceNumber)}, the ledger has ${tx.sequenceNumber}`,
        );
    }
    const operation = history.requested.get(id);
    if (!operation) {
      problems.push(`completed operation ${id} has no OperationRequested`);
      continue;
    }
    const expected = legsOf(operation);
    const same =
      expected.length === tx.legs.length &&
      expected.every(
        (leg, i) =>
          leg.from === tx.legs[i]!.from && leg.to === tx.legs[i]!.to && new Decimal(leg.amount).eq(tx.legs[i]!.amount),
      );
    if (!same)
      problems.push(`operation ${id}: ledger legs ${JSON.stringify(tx.legs)}, expected ${JSON.stringify(expected)}`);
  }
  for (const [id, txs] of byOperation) {
    if (!history.outcomes.get(id)?.some((o) => o.type === 'OperationCompleted'))
      problems.push(
        `ledger transaction(s) ${txs.map((tx) => `#${tx.sequenceNumber}`).join(', ')} of ${id} without an OperationCompleted`,
      );
  }
  report(stats, problems);
}

/** Requests the API stored without acknowledging them (the answer was lost, e.g. an append that failed after writing). */
export function unacknowledgedButStored(history: OperationHistory, stats: SoakStats): number {
  let n = 0;
  for (const [id, operation] of history.requested) if (operation.keyID !== null && !stats.acknowledged.has(id)) n += 1;
  return n;
}

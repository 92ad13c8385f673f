import type { EventStore } from '../ports/event-store.ts';
import type { LedgerTransaction } from '../ports/ledger.ts';
import type { BusinessChecker } from './verify-business.ts';
import type { FailedButMoved } from './verify-report.ts';

/** Where the operator's procedure is written. */
export const SETTLE_PROCEDURE = 'docs/operations.md, "Settling a failed operation whose money moved"';

/** At most this many later look-alike operations are named as the client's possible retries. */
const MAX_RETRIES_NAMED = 5;

/**
 * The reconciliation report of `audit verify`: each operation the history records as failed (OperationFailed)
 * while the ledger has its transaction, so money moved that the history and the API say did not. Before the
 * ledger arbitrated fates (void), a paused executor could do this; such operations stay until settled.
 *
 * Each is described from its own stream (read only for these, which are few), with the completed operations
 * requested after it with the same payer, payee and amount: the client, told "failed", may have paid again.
 */
export async function describeFailedButMoved(
  store: EventStore,
  business: BusinessChecker,
  found: ReadonlyArray<{ operationID: string; tx: LedgerTransaction }>,
): Promise<FailedButMoved[]> {
  const order = [...business.operations.keys()];
  const index = new Map(order.map((id, i) => [id, i]));
  const described: FailedButMoved[] = [];
  for (const { operationID, tx } of found) {
    const op = business.operations.get(operationID)!;
    const events = await store.readStream(`operation-${operationID}`);
    const requested = events.find((e) => e.type === 'OperationRequested')?.data as
      { operationType?: string } | undefined;
    const failed = [...events].reverse().find((e) => e.type === 'OperationFailed')?.data as
      { failedAt?: string; lastError?: string } | undefined;
    const possibleRetries: string[] = [];
    for (const id of order.slice((index.get(operationID) ?? order.length) + 1)) {
      const other = business.operations.get(id)!;
      if (
        other.status === 'completed' &&
        other.payer === op.payer &&
        other.payee === op.payee &&
        other.amount === op.amount
      )
        possibleRetries.push(id);
      if (possibleRetries.length === MAX_RETRIES_NAMED) break;
    }
    const retried =
      possibleRetries.length > 0
        ? `; the client may have paid again as ${possibleRetries.join(', ')} (refund that payment once the ` +
          'movement is recorded)'
        : '';
    described.push({
      operationID,
      operationType: requested?.operationType ?? 'unknown',
      payer: op.payer,
      payee: op.payee,
      amount: op.amount,
      fee: op.fee,
      failedAt: failed?.failedAt ?? null,
      lastError: failed?.lastError ?? null,
      ledgerTransaction: {
        sequenceNumber: tx.sequenceNumber,
        blockchainID: tx.blockchainID,
        createdAt: tx.createdAt,
        legs: tx.legs,
      },
      possibleRetries,
      settle:
        `the ledger moved ${op.amount} (fee ${op.fee}) from ${op.payer} to ${op.payee} as transaction ` +
        `${tx.sequenceNumber}; tell the parties it was paid and record the movement in the history${retried}: ` +
        `see ${SETTLE_PROCEDURE}`,
    });
  }
  return described;
}

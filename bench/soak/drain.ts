import type { Ledger } from '../../src/ports/ledger.ts';
import type { OperationHistory } from './history.ts';
import type { SoakStats } from './stats.ts';
import { sleep } from './util.ts';

const POLL_MS = 500;
const REPORT_EVERY_MS = 10_000;
const STUCK_SHOWN = 20;

/**
 * After the load: waits, reading the event store, until every approved operation has an outcome
 * (OperationCompleted or OperationFailed), at most `capSeconds`; then reports what is stuck, with its claims
 * and whether the ledger has its transaction. Returns how long it waited.
 */
export async function drain(
  history: OperationHistory,
  ledger: () => Ledger,
  capSeconds: number,
  stats: SoakStats,
  log: (line: string) => void,
): Promise<number> {
  const started = Date.now();
  let reported = started;
  for (;;) {
    await history.refresh();
    const unsettled = history.unsettled();
    if (unsettled.length === 0) return Date.now() - started;
    if (Date.now() - started > capSeconds * 1000) {
      await reportStuck(history, unsettled, ledger(), stats);
      return Date.now() - started;
    }
    if (Date.now() - reported > REPORT_EVERY_MS) {
      reported = Date.now();
      log(
        `drain: ${unsettled.length} approved operation(s) still without an outcome after ${Math.round((Date.now() - started) / 1000)} s`,
      );
    }
    await sleep(POLL_MS);
  }
}

async function reportStuck(
  history: OperationHistory,
  unsettled: string[],
  ledger: Ledger,
  stats: SoakStats,
): Promise<void> {
  stats.problem(`${unsettled.length} approved operation(s) without an outcome after the drain cap`);
  for (const id of unsettled.slice(0, STUCK_SHOWN)) {
    const operation = history.requested.get(id);
    const claims = history.claims.get(id) ?? [];
    const onLedger = await ledger
      .findByOperationID(id)
      .catch((error: unknown) => `(ledger read failed: ${String(error)})`);
    const ledgerText =
      onLedger === null
        ? 'no ledger transaction'
        : typeof onLedger === 'string'
          ? onLedger
          : `ledger transaction #${onLedger.sequenceNumber}`;
    stats.problem(
      `stuck: ${id} (${operation?.operationType ?? '?'} ${operation?.amount ?? '?'}), approved ${new Date(history.approved.get(id)!).toISOString()}, ` +
        `claims ${claims.map((c) => `${c.executorID}#${c.attempt}`).join(', ') || 'none'}, ${ledgerText}`,
    );
  }
  if (unsettled.length > STUCK_SHOWN) stats.problem(`… and ${unsettled.length - STUCK_SHOWN} more stuck`);
}

import { LedgerRejectedError, LedgerUnavailableError, type Ledger } from '../../ports/ledger.ts';

/**
 * The LEDGER_* fault knobs, around any ledger (embedded or a chain): a confirmation-like delay, submits that
 * fail before reaching the ledger (transient or for good), and the crash that matters most, the process
 * killed right after the ledger accepted a transaction and before the event store heard of it.
 */
export interface LedgerFaults {
  /** Milliseconds added to every submit, as a chain's confirmation time would. */
  latencyMs?: number;
  /** Probability (0..1) that a submit fails with LedgerUnavailableError before touching anything. */
  transientFailureRate?: number;
  /** Probability (0..1) that a submit is refused for good. */
  rejectionRate?: number;
  /** Kill the process (SIGKILL) right after the ledger accepted a transaction: the crash to recover from. */
  crashAfterAccept?: boolean;
  /**
   * Stop the process (SIGSTOP) the first time a transfer holds the ledger: the embedded ledger inside its write
   * transaction (its lock held, nothing committed), a chain's transaction signed and not yet sent. A SIGCONT
   * resumes it where it stopped: the paused executor that voids must be safe against.
   */
  stopWhileHolding?: boolean;
}

/** The adapters' hook for `stopWhileHolding`: stops the process the first time it is called, nothing after. */
export function stopOnceWhileHolding(faults: LedgerFaults | undefined): (() => void) | undefined {
  if (!faults?.stopWhileHolding) return undefined;
  let stopped = false;
  return () => {
    if (stopped) return;
    stopped = true;
    process.kill(process.pid, 'SIGSTOP');
  };
}

export const anyLedgerFaults = (faults: LedgerFaults) =>
  Boolean(faults.latencyMs || faults.transientFailureRate || faults.rejectionRate || faults.crashAfterAccept);

export function withSimulatedLedgerFaults(
  ledger: Ledger,
  faults: LedgerFaults,
  random: () => number = Math.random,
): Ledger {
  if (!anyLedgerFaults(faults)) return ledger;
  return {
    ...ledger,
    async submit(transfer) {
      if (faults.latencyMs) await new Promise((resolve) => setTimeout(resolve, faults.latencyMs));
      if (faults.transientFailureRate && random() < faults.transientFailureRate)
        throw new LedgerUnavailableError('ledger temporarily unavailable (injected)');
      if (faults.rejectionRate && random() < faults.rejectionRate)
        throw new LedgerRejectedError('transaction rejected by the ledger (injected)');
      const tx = await ledger.submit(transfer);
      // The worst moment to die: the ledger has the transaction, the event store does not know yet.
      if (faults.crashAfterAccept) process.kill(process.pid, 'SIGKILL');
      return tx;
    },
    // A void is the executor's way to fail an operation safely: passed through as it is, never faulted here.
    void: (operationID) => ledger.void(operationID),
    fateOf: (operationID) => ledger.fateOf(operationID),
    findByOperationID: (operationID) => ledger.findByOperationID(operationID),
    balance: (wallet) => ledger.balance(wallet),
    transactions: (options) => ledger.transactions(options),
    close: () => ledger.close(),
  };
}

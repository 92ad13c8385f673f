import { WrongExpectedVersionError, type EventStore } from '../ports/event-store.ts';
import {
  LedgerDuplicateError,
  LedgerRejectedError,
  LedgerUnavailableError,
  LedgerVoidedError,
  type Ledger,
} from '../ports/ledger.ts';
import type { WalletOpsMetrics } from './metrics.ts';

/**
 * Metrics decorators of the ports, in the style of src/faults: the same interface, each call passed through,
 * timed and counted. They work on every adapter alike (the embedded SQLite store and KurrentDB; the embedded
 * ledger and any other), which is why the latency is measured here and not inside an adapter.
 */

const seconds = (started: bigint) => Number(process.hrtime.bigint() - started) / 1e9;

/**
 * Times appends (append, appendMulti) until the store says they are durable; reads and subscriptions pass
 * untouched. A conflict (WrongExpectedVersionError) is an answer of the store, not a failure of it: its own outcome.
 */
export function withEventStoreMetrics(store: EventStore, metrics: WalletOpsMetrics): EventStore {
  const timed = async <T>(method: 'append' | 'appendMulti', run: () => Promise<T>): Promise<T> => {
    const started = process.hrtime.bigint();
    try {
      const result = await run();
      metrics.appendDuration.observe({ method, outcome: 'ok' }, seconds(started));
      return result;
    } catch (error) {
      metrics.appendDuration.observe(
        { method, outcome: error instanceof WrongExpectedVersionError ? 'conflict' : 'error' },
        seconds(started),
      );
      throw error;
    }
  };
  return {
    append: (stream, events, expectedRevision) => timed('append', () => store.append(stream, events, expectedRevision)),
    appendMulti: (requests) => timed('appendMulti', () => store.appendMulti(requests)),
    readStream: (stream, options) => store.readStream(stream, options),
    readAll: (options) => store.readAll(options),
    headPosition: () => store.headPosition(),
    subscribeToAll: (options) => store.subscribeToAll(options),
    close: () => store.close(),
  };
}

/** What kind of failure a ledger error is, for `wallet_ops_ledger_errors_total`. */
export function ledgerErrorKind(error: unknown): 'rejected' | 'unavailable' | 'duplicate' | 'voided' | 'other' {
  if (error instanceof LedgerVoidedError) return 'voided';
  if (error instanceof LedgerRejectedError) return 'rejected';
  if (error instanceof LedgerUnavailableError) return 'unavailable';
  if (error instanceof LedgerDuplicateError) return 'duplicate';
  return 'other';
}

/** Times every ledger call and counts its errors by kind. */
export function withLedgerMetrics(ledger: Ledger, metrics: WalletOpsMetrics): Ledger {
  const timed = async <T>(
    method: 'submit' | 'void' | 'fateOf' | 'findByOperationID' | 'balance' | 'transactions',
    run: () => Promise<T>,
  ): Promise<T> => {
    const started = process.hrtime.bigint();
    try {
      const result = await run();
      metrics.ledgerDuration.observe({ method, outcome: 'ok' }, seconds(started));
      return result;
    } catch (error) {
      metrics.ledgerDuration.observe({ method, outcome: 'error' }, seconds(started));
      metrics.ledgerErrors.inc({ method, kind: ledgerErrorKind(error) });
      throw error;
    }
  };
  return {
    submit: (transfer) => timed('submit', () => ledger.submit(transfer)),
    void: (operationID) => timed('void', () => ledger.void(operationID)),
    fateOf: (operationID) => timed('fateOf', () => ledger.fateOf(operationID)),
    findByOperationID: (operationID) => timed('findByOperationID', () => ledger.findByOperationID(operationID)),
    balance: (wallet) => timed('balance', () => ledger.balance(wallet)),
    transactions: (options) => timed('transactions', () => ledger.transactions(options)),
    close: () => ledger.close(),
  };
}

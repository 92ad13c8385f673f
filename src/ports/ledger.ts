/**
 * The ledger port: the boundary with the blockchain that really moves the e-money. A transaction moves
 * amounts between wallets in legs, all or none. Every transaction carries our operation id, and the ledger
 * accepts at most one transaction per operation id: with `findByOperationID` that is what lets the
 * executor recover after a crash without ever paying twice (a production adapter must offer the same, e.g.
 * through a memo index or a deterministic nonce per operation).
 *
 * Wallet addresses are `<kind>:<id>`: `distributor:<uuid>`, `merchant:<uuid>`, `individual:+234…`,
 * `platform:fees`, and `platform:issuance`, the issuing account, the one wallet that may go below zero
 * (issuing e-money debits it; redeeming credits it back).
 */
export interface LedgerLeg {
  from: string;
  to: string;
  /** Decimal string, > 0. */
  amount: string;
}

export interface LedgerTransaction {
  /** SHA-256 of the previous transaction's id and this one's content: the chain. */
  blockchainID: string;
  sequenceNumber: number;
  operationID: string;
  legs: LedgerLeg[];
  createdAt: string;
}

export interface Ledger {
  /** Executes a transaction. Throws LedgerRejectedError (final) or LedgerUnavailableError (worth retrying). */
  submit(transfer: { operationID: string; legs: LedgerLeg[] }): Promise<LedgerTransaction>;
  findByOperationID(operationID: string): Promise<LedgerTransaction | null>;
  /** The wallet's balance on the ledger, "0" at the scale for a wallet never used. */
  balance(wallet: string): Promise<string>;
  /** Transactions in sequence order from a sequence number (inclusive), for audits and reconciliation. */
  transactions(options?: { fromSequence?: number; maxCount?: number }): Promise<LedgerTransaction[]>;
  close(): Promise<void>;
}

/** The ledger refused the transaction for good (e.g. insufficient funds): retrying cannot help. */
export class LedgerRejectedError extends Error {
  readonly code = 'LEDGER_REJECTED';
  constructor(message: string) {
    super(message);
    this.name = 'LedgerRejectedError';
  }
}

/** The ledger could not be reached or did not answer: the transaction may be retried. */
export class LedgerUnavailableError extends Error {
  readonly code = 'LEDGER_UNAVAILABLE';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'LedgerUnavailableError';
  }
}

/** A transaction for this operation id exists already; it carries that transaction. */
export class LedgerDuplicateError extends Error {
  readonly code = 'LEDGER_DUPLICATE';
  constructor(readonly existing: LedgerTransaction) {
    super(`operation ${existing.operationID} was already executed as ${existing.blockchainID}`);
    this.name = 'LedgerDuplicateError';
  }
}

export const walletAddress = (wallet: { kind: string; id: string }) => `${wallet.kind}:${wallet.id}`;
export const ISSUANCE_ADDRESS = 'platform:issuance';

/**
 * The ledger port: the boundary with the blockchain that really moves the e-money. A transaction moves
 * amounts between wallets in legs, all or none. Every transaction carries our operation id, and the ledger
 * accepts at most one transaction per operation id: with `findByOperationID` that is what lets the
 * executor recover after a crash without ever paying twice (a production adapter must offer the same, e.g.
 * through a memo index or a deterministic nonce per operation).
 *
 * The ledger is also the arbiter of an operation's fate. `void(operationID)` writes, on the ledger, that the
 * operation will never execute; `submit` for a voided id is refused with LedgerVoidedError, and a void for an
 * id already executed is refused with that transaction. The ledger serializes the two itself (the embedded
 * ledger in one write transaction, the contract in one block order), so of a submit and a void for the same
 * id exactly one commits, whoever sent it and however late: a paused executor's transfer cannot land after
 * another executor's void, and an operation is recorded failed only once its void committed.
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

/**
 * What the ledger says of an operation id: executed (its transaction), voided (it never will execute), or
 * nothing yet. Executed and voided are final and exclusive.
 */
export type LedgerFate =
  | { kind: 'executed'; tx: LedgerTransaction }
  | { kind: 'voided'; operationID: string; voidedAt: string }
  | { kind: 'none' };

/** A void's outcome: the void committed (now or before: voiding is idempotent), or the transaction won. */
export type LedgerVoidOutcome = Exclude<LedgerFate, { kind: 'none' }>;

export interface Ledger {
  /**
   * Executes a transaction. Throws LedgerDuplicateError (executed already, carrying the transaction),
   * LedgerVoidedError (voided: it never will execute), LedgerRejectedError (final) or LedgerUnavailableError
   * (worth retrying: it may or may not have committed; ask `fateOf`).
   */
  submit(transfer: { operationID: string; legs: LedgerLeg[] }): Promise<LedgerTransaction>;
  /**
   * Voids the operation id: once this resolves with `voided`, no transaction for it can ever commit. Resolves
   * with `executed` and the transaction when the transaction committed first (the void is then refused and
   * writes nothing). Idempotent: voiding a voided id resolves `voided` again, with the first void's time.
   * Throws LedgerUnavailableError (worth retrying: the void may or may not have committed) or
   * LedgerRejectedError (an id the ledger cannot hold, e.g. empty).
   */
  void(operationID: string): Promise<LedgerVoidOutcome>;
  /** The operation's fate as committed on the ledger (a transaction still uncommitted is `none`). */
  fateOf(operationID: string): Promise<LedgerFate>;
  /** The operation's transaction, or null (never executed, or voided). */
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
  readonly existing: LedgerTransaction;
  readonly code = 'LEDGER_DUPLICATE';
  constructor(existing: LedgerTransaction) {
    super(`operation ${existing.operationID} was already executed as ${existing.blockchainID}`);
    this.existing = existing;
    this.name = 'LedgerDuplicateError';
  }
}

/** The operation id was voided on the ledger: no transaction for it will ever commit (final). */
export class LedgerVoidedError extends Error {
  readonly operationID: string;
  readonly voidedAt: string;
  readonly code = 'LEDGER_VOIDED';
  constructor(operationID: string, voidedAt: string) {
    super(`operation ${operationID} was voided on the ledger at ${voidedAt}: it will never execute`);
    this.operationID = operationID;
    this.voidedAt = voidedAt;
    this.name = 'LedgerVoidedError';
  }
}

export const walletAddress = (wallet: { kind: string; id: string }) => `${wallet.kind}:${wallet.id}`;
export const ISSUANCE_ADDRESS = 'platform:issuance';

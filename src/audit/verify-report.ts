/** What `audit verify` reports, and how problems are collected. */
export type AuditCheck =
  | 'hash'
  | 'chain'
  | 'completeness'
  | 'seal'
  | 'operation'
  | 'maker-checker'
  | 'wallet'
  | 'supply'
  | 'ledger'
  | 'ledger-chain'
  | 'outcome'
  | 'snapshot';

export interface AuditProblem {
  check: AuditCheck;
  position?: number;
  stream?: string;
  operationID?: string;
  detail: string;
}

/** An approved operation without an outcome past its time (see `outcome` in verify.ts): what an operator acts on. */
export interface StuckOperation {
  operationID: string;
  /** approved, executing or submitted. */
  status: string;
  /** ISO 8601; null when the approval carries no readable time. */
  approvedAt: string | null;
  /** How long ago it was approved, at the report's `asOf`. */
  approvedMsAgo: number | null;
  /** The last OperationExecutionStarted: its executor, attempt and leaseUntil (as recorded). */
  lastClaim: { executorID: string; attempt: number; leaseUntil: string } | null;
  /** The ledger's transaction for it, when the ledger executed it (money moved, the history does not say so). */
  ledgerTransaction: { sequenceNumber: number; blockchainID: string; createdAt: string } | null;
  /** The problem's text. */
  detail: string;
}

/**
 * An operation the history records as failed whose money moved on the ledger (its transaction exists): the
 * API told the client "failed", the ledger paid. Listed by `audit verify` with the way to settle it.
 */
export interface FailedButMoved {
  operationID: string;
  operationType: string;
  payer: string;
  payee: string;
  amount: string;
  fee: string;
  /** As recorded by OperationFailed. */
  failedAt: string | null;
  lastError: string | null;
  ledgerTransaction: {
    sequenceNumber: number;
    blockchainID: string;
    createdAt: string;
    legs: Array<{ from: string; to: string; amount: string }>;
  };
  /** Completed operations requested later with the same payer, payee and amount: the client may have paid again. */
  possibleRetries: string[];
  /** What the operator does, in one line (the procedure is in docs/operations.md). */
  settle: string;
}

export interface AuditReport {
  ok: boolean;
  checked: {
    events: number;
    streams: number;
    operations: number;
    wallets: number;
    ledgerTransactions: number;
    users: number;
    apiKeys: number;
    seals: number;
    sealedEvents: number;
    /** Events after the last seal: only the per-stream chains cover them so far. */
    unsealedEvents: number;
    /** Events stored before the hash chain existed (they are still sealed and linked to by their successor). */
    unhashedEvents: number;
    headPosition: number;
    /** StateSnapshotted events compared with the history they summarize. */
    snapshots: number;
  };
  supply: { definition: string; issued: string; redeemed: string; supply: string };
  /**
   * The reconciliation with the ledger: done against the named ledger, or not done (`audit verify --ledger
   * skip`, e.g. for a history imported without its ledger). When not done, neither the ledger checks nor the
   * ledger's own chain ran, and `checked.ledgerTransactions` is 0 for that reason only.
   */
  ledger: { reconciled: true; ledger: string } | { reconciled: false; reason: string };
  /** The smallest position named by a hash, chain or seal problem: where the history was first changed. */
  firstBrokenPosition: number | null;
  /**
   * Operations whose ledger transaction exists while their completion is not in the history read (executions
   * in flight on a running system; the first 100). On a quiet system, one that stays here was never recorded.
   */
  inFlight: string[];
  /**
   * Approved operations without an outcome past their time, judged at `asOf` (the first 1000; each is also an
   * `outcome` problem): approved more than `maxApprovedAgeMs` ago, or executed on the ledger with their last
   * claim's lease run out (with no claim: the ledger transaction older than `maxApprovedAgeMs`).
   */
  stuck: StuckOperation[];
  /**
   * The reconciliation report: operations recorded as failed whose money moved on the ledger (the first 1000;
   * each is also a `ledger` problem), with the operator's way to settle each.
   */
  failedButMoved: FailedButMoved[];
  /** The moment operations' ages are measured at (the verify clock), ISO 8601. */
  asOf: string;
  maxApprovedAgeMs: number;
  problems: AuditProblem[];
  /** All problems found; `problems` lists the first `maxProblems`. */
  problemCount: number;
  seconds: number;
  eventsPerSecond: number;
}

export const SUPPLY_DEFINITION =
  'write side: the sum of every wallet balance (WalletCredited - WalletDebited), platform:issuance included, is ' +
  '0 after every completion; supply = sum of every wallet but platform:issuance = issued (debits of ' +
  'platform:issuance) - redeemed (credits to it)';

export class ProblemLog {
  private readonly max: number;
  readonly list: AuditProblem[] = [];
  count = 0;
  firstBroken: number | null = null;
  constructor(max: number) {
    this.max = max;
  }

  add(problem: AuditProblem): void {
    this.count += 1;
    if (this.list.length < this.max) this.list.push(problem);
    if (
      (problem.check === 'hash' || problem.check === 'chain' || problem.check === 'seal') &&
      problem.position !== undefined
    ) {
      this.firstBroken = this.firstBroken === null ? problem.position : Math.min(this.firstBroken, problem.position);
    }
  }
}

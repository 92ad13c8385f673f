/** What `audit verify` reports, and how problems are collected. */
export type AuditCheck = 'hash' | 'chain' | 'seal' | 'operation' | 'maker-checker' | 'wallet' | 'supply' | 'ledger' | 'ledger-chain';

export interface AuditProblem {
  check: AuditCheck;
  position?: number;
  stream?: string;
  operationID?: string;
  detail: string;
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
  };
  supply: { definition: string; issued: string; redeemed: string; supply: string };
  /** The smallest position named by a hash, chain or seal problem: where the history was first changed. */
  firstBrokenPosition: number | null;
  /**
   * Operations whose ledger transaction exists while their completion is not in the history read (executions
   * in flight on a running system; the first 100). On a quiet system, one that stays here was never recorded.
   */
  inFlight: string[];
  problems: AuditProblem[];
  /** All problems found; `problems` lists the first `maxProblems`. */
  problemCount: number;
  seconds: number;
  eventsPerSecond: number;
}


export const SUPPLY_DEFINITION =
  'write side: the sum of every wallet balance (WalletCredited - WalletDebited), platform:issuance included, is 0 after every completion; ' +
  'supply = sum of every wallet but platform:issuance = issued (debits of platform:issuance) - redeemed (credits to it)';

export class ProblemLog {
  readonly list: AuditProblem[] = [];
  count = 0;
  firstBroken: number | null = null;
  constructor(private readonly max: number) {}

  add(problem: AuditProblem): void {
    this.count += 1;
    if (this.list.length < this.max) this.list.push(problem);
    if ((problem.check === 'hash' || problem.check === 'chain' || problem.check === 'seal') && problem.position !== undefined) {
      this.firstBroken = this.firstBroken === null ? problem.position : Math.min(this.firstBroken, problem.position);
    }
  }
}


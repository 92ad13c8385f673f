import { streams } from '../domain/streams.ts';
import type { EventStore, RecordedEvent } from '../ports/event-store.ts';
import { type Ledger, type LedgerLeg, type LedgerTransaction } from '../ports/ledger.ts';
import { toUnits } from './amounts.ts';
import { GENESIS_HASH } from './hash-chain.ts';
import { ProblemLog, type StuckOperation } from './verify-report.ts';
import { FEES_ADDRESS, type BusinessChecker, type OpState } from './verify-business.ts';

// ---- the ledger --------------------------------------------------------------------------------------------

function expectedLegs(op: OpState): LedgerLeg[] {
  const legs: LedgerLeg[] = [{ from: op.payer, to: op.payee, amount: op.amount }];
  if (toUnits(op.fee) > 0n) legs.push({ from: op.payer, to: FEES_ADDRESS, amount: op.fee });
  return legs;
}

const sameLegs = (a: LedgerLeg[], b: LedgerLeg[]) =>
  a.length === b.length &&
  a.every((leg, i) => leg.from === b[i]!.from && leg.to === b[i]!.to && toUnits(leg.amount) === toUnits(b[i]!.amount));

/**
 * The history is read up to the head it had when verify started, the ledger after that: a transaction whose
 * operation was approved and has no outcome yet at that head is set aside in `executed` and judged by
 * `reportStuckOperations` (in flight, or stuck); one whose operation was requested after that head is in
 * flight, listed as such, not a discrepancy.
 */
export type LedgerChainID = (previousID: string, transaction: Omit<LedgerTransaction, 'blockchainID'>) => string;

const IN_FLIGHT: ReadonlySet<string> = new Set(['approved', 'executing', 'submitted']);

export async function reconcileLedger(
  ledger: Ledger,
  business: BusinessChecker,
  problems: ProblemLog,
  pageSize: number,
  history: {
    store: EventStore;
    head: number;
    inFlight: string[];
    executed: Map<string, LedgerTransaction>;
    failedButMoved: Array<{ operationID: string; tx: LedgerTransaction }>;
  },
  chainID: LedgerChainID | undefined,
): Promise<number> {
  let previous = GENESIS_HASH;
  let count = 0;
  let matched = 0;
  for (;;) {
    const page = await ledger.transactions({ fromSequence: count + 1, maxCount: pageSize });
    for (const tx of page) {
      count += 1;
      if (tx.sequenceNumber !== count)
        problems.add({
          check: 'ledger-chain',
          operationID: tx.operationID,
          detail: `ledger transaction #${count} has sequence number ${tx.sequenceNumber}`,
        });
      const { blockchainID, ...content } = tx;
      const recomputed = chainID ? chainID(previous, content) : blockchainID;
      if (recomputed !== blockchainID) {
        problems.add({
          check: 'ledger-chain',
          operationID: tx.operationID,
          detail:
            `ledger chain broken at sequence ${tx.sequenceNumber}: id ${blockchainID.slice(0, 16)}…, recomputed ` +
            `${recomputed.slice(0, 16)}…`,
        });
      }
      previous = blockchainID;
      const op = business.operations.get(tx.operationID);
      const what = `ledger transaction ${tx.sequenceNumber} (${tx.operationID})`;
      if (op && IN_FLIGHT.has(op.status)) {
        if (history.executed.has(tx.operationID)) {
          problems.add({
            check: 'ledger',
            operationID: tx.operationID,
            detail:
              `${what} is a second ledger transaction for the operation (the first is ` +
              `${history.executed.get(tx.operationID)!.sequenceNumber})`,
          });
        } else {
          history.executed.set(tx.operationID, tx);
        }
        continue;
      }
      if (!op) {
        const [requested] = await history.store.readStream(`operation-${tx.operationID}`, { maxCount: 1 });
        if (requested && requested.position > history.head) {
          history.inFlight.push(tx.operationID);
          continue;
        }
      }
      if (op?.status === 'failed') {
        // Money moved for an operation the API told its client had failed: the reconciliation report lists it.
        history.failedButMoved.push({ operationID: tx.operationID, tx });
        problems.add({
          check: 'ledger',
          operationID: tx.operationID,
          detail:
            `${what} moved money for an operation recorded as failed: see the report's failedButMoved for how to ` +
            'settle it',
        });
        continue;
      }
      if (!op || op.status !== 'completed') {
        problems.add({
          check: 'ledger',
          operationID: tx.operationID,
          detail:
            `${what} has no completed ` +
            `operation${op ? ` (the operation is ${op.status})` : ' (no such operation in the history)'}`,
        });
        continue;
      }
      if (op.ledgerSequence !== null) {
        problems.add({
          check: 'ledger',
          operationID: tx.operationID,
          position: op.completedPosition,
          detail: `${what} is a second ledger transaction for the operation (the first is ${op.ledgerSequence})`,
        });
        continue;
      }
      op.ledgerSequence = tx.sequenceNumber;
      matched += 1;
      const legs = expectedLegs(op);
      if (!sameLegs(legs, tx.legs)) {
        problems.add({
          check: 'ledger',
          operationID: tx.operationID,
          position: op.completedPosition,
          detail: `${what} moves ${JSON.stringify(tx.legs)}, the operation requested ${JSON.stringify(legs)}`,
        });
      }
      if (op.blockchainID !== tx.blockchainID || op.sequenceNumber !== tx.sequenceNumber) {
        problems.add({
          check: 'ledger',
          operationID: tx.operationID,
          position: op.completedPosition,
          detail:
            `operation completed as ${String(op.blockchainID).slice(0, 16)}… at sequence ${op.sequenceNumber}, ` +
            `the ledger has ${tx.blockchainID.slice(0, 16)}… at ${tx.sequenceNumber}`,
        });
      }
    }
    if (page.length < pageSize) break;
  }
  if (matched < business.completed) {
    for (const [operationID, op] of business.operations) {
      if (op.status === 'completed' && op.ledgerSequence === null) {
        problems.add({
          check: 'ledger',
          operationID,
          position: op.completedPosition,
          detail: `completed operation ${operationID} has no ledger transaction`,
        });
      }
    }
  }
  return count;
}

// ---- operations without an outcome ----------------------------------------------------------------------

/** Since when an operation waits for its outcome, and its executor's last claim; only until the outcome. */
interface Awaiting {
  /** When it was approved (approvedAt, else the commit time), ms since the epoch; null if neither parses. */
  approvedAt: number | null;
  approvedPosition: number;
  claim: {
    executorID: string;
    attempt: number;
    leaseUntil: number | null;
    leaseText: string;
    startedAt: number | null;
  } | null;
}

const parseTime = (value: unknown): number | null => {
  if (typeof value !== 'string') return null;
  const time = Date.parse(value);
  return Number.isNaN(time) ? null : time;
};

/**
 * Fed every event of the history (with the business checker), it keeps for each approved operation without
 * an outcome yet when it was approved and the lease of its last executor claim (OperationExecutionStarted's
 * leaseUntil); an outcome (OperationCompleted, OperationFailed) or a rejection forgets the operation, so
 * memory holds the operations still open only.
 */
export class OutcomeWatch {
  readonly awaiting = new Map<string, Awaiting>();

  feed(event: RecordedEvent): void {
    switch (event.type) {
      case 'OperationApproved': {
        const data = event.data as { operationID: string; approvedAt?: unknown };
        this.awaiting.set(data.operationID, {
          approvedAt: parseTime(data.approvedAt) ?? parseTime(event.createdAt),
          approvedPosition: event.position,
          claim: null,
        });
        break;
      }
      case 'OperationExecutionStarted': {
        const data = event.data as {
          operationID: string;
          executorID?: unknown;
          attempt?: unknown;
          leaseUntil?: unknown;
          startedAt?: unknown;
        };
        const entry = this.awaiting.get(data.operationID);
        if (entry)
          entry.claim = {
            executorID: String(data.executorID),
            attempt: Number(data.attempt),
            leaseUntil: parseTime(data.leaseUntil),
            leaseText: String(data.leaseUntil),
            startedAt: parseTime(data.startedAt),
          };
        break;
      }
      case 'OperationCompleted':
      case 'OperationFailed':
      case 'OperationRejected':
        this.awaiting.delete((event.data as { operationID: string }).operationID);
        break;
      default:
    }
  }
}

/** At most this long does verify watch claims written by a clock ahead of its own (a lease is 10 s by default). */
export const MAX_CLAIM_WATCH_MS = 60_000;

/**
 * Executed operations whose last claim was written in this process's future (`startedAt` after `now`): the
 * claimer's clock runs ahead, so its `leaseUntil` says nothing this clock can judge (a day ahead, it would
 * "hold" for a day). Such a claim is watched as a peer executor watches one: the operation's stream is read,
 * and read again after the lease's own length (`leaseUntil - startedAt`, both from the claimer's clock; at most
 * `watchMs`) of this process's monotonic clock. Returned: those whose stream did not move, with their reason.
 */
export async function watchClaimsFromTheFuture(
  store: EventStore,
  watch: OutcomeWatch,
  executed: ReadonlyMap<string, LedgerTransaction>,
  now: Date,
  watchMs = MAX_CLAIM_WATCH_MS,
): Promise<Map<string, string>> {
  const suspects = new Map<string, { revision: number; claimedAheadMs: number }>();
  let waitMs = 0;
  for (const [operationID, waiting] of watch.awaiting) {
    const claim = waiting.claim;
    if (
      !executed.has(operationID) ||
      claim?.startedAt == null ||
      claim.leaseUntil === null ||
      claim.startedAt <= now.getTime()
    )
      continue;
    suspects.set(operationID, {
      revision: (await store.readStream(streams.operation(operationID))).length,
      claimedAheadMs: claim.startedAt - now.getTime(),
    });
    waitMs = Math.max(waitMs, Math.min(watchMs, Math.max(0, claim.leaseUntil - claim.startedAt)));
  }
  const stale = new Map<string, string>();
  if (suspects.size === 0) return stale;
  await new Promise((resolve) => setTimeout(resolve, waitMs));
  for (const [operationID, seen] of suspects) {
    if ((await store.readStream(streams.operation(operationID))).length !== seen.revision) continue;
    stale.set(
      operationID,
      'its last claim was written by a clock running ahead of this one (started ' +
        `${formatAge(seen.claimedAheadMs)} in this clock's future), so its lease was watched instead: the ` +
        `operation did not move for ${formatAge(waitMs)}`,
    );
  }
  return stale;
}

/** 15 minutes: an approved operation without an outcome for longer is stuck (`audit verify --max-approved-age`). */
export const DEFAULT_MAX_APPROVED_AGE_MS = 15 * 60_000;

/** "45 seconds", "20 minutes", "3 hours 5 minutes", "2 days 4 hours". */
export function formatAge(ms: number): string {
  const unit = (n: number, name: string) => `${n} ${name}${n === 1 ? '' : 's'}`;
  const seconds = Math.max(0, Math.floor(ms / 1000));
  if (seconds < 120) return unit(seconds, 'second');
  const minutes = Math.floor(seconds / 60);
  if (minutes < 120) return unit(minutes, 'minute');
  const hours = Math.floor(minutes / 60);
  if (hours < 48)
    return minutes % 60 === 0 ? unit(hours, 'hour') : `${unit(hours, 'hour')} ${unit(minutes % 60, 'minute')}`;
  const days = Math.floor(hours / 24);
  return hours % 24 === 0 ? unit(days, 'day') : `${unit(days, 'day')} ${unit(hours % 24, 'hour')}`;
}

/**
 * Every operation approved and without an outcome in the history read, judged at `now`:
 *  - executed on the ledger (a transaction in `executed`): stuck once its last claim's lease has run out, or,
 *    with no claim (or a lease that does not parse), once the transaction is older than `maxApprovedAgeMs`;
 *    until then an execution in flight (added to `inFlight`, not a problem);
 *  - in any case stuck once approved longer than `maxApprovedAgeMs` ago.
 * Each stuck operation is an `outcome` problem naming it, its age and its ledger transaction, and is returned.
 */
export function reportStuckOperations(
  business: BusinessChecker,
  watch: OutcomeWatch,
  executed: ReadonlyMap<string, LedgerTransaction>,
  problems: ProblemLog,
  inFlight: string[],
  options: { now: Date; maxApprovedAgeMs: number; staleClaims?: ReadonlyMap<string, string> },
): StuckOperation[] {
  const now = options.now.getTime();
  const maxAge = options.maxApprovedAgeMs;
  const stuck: StuckOperation[] = [];
  const judge = (operationID: string, tx: LedgerTransaction | undefined) => {
    const op = business.operations.get(operationID);
    if (!op || !IN_FLIGHT.has(op.status)) return;
    const waiting = watch.awaiting.get(operationID);
    const approvedAgo = waiting?.approvedAt != null ? now - waiting.approvedAt : null;
    const claim = waiting?.claim ?? null;
    const reasons: string[] = [];
    let problem = approvedAgo !== null && approvedAgo > maxAge;
    let executedText = '';
    if (tx) {
      const txAt = parseTime(tx.createdAt);
      const txAgo = txAt === null ? null : now - txAt;
      executedText =
        `executed on the ledger as transaction ${tx.sequenceNumber} (blockchainID ` +
        `${tx.blockchainID.slice(0, 16)}…)${txAgo === null ? '' : ` ${formatAge(txAgo)} ago`}`;
      const staleClaim = options.staleClaims?.get(operationID);
      if (claim && staleClaim !== undefined) {
        problem = true;
        reasons.push(`executor ${claim.executorID}, attempt ${claim.attempt}: ${staleClaim}`);
      } else if (claim && claim.leaseUntil !== null) {
        if (now >= claim.leaseUntil) {
          problem = true;
          reasons.push(
            `the lease of its last claim (executor ${claim.executorID}, attempt ${claim.attempt}) ran out ` +
              `${formatAge(now - claim.leaseUntil)} ago`,
          );
        } else if (problem) {
          reasons.push(
            `its last claim (executor ${claim.executorID}, attempt ${claim.attempt}) holds until ${claim.leaseText}`,
          );
        }
      } else {
        if (txAgo !== null && txAgo > maxAge) problem = true;
        reasons.push(
          claim
            ? `its last claim (executor ${claim.executorID}) has an unreadable lease ` +
                `${JSON.stringify(claim.leaseText.slice(0, 40))}`
            : 'no executor ever claimed it',
        );
      }
    } else if (problem) {
      reasons.push(
        claim
          ? `not on the ledger; its last claim (executor ${claim.executorID}, attempt ${claim.attempt}) ` +
              `${
                claim.leaseUntil !== null && now >= claim.leaseUntil
                  ? `ran out ${formatAge(now - claim.leaseUntil)} ago`
                  : `holds until ${claim.leaseText}`
              }`
          : 'not on the ledger; no executor ever claimed it',
      );
    }
    if (!problem) {
      if (tx) inFlight.push(operationID);
      return;
    }
    const ago = approvedAgo === null ? 'approved (time unknown)' : `approved ${formatAge(approvedAgo)} ago`;
    const detail = `operation ${operationID} ${ago}, no outcome (it is ${op.status})${
      executedText ? `, yet ${executedText}` : ''
    }${reasons.length > 0 ? `; ${reasons.join('; ')}` : ''}`;
    problems.add({
      check: 'outcome',
      operationID,
      stream: `operation-${operationID}`,
      ...(waiting ? { position: waiting.approvedPosition } : {}),
      detail,
    });
    stuck.push({
      operationID,
      status: op.status,
      approvedAt: waiting?.approvedAt != null ? new Date(waiting.approvedAt).toISOString() : null,
      approvedMsAgo: approvedAgo,
      lastClaim: claim ? { executorID: claim.executorID, attempt: claim.attempt, leaseUntil: claim.leaseText } : null,
      ledgerTransaction: tx
        ? { sequenceNumber: tx.sequenceNumber, blockchainID: tx.blockchainID, createdAt: tx.createdAt }
        : null,
      detail,
    });
  };
  for (const [operationID, tx] of executed) judge(operationID, tx);
  for (const operationID of watch.awaiting.keys()) if (!executed.has(operationID)) judge(operationID, undefined);
  return stuck;
}

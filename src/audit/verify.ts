import type { EventStore } from '../ports/event-store.ts';
import { type Ledger } from '../ports/ledger.ts';
import { fromUnits } from './amounts.ts';
import { type HistorySealedData, type RecordedSeal, SEALS_STREAM, SealChecker, findSealedEvent } from './seals.ts';
import {
  ProblemLog,
  SUPPLY_DEFINITION,
  type AuditCheck,
  type AuditProblem,
  type AuditReport,
  type FailedButMoved,
  type StuckOperation,
} from './verify-report.ts';
import { describeFailedButMoved } from './failed-but-moved.ts';
import { ChainChecker } from './verify-chains.ts';
import { BusinessChecker } from './verify-business.ts';
import { readHistoryPage, SnapshotChecker } from './verify-snapshots.ts';
import {
  DEFAULT_MAX_APPROVED_AGE_MS,
  formatAge,
  OutcomeWatch,
  reconcileLedger,
  reportStuckOperations,
  watchClaimsFromTheFuture,
  type LedgerChainID,
} from './verify-ledger.ts';
import type { LedgerTransaction } from '../ports/ledger.ts';

import { CompletenessChecker, type ExpectedHistory } from './verify-completeness.ts';
export type { AuditCheck, AuditProblem, AuditReport, FailedButMoved, LedgerChainID, StuckOperation };
export { ChainChecker, DEFAULT_MAX_APPROVED_AGE_MS, formatAge };

/**
 * `audit verify`: one pass over the whole history in position order (readAll pages), then one over the ledger.
 * Memory holds what is per stream, wallet, user and key; the events only a page at a time. Each problem names its
 * `check`; docs/architecture.md, "Audit", lists what each check proves.
 */
export interface VerifyOptions {
  eventStore: EventStore;
  /** The ledger to reconcile with; null skips the ledger checks (the report says so, with `ledgerSkipped`). */
  ledger: Ledger | null;
  /** Which ledger it is, for the report (e.g. "configured", "embedded"). */
  ledgerName?: string;
  /** Why there is no ledger, for the report. */
  ledgerSkipped?: string;
  /**
   * How the ledger chains its transactions (the embedded ledger's chainID); without it the ledger's own chain
   * is not checked. Given by the caller: the chain is the ledger's, and src/audit depends on ports only.
   */
  ledgerChainID?: LedgerChainID;
  assetScale: number;
  pageSize?: number;
  maxProblems?: number;
  /**
   * How long an approved operation may go without an outcome before it is a problem, and how old a ledger
   * transaction whose operation was never claimed may be; default DEFAULT_MAX_APPROVED_AGE_MS (15 minutes).
   */
  maxApprovedAgeMs?: number;
  /**
   * At most how long to watch executed operations whose last claim a clock ahead of this one wrote (their lease's
   * own length, else this; default MAX_CLAIM_WATCH_MS): unchanged for it, they are stuck.
   */
  claimWatchMs?: number;
  /** "Now", for the ages of operations without an outcome; default the wall clock. */
  clock?: () => Date;
  onProgress?: (position: number, head: number) => void;
  /**
   * What the history must hold (an export's end marker, an import's record): without it a history cut short
   * verifies, each of its chains and seals being whole. Problems are of check `completeness`.
   */
  expected?: ExpectedHistory;
}

// ---- the run -------------------------------------------------------------------------------------------------

/**
 * Seals are delimited by position when the store numbers events as the sealer saw them (the sealed last event,
 * found by stream and revision, is at the sealed position), else by event id: a history copied or imported
 * into another store keeps streams, revisions and ids, not positions.
 */
async function sealMode(store: EventStore): Promise<'positions' | 'ids'> {
  const first = await store.readStream(SEALS_STREAM, { maxCount: 3 });
  if (first.length === 0) return 'positions';
  for (const seal of first) {
    const data = seal.data as HistorySealedData;
    const event = await findSealedEvent(store, data);
    if (event && event.position === data.toPosition) return 'positions';
  }
  return 'ids';
}

/** The seals of the history up to `head` (seals appended since cover events beyond it), a page at a time. */
export function sealLoader(
  store: EventStore,
  head = Number.MAX_SAFE_INTEGER,
  pageSize = 200,
): () => Promise<RecordedSeal[]> {
  let next = 0;
  let done = false;
  return async () => {
    if (done) return [];
    const page = await store.readStream(SEALS_STREAM, { fromRevision: next, maxCount: pageSize });
    next += page.length;
    const within = page.filter((event) => event.position <= head);
    if (within.length < page.length) done = true;
    return within.map((event) => ({
      data: event.data as HistorySealedData,
      revision: event.revision,
      position: event.position,
    }));
  };
}

export async function verifyHistory(options: VerifyOptions): Promise<AuditReport> {
  const started = performance.now();
  const { eventStore: store } = options;
  const pageSize = options.pageSize ?? 1000;
  const problems = new ProblemLog(options.maxProblems ?? 1000);
  const chains = new ChainChecker(problems);
  const business = new BusinessChecker(problems, options.assetScale);
  const watch = new OutcomeWatch();
  const head = await store.headPosition();
  const seals = new SealChecker(await sealMode(store), sealLoader(store, head), (problem) => problems.add(problem));
  const snapshots = new SnapshotChecker(problems, options.assetScale);
  await snapshots.prepare(store, head, pageSize);
  const completeness = options.expected ? new CompletenessChecker(options.expected, problems) : undefined;
  let events = 0;
  let from = 0;
  while (from <= head) {
    const page = await readHistoryPage(store, from, head, pageSize);
    if (page.length === 0) break;
    await seals.prepare(page.length, page[page.length - 1]!.position);
    for (const event of page) {
      const hash = chains.check(event);
      seals.feed(event, hash);
      business.feed(event);
      snapshots.feed(event);
      watch.feed(event);
      completeness?.feed(event);
    }
    events += page.length;
    from = page[page.length - 1]!.position + 1;
    options.onProgress?.(from - 1, head);
  }
  await seals.finish();
  business.finish();
  snapshots.finish();
  completeness?.finish();
  const inFlight: string[] = [];
  const executed = new Map<string, LedgerTransaction>();
  const failedButMoved: Array<{ operationID: string; tx: LedgerTransaction }> = [];
  const ledgerTransactions = options.ledger
    ? await reconcileLedger(
        options.ledger,
        business,
        problems,
        1000,
        { store, head, inFlight, executed, failedButMoved },
        options.ledgerChainID,
      )
    : 0;
  const now = (options.clock ?? (() => new Date()))();
  const maxApprovedAgeMs = options.maxApprovedAgeMs ?? DEFAULT_MAX_APPROVED_AGE_MS;
  const staleClaims = await watchClaimsFromTheFuture(store, watch, executed, now, options.claimWatchMs);
  const stuck = reportStuckOperations(business, watch, executed, problems, inFlight, {
    now,
    maxApprovedAgeMs,
    staleClaims,
  });
  const seconds = (performance.now() - started) / 1000;
  const scale = options.assetScale;
  return {
    ok: problems.count === 0,
    checked: {
      events,
      streams: chains.streams,
      operations: business.operations.size,
      wallets: business.balances.size,
      ledgerTransactions,
      users: business.users.size,
      apiKeys: business.keys.size,
      seals: seals.checked,
      sealedEvents: seals.sealedEvents,
      unsealedEvents: seals.unsealedEvents,
      unhashedEvents: chains.unhashed,
      headPosition: head,
      snapshots: snapshots.checked,
    },
    supply: {
      definition: SUPPLY_DEFINITION,
      issued: fromUnits(business.issued, scale),
      redeemed: fromUnits(business.redeemed, scale),
      supply: fromUnits(business.supply, scale),
    },
    ledger: options.ledger
      ? { reconciled: true, ledger: options.ledgerName ?? 'given' }
      : { reconciled: false, reason: options.ledgerSkipped ?? 'no ledger was given' },
    firstBrokenPosition: problems.firstBroken,
    inFlight: inFlight.slice(0, 100),
    stuck: stuck.slice(0, 1000),
    failedButMoved: await describeFailedButMoved(store, business, failedButMoved.slice(0, 1000)),
    asOf: now.toISOString(),
    maxApprovedAgeMs,
    problems: problems.list,
    problemCount: problems.count,
    seconds: Math.round(seconds * 1000) / 1000,
    eventsPerSecond: seconds > 0 ? Math.round(events / seconds) : events,
  };
}

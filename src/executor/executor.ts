import type { EventStore, RecordedEvent } from '../ports/event-store.ts';
import type { Ledger } from '../ports/ledger.ts';
import type { Tracing } from '../ports/tracing.ts';
import type { ReadStore } from '../ports/read-store.ts';
import type { OperationApproved } from '../domain/events.ts';
import type { Logger } from '../logger.ts';
import {
  FailureStreak,
  Follower,
  periodic,
  retryCommits,
  sharedCheckpoint,
  type Supervision,
} from '../shared/follower.ts';
import { oldestUnsettledOperations } from '../projections/unsettled-operations-queries.ts';
import { Carrier } from './carrier.ts';
import { UnchangedWatch } from '../shared/unchanged-watch.ts';
import { runPass, type ExecutorObserver } from './pass.ts';

export type { ExecutorObserver } from './pass.ts';

export interface ExecutorOptions {
  eventStore: EventStore;
  /** Holds the executors' shared checkpoint and the unsettled-operations read model the sweep reads. */
  readStore: ReadStore;
  ledger: Ledger;
  executorID: string;
  /** How long a claim protects an operation from other executors. */
  leaseMs: number;
  maxAttempts: number;
  /** Backoff between attempts after a transient error: base * 2^(attempt-1), capped. */
  retryBaseMs: number;
  retryMaxMs: number;
  /** Passes of the workflow running at once (operations waiting out a lease or a backoff do not count). */
  concurrency: number;
  /** How often the reconciliation sweep looks for approved operations no executor carries out. */
  sweepIntervalMs: number;
  assetScale: number;
  clock: () => Date;
  logger: Logger;
  supervision?: Supervision;
  /** Told of claims and recorded outcomes (the metrics); nothing when absent. */
  observer?: ExecutorObserver;
  /** Tracing (src/ports/tracing.ts); none: off. */
  tracing?: Tracing;
}

/** Every approval before this position has been settled (completed, failed), whichever executor did it. */
export const EXECUTOR_CHECKPOINT = 'executor';

/**
 * At most this many operations carried at once (running, waiting for a slot, waiting out another executor's
 * lease or a backoff): beyond it the executor reads no more approvals until one settles. Generous on purpose:
 * a waiting operation costs a timer and a few hundred bytes, while a tight bound would let operations that
 * wait out other executors' leases (two executors share every approval) starve this one of work.
 */
const MAX_CARRIED = 10_000;

/** The executor's runner (createExecutor), with what its metrics and tests ask of it. */
export type Executor = Follower & {
  /** Operations this executor carries and that are not settled yet. */
  assigned(): number;
  sweep(): Promise<number>;
};

/**
 * The executor's runner: a follower of approvals from the shared checkpoint that hands each operation to the
 * carrier, which runs the workflow (workflow.ts decides, pass.ts does the I/O) until it is settled. Each
 * approval settles later: the checkpoint passes it only once its operation is settled, contiguously. Several
 * executors may run at once: claims make them competing consumers.
 *
 * It never abandons an operation: any error is retried with backoff, and every retry after a claim counts as
 * an attempt, so that an operation that keeps failing ends as OperationFailed naming the cause after
 * maxAttempts, releasing its hold. A periodic sweep over the unsettled-operations read model carries out
 * approvals the subscription never brought (a lost checkpoint, a dead executor whose lease ran out, an
 * approval appended while every executor was down). At stop, the passes under way end first; then the follower
 * commits what is settled (what is not stays for the next start).
 */
export function createExecutor(options: ExecutorOptions): Executor {
  const { eventStore, readStore, ledger, executorID, maxAttempts, leaseMs, assetScale, clock, logger } = options;
  const retry = { firstMs: options.retryBaseMs, maxMs: options.retryMaxMs };
  const passDeps = {
    pipeline: { store: eventStore },
    ledger,
    settings: { executorID, maxAttempts },
    leaseMs,
    assetScale,
    retry,
    clock,
    watch: new UnchangedWatch(),
    logger,
    ...(options.observer ? { observer: options.observer } : {}),
    ...(options.tracing ? { tracing: options.tracing } : {}),
  };
  const carrier = new Carrier({
    concurrency: options.concurrency,
    pass: (operationID, lastError, signal) => runPass(passDeps, operationID, lastError, signal),
    errorBackoff: retry,
    clock,
    logger,
  });
  let stopped = false;
  const sweep = sweeper({ readStore, carrier, leaseMs, logger, stopped: () => stopped });
  const streak = new FailureStreak(logger, {
    failed: 'executor sweep failed; retrying at the next one',
    recovered: 'executor sweep works again',
  });
  const follower = new Follower({
    name: 'executor',
    eventStore,
    filter: { eventTypes: ['OperationApproved'] },
    checkpoint: sharedCheckpoint(readStore, EXECUTOR_CHECKPOINT),
    // Executing needs the event store and the ledger only: a read store that is down holds back the checkpoint, not
    // the work.
    settling: retryCommits({ maxUnsettled: MAX_CARRIED }),
    handle: async (batch, context) => {
      for (const event of batch) context.settleLater(event.position, carrier.carry(operationOf(event)));
    },
    beside: [
      periodic(options.sweepIntervalMs, sweep, streak),
      {
        stop: () => {
          stopped = true;
          return carrier.stop();
        },
      },
    ],
    logger,
    ...(options.supervision ? { supervision: options.supervision } : {}),
  });
  return Object.assign(follower, { assigned: () => carrier.size, sweep });
}

/**
 * The reconciliation sweep: approved operations without an outcome, from the read model, that this executor
 * does not carry and whose approval is older than a lease, are carried like any approval (a pass reads the
 * operation's stream, so one settled meanwhile, or claimed by a live executor, is handled as usual).
 */
function sweeper(deps: {
  readStore: ReadStore;
  carrier: Carrier;
  leaseMs: number;
  logger: Logger;
  stopped: () => boolean;
}): () => Promise<number> {
  const { readStore, carrier, leaseMs, logger } = deps;
  /** How long this process has seen each unsettled approval, on its monotonic clock (approvedAt is another host's). */
  const watch = new UnchangedWatch();
  let sweeping = false;
  return async () => {
    if (sweeping || deps.stopped()) return 0;
    sweeping = true;
    try {
      const unsettled = await oldestUnsettledOperations(readStore, 1000);
      // Older than a lease by this process's own monotonic clock, since it first saw the approval unsettled:
      // approvedAt is the approving process's wall clock, which may run a day ahead of ours (or behind).
      const listed = new Set(unsettled.map((doc) => doc.id));
      for (const id of watch.keys()) if (!listed.has(id)) watch.forget(id);
      const found = unsettled.filter(
        (doc) => watch.unchangedForMs(doc.id, doc.approvalPosition) >= leaseMs && !carrier.has(doc.id),
      );
      // Settling is not awaited here: an approval the follower brings as well waits on the same operation. carry
      // never rejects: a pass's failure is retried inside it.
      for (const doc of found) void carrier.carry(doc.id);
      if (found.length > 0)
        logger.info(
          { operations: found.length },
          'sweep: executing approved operations that no executor of this process held',
        );
      return found.length;
    } finally {
      sweeping = false;
    }
  };
}

const operationOf = (event: RecordedEvent) => (event as unknown as OperationApproved).data.operationID;

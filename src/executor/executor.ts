import type { EventStore, RecordedEvent } from '../ports/event-store.ts';
import type { Ledger } from '../ports/ledger.ts';
import type { Tracing } from '../ports/tracing.ts';
import type { ReadStore } from '../ports/read-store.ts';
import type { OperationApproved } from '../domain/events.ts';
import type { Logger } from '../logger.ts';
import { Follower, sharedCheckpoint, type SupervisedConsumer, type Supervision } from '../shared/follower.ts';
import { UNSETTLED_OPERATIONS_COLLECTION, type UnsettledOperationDoc } from '../projections/unsettled-operations.ts';
import { Carrier } from './carrier.ts';
import { UnchangedWatch } from '../shared/unchanged-watch.ts';
import { FailureStreak } from './failure-streak.ts';
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
 * approval appended while every executor was down).
 */
export class Executor {
  private readonly options: ExecutorOptions;
  private readonly follower: Follower;
  private readonly carrier: Carrier;
  private readonly sweeps: FailureStreak;
  private sweepTimer: NodeJS.Timeout | undefined;
  private sweeping = false;
  private stopped = false;
  /** How long this process has seen each unsettled approval, on its monotonic clock (approvedAt is another host's). */
  private readonly sweepWatch = new UnchangedWatch();

  constructor(options: ExecutorOptions) {
    this.options = options;
    const {
      eventStore,
      readStore,
      ledger,
      executorID,
      maxAttempts,
      leaseMs,
      assetScale,
      clock,
      logger,
      observer,
      tracing,
    } = options;
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
      ...(observer ? { observer } : {}),
      ...(tracing ? { tracing } : {}),
    };
    this.carrier = new Carrier({
      concurrency: options.concurrency,
      pass: (operationID, lastError, signal) => runPass(passDeps, operationID, lastError, signal),
      errorBackoff: retry,
      clock,
      logger,
    });
    this.follower = new Follower({
      name: 'executor',
      eventStore,
      filter: { eventTypes: ['OperationApproved'] },
      checkpoint: sharedCheckpoint(readStore, EXECUTOR_CHECKPOINT),
      maxUnsettled: MAX_CARRIED,
      // Executing needs the event store and the ledger only: a read store that is down holds back the checkpoint, not
      // the work.
      checkpointBestEffort: true,
      handle: async (batch, context) => {
        for (const event of batch) context.settleLater(event.position, this.carrier.carry(operationOf(event)));
      },
      logger,
      ...(options.supervision ? { supervision: options.supervision } : {}),
    });
    this.sweeps = new FailureStreak(
      logger,
      'executor sweep failed; retrying at the next one',
      'executor sweep works again',
    );
  }

  get consumer(): SupervisedConsumer {
    return this.follower.consumer;
  }

  /** Operations this executor carries and that are not settled yet. */
  get assigned(): number {
    return this.carrier.size;
  }

  start(): void {
    this.follower.start();
    // The sweep never lets a rejection escape: a failure is logged once per streak, and the next tick tries again.
    this.sweepTimer = setInterval(() => void this.sweeps.track(this.sweep()), this.options.sweepIntervalMs);
  }

  /** Passes under way end first; then the follower commits what is settled (what is not stays for the next start). */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.sweepTimer);
    await this.carrier.stop();
    await this.follower.stop();
  }

  /**
   * The reconciliation sweep: approved operations without an outcome, from the read model, that this executor
   * does not carry and whose approval is older than a lease, are carried like any approval (a pass reads the
   * operation's stream, so one settled meanwhile, or claimed by a live executor, is handled as usual).
   */
  async sweep(): Promise<number> {
    if (this.sweeping || this.stopped) return 0;
    this.sweeping = true;
    try {
      const unsettled = await this.options.readStore.find<UnsettledOperationDoc>(UNSETTLED_OPERATIONS_COLLECTION.name, {
        sort: [['approvalPosition', 'asc']],
        limit: 1000,
      });
      // Older than a lease by this process's own monotonic clock, since it first saw the approval unsettled:
      // approvedAt is the approving process's wall clock, which may run a day ahead of ours (or behind).
      const listed = new Set(unsettled.map((doc) => doc.id));
      for (const id of this.sweepWatch.keys()) if (!listed.has(id)) this.sweepWatch.forget(id);
      const found = unsettled.filter(
        (doc) =>
          this.sweepWatch.unchangedForMs(doc.id, doc.approvalPosition) >= this.options.leaseMs &&
          !this.carrier.has(doc.id),
      );
      // Settling is not awaited here: an approval the follower brings as well waits on the same operation. carry
      // never rejects: a pass's failure is retried inside it.
      for (const doc of found) void this.carrier.carry(doc.id);
      if (found.length > 0)
        this.options.logger.info(
          { operations: found.length },
          'sweep: executing approved operations that no executor of this process held',
        );
      return found.length;
    } finally {
      this.sweeping = false;
    }
  }
}

const operationOf = (event: RecordedEvent) => (event as unknown as OperationApproved).data.operationID;

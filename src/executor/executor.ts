import type { EventStore } from '../ports/event-store.ts';
import { WrongExpectedVersionError } from '../ports/event-store.ts';
import { LedgerDuplicateError, LedgerRejectedError, type Ledger, type LedgerTransaction } from '../ports/ledger.ts';
import type { ReadStore } from '../ports/read-store.ts';
import { advanceSharedCheckpoint } from './shared-checkpoint.ts';
import type { OperationApproved, OperationRequested } from '../domain/events.ts';
import { streams } from '../domain/streams.ts';
import { operationState } from '../commands/operations.ts';
import { loadState, runDecision, type CommandPipelineDeps } from '../commands/pipeline.ts';
import type { Logger } from '../logger.ts';
import { FailureStreak } from './failure-streak.ts';
import { backoffMs } from '../shared/backoff.ts';
import { describeError, SupervisedConsumer, type SessionContext, type SupervisedConsumerOptions } from '../shared/supervised-consumer.ts';
import { UNSETTLED_OPERATIONS_COLLECTION, type UnsettledOperationDoc } from '../projections/unsettled-operations.ts';
import { claimEvent, completionWrites, failureWrites, legsOf, nextStep, type WorkflowSettings } from './workflow.ts';

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
  /** Operations executed at once. */
  concurrency: number;
  /** How often the reconciliation sweep looks for approved operations no executor carries out. */
  sweepIntervalMs: number;
  assetScale: number;
  clock: () => Date;
  logger: Logger;
  supervision?: Pick<SupervisedConsumerOptions, 'baseDelayMs' | 'maxDelayMs' | 'stableAfterMs'>;
  /** Told of claims and recorded outcomes (the metrics); nothing when absent. */
  observer?: ExecutorObserver;
}

/** What the executor tells its observer: each claim it wins, and each outcome it records. */
export interface ExecutorObserver {
  /** A claim appended: attempt 1 for a first claim, more for a retry, a recovery or a takeover. */
  claimed(attempt: number): void;
  completed(): void;
  /** `rejected`: the ledger refused the transaction; `gave_up`: out of attempts, and the ledger has none. */
  failed(reason: 'rejected' | 'gave_up'): void;
}

/** Appends of an outcome retried when only a wallet stream (written at `any`) conflicted. */
const WALLET_CONFLICT_RETRIES = 50;
/** The short pause before such a retry: 20 ms at first, at most 1 s (the longest pause of the former linear schedule). */
const WALLET_CONFLICT_PAUSE = { firstMs: 20, maxMs: 1_000 };

/** Every approval before this position has been settled (completed, failed), whichever executor did it. */
export const EXECUTOR_CHECKPOINT = 'executor';

/** An operation this executor is responsible for until it is settled: running, or waiting to run again. */
interface Assignment {
  /** The position of its approval: the checkpoint may not pass it while the operation is here. */
  position: number;
  timer: NodeJS.Timeout | undefined;
  running: boolean;
  /** Consecutive unexpected errors, for the backoff. */
  errors: number;
}

/**
 * The executor's runner: a supervised consumer that follows approvals from the shared checkpoint, carries each
 * operation through the workflow (claim, ask the ledger, submit, record the outcome), and advances the
 * checkpoint over what is settled. Several executors may run at once: claims make them competing consumers.
 *
 * It never abandons an operation: an operation stays assigned until it is completed or failed (or seen to be
 * another executor's live claim, then looked at again when the lease runs out); any error while executing it
 * is retried with backoff, and every retry after a claim counts as an attempt, so that an operation that keeps
 * failing ends as OperationFailed naming the cause after maxAttempts, releasing its hold. A periodic sweep over
 * the unsettled-operations read model picks up approvals the subscription never brought (a lost checkpoint,
 * a dead executor whose lease ran out, an approval appended while every executor was down).
 */
export class Executor {
  private stopped = false;
  private readonly assignments = new Map<string, Assignment>();
  private running = 0;
  private readonly slotWaiters: Array<() => void> = [];
  /** Every approval at or below this position has been assigned (or was settled when seen). */
  private lastSeen = 0;
  private started = false;
  /** The cause of the last failure per operation, for the lastError of an operation that runs out of attempts. */
  private readonly lastErrors = new Map<string, string>();
  private readonly sleepers = new Set<() => void>();
  private timers: NodeJS.Timeout[] = [];
  private saving = false;
  private sweeping = false;
  private readonly settings: WorkflowSettings;
  private readonly pipeline: CommandPipelineDeps;
  readonly consumer: SupervisedConsumer;
  private readonly checkpointing: FailureStreak;
  private readonly sweeps: FailureStreak;

  constructor(private readonly options: ExecutorOptions) {
    this.checkpointing = new FailureStreak(options.logger, 'executor checkpoint not saved; retrying every 200 ms', 'executor checkpoint saved again');
    this.sweeps = new FailureStreak(options.logger, 'executor sweep failed; retrying at the next one', 'executor sweep works again');
    this.settings = { executorID: options.executorID, maxAttempts: options.maxAttempts };
    this.pipeline = { store: options.eventStore };
    this.consumer = new SupervisedConsumer({ name: 'executor', logger: options.logger, ...options.supervision, session: (context) => this.session(context) });
  }

  start(): void {
    this.consumer.start();
    // Background timers never let a rejection escape: each failure is logged and the next tick tries again.
    this.timers = [
      setInterval(() => void this.checkpointing.track(this.saveCheckpoint()), 200),
      setInterval(() => void this.sweeps.track(this.sweep()), this.options.sweepIntervalMs),
    ];
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.timers.forEach(clearInterval);
    await this.consumer.stop();
    for (const assignment of this.assignments.values()) clearTimeout(assignment.timer);
    for (const wake of this.sleepers) wake();
    this.slotWaiters.splice(0).forEach((wake) => wake());
    while (this.running > 0) await this.sleep(5, true);
    await this.saveCheckpoint().catch((error: unknown) => this.options.logger.warn({ err: error }, 'executor checkpoint not saved at stop'));
  }

  /** Operations assigned to this executor and not yet settled. */
  get assigned(): number {
    return this.assignments.size;
  }

  /** The checkpoint this executor can vouch for: every approval at or below it is settled. */
  get safePosition(): number {
    let safe = this.lastSeen;
    for (const { position } of this.assignments.values()) safe = Math.min(safe, position - 1);
    return safe;
  }

  private async session(context: SessionContext): Promise<void> {
    const { eventStore, readStore } = this.options;
    // The first session starts from the shared checkpoint; a resubscription from what this process has seen.
    if (!this.started) {
      this.lastSeen = (await readStore.getCheckpoint(EXECUTOR_CHECKPOINT)) ?? 0;
      this.started = true;
    }
    context.progress(this.safePosition);
    const subscription = context.own(eventStore.subscribeToAll({ from: this.lastSeen, filter: { eventTypes: ['OperationApproved'] } }));
    for await (const event of subscription) {
      await this.acquireSlot();
      if (this.stopped) {
        this.releaseSlot();
        return;
      }
      this.lastSeen = event.position;
      this.assign((event as unknown as OperationApproved).data.operationID, event.position, true);
      context.progress(this.safePosition);
    }
  }

  /** Takes responsibility for an operation until it is settled. `holdingSlot`: the caller acquired a slot for it. */
  private assign(operationID: string, position: number, holdingSlot = false): void {
    if (this.assignments.has(operationID)) {
      if (holdingSlot) this.releaseSlot();
      return;
    }
    const assignment: Assignment = { position, timer: undefined, running: false, errors: 0 };
    this.assignments.set(operationID, assignment);
    void this.attempt(operationID, assignment, holdingSlot);
  }

  private later(operationID: string, assignment: Assignment, delayMs: number): void {
    if (this.stopped) return;
    assignment.timer = setTimeout(() => {
      assignment.timer = undefined;
      void this.attempt(operationID, assignment, false);
    }, Math.max(0, delayMs));
  }

  /** One pass of the workflow on an operation; never rejects: an error schedules the next pass. */
  private async attempt(operationID: string, assignment: Assignment, holdingSlot: boolean): Promise<void> {
    if (!holdingSlot) await this.acquireSlot();
    if (this.stopped) return this.releaseSlot();
    assignment.running = true;
    try {
      const outcome = await this.execute(operationID);
      if (outcome?.deferUntil !== undefined) {
        // Another executor holds a live claim: look again when it runs out, outside the concurrency slots.
        this.later(operationID, assignment, outcome.deferUntil - this.options.clock().getTime() + 10);
      } else if (!this.stopped) {
        this.assignments.delete(operationID);
        this.lastErrors.delete(operationID);
      }
    } catch (error) {
      assignment.errors += 1;
      const cause = describeError(error);
      this.lastErrors.set(operationID, cause);
      const delay = this.backoff(assignment.errors);
      this.options.logger.warn({ err: error, operationID, errors: assignment.errors, retryInMs: Math.round(delay) }, 'operation execution failed; retrying');
      this.later(operationID, assignment, delay);
    } finally {
      assignment.running = false;
      this.releaseSlot();
    }
  }

  /**
   * The reconciliation sweep: approved operations without an outcome, from the read model, that this
   * executor does not hold and whose approval is older than a lease, are assigned (execute() reads the
   * operation's stream, so one settled meanwhile, or claimed by a live executor, is handled as usual).
   */
  async sweep(): Promise<number> {
    if (this.sweeping || this.stopped) return 0;
    this.sweeping = true;
    try {
      const cutoff = this.options.clock().getTime() - this.options.leaseMs;
      const unsettled = await this.options.readStore.find<UnsettledOperationDoc>(UNSETTLED_OPERATIONS_COLLECTION.name, { sort: [['approvalPosition', 'asc']], limit: 1000 });
      let found = 0;
      for (const doc of unsettled) {
        if (this.stopped || this.assignments.has(doc.id) || Date.parse(doc.approvedAt) > cutoff) continue;
        found += 1;
        this.assign(doc.id, doc.approvalPosition);
      }
      if (found > 0) this.options.logger.info({ operations: found }, 'sweep: executing approved operations that no executor of this process held');
      return found;
    } finally {
      this.sweeping = false;
    }
  }

  /** The checkpoint may pass an approval only once its operation is settled: up to the oldest one assigned. */
  private async saveCheckpoint(): Promise<void> {
    if (this.saving || !this.started) return;
    this.saving = true;
    try {
      await advanceSharedCheckpoint(this.options.readStore, EXECUTOR_CHECKPOINT, this.safePosition);
    } finally {
      this.saving = false;
    }
  }

  private backoff(attempt: number): number {
    return backoffMs(attempt, { firstMs: this.options.retryBaseMs, maxMs: this.options.retryMaxMs });
  }

  private acquireSlot(): Promise<void> {
    if (this.running < this.options.concurrency || this.stopped) {
      this.running += 1;
      return Promise.resolve();
    }
    return new Promise((resolve) =>
      this.slotWaiters.push(() => {
        this.running += 1;
        resolve();
      }),
    );
  }

  private releaseSlot(): void {
    this.running -= 1;
    const next = this.slotWaiters.shift();
    next?.();
  }

  /** A wait that stop() cuts short. */
  private sleep(ms: number, evenWhenStopped = false): Promise<void> {
    if (this.stopped && !evenWhenStopped) return Promise.resolve();
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        this.sleepers.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      this.sleepers.add(wake);
    });
  }

  /** Carries one operation through the workflow until it is settled, or says when to look again (another executor has it). */
  async execute(operationID: string): Promise<{ deferUntil: number } | undefined> {
    const { ledger, clock, leaseMs, assetScale } = this.options;
    const stream = streams.operation(operationID);
    for (;;) {
      if (this.stopped) return undefined;
      const { state, revision } = await loadState(this.pipeline, stream, operationState);
      const now = clock();
      const step = nextStep(state, this.settings, now.toISOString());
      if (step.kind === 'ignore' || state.status === 'none') return undefined;
      if (step.kind === 'wait') return { deferUntil: Date.parse(step.until) };
      const operation = state.operation;
      if (step.kind === 'give-up') {
        // Out of attempts: the ledger decides. Its transaction, if any, completes the operation; else it fails
        // with the cause of the last failure, and its hold is released.
        const found = await ledger.findByOperationID(operationID);
        const cause = this.lastErrors.get(operationID) ?? 'the ledger stayed unavailable';
        const writes = found
          ? completionWrites(operation, found, revision, now.toISOString(), assetScale)
          : failureWrites(operation, `gave up after ${step.attempt - 1} attempts: ${cause}`, revision, now.toISOString(), assetScale);
        if (await this.record(writes)) {
          if (found) this.options.observer?.completed();
          else this.options.observer?.failed('gave_up');
          return undefined;
        }
        continue; // someone else moved the operation meanwhile: look again
      }

      // The claim: appended at the revision just read, so of two executors only one gets here.
      try {
        await this.options.eventStore.append(stream, [{ ...claimEvent(operationID, this.settings.executorID, step.attempt, now, leaseMs), metadata: this.metadata(operationID) }], revision);
      } catch (error) {
        if (error instanceof WrongExpectedVersionError) continue;
        throw error;
      }
      this.options.observer?.claimed(step.attempt);
      const claimRevision = revision + 1;
      const outcome = await this.submit(operation, step.kind === 'recover');
      const at = clock().toISOString();
      if (outcome.kind === 'transient') {
        this.lastErrors.set(operationID, describeError(outcome.error));
        this.options.logger.warn({ operationID, attempt: step.attempt, err: outcome.error }, 'ledger unavailable; retrying');
        await this.sleep(this.backoff(step.attempt));
        continue;
      }
      const writes = outcome.kind === 'executed'
        ? completionWrites(operation, outcome.tx, claimRevision, at, assetScale)
        : failureWrites(operation, outcome.reason, claimRevision, at, assetScale);
      // A conflict means another executor took over meanwhile: look again; the ledger keeps it exactly-once.
      if (await this.record(writes)) {
        if (outcome.kind === 'executed') this.options.observer?.completed();
        else this.options.observer?.failed('rejected');
        return undefined;
      }
    }
  }

  private async submit(operation: OperationRequested['data'], recovering: boolean): Promise<
    { kind: 'executed'; tx: LedgerTransaction } | { kind: 'rejected'; reason: string } | { kind: 'transient'; error: unknown }
  > {
    const { ledger } = this.options;
    try {
      if (recovering) {
        const found = await ledger.findByOperationID(operation.operationID);
        if (found) return { kind: 'executed', tx: found };
      }
      return { kind: 'executed', tx: await ledger.submit({ operationID: operation.operationID, legs: legsOf(operation) }) };
    } catch (error) {
      if (error instanceof LedgerDuplicateError) return { kind: 'executed', tx: error.existing };
      if (error instanceof LedgerRejectedError) return { kind: 'rejected', reason: error.message };
      return { kind: 'transient', error };
    }
  }

  /**
   * Appends an outcome. False when the operation's stream moved (another executor took over: look again).
   * A conflict on a wallet stream is not that: wallets are written at `any`, and only a burst of other writers
   * on the same wallet (e.g. the issuance account, from several executors) exhausts the store's own retries;
   * the outcome is then appended again after a short random pause, under the same claim.
   */
  private async record(writes: ReturnType<typeof completionWrites>): Promise<boolean> {
    const operationStream = writes[0]!.stream;
    const operationID = operationStream.slice('operation-'.length);
    for (let attempt = 1; ; attempt++) {
      try {
        await runDecision(this.pipeline, { read: {}, decide: () => ({ writes, result: true }), context: this.metadata(operationID), maxAttempts: 1, finalConflict: (conflict) => conflict });
        return true;
      } catch (error) {
        if (!(error instanceof WrongExpectedVersionError)) throw error;
        if (error.stream === operationStream) return false;
        if (attempt >= WALLET_CONFLICT_RETRIES || this.stopped) throw error;
        await this.sleep(backoffMs(attempt, WALLET_CONFLICT_PAUSE));
      }
    }
  }

  private metadata(operationID: string) {
    return { actor: `system:executor:${this.settings.executorID}`, correlationId: operationID };
  }
}

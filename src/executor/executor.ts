import type { EventStore, RecordedEvent } from '../ports/event-store.ts';
import { WrongExpectedVersionError } from '../ports/event-store.ts';
import { LedgerDuplicateError, LedgerRejectedError, type Ledger, type LedgerTransaction } from '../ports/ledger.ts';
import { CheckpointConflictError, type ReadStore } from '../ports/read-store.ts';
import type { OperationApproved, OperationRequested } from '../domain/events.ts';
import { streams } from '../domain/streams.ts';
import { operationState } from '../commands/operations.ts';
import { loadState, runDecision, type CommandPipelineDeps } from '../commands/pipeline.ts';
import type { Logger } from '../logger.ts';
import { claimEvent, completionWrites, failureWrites, legsOf, nextStep, type WorkflowSettings } from './workflow.ts';

export interface ExecutorOptions {
  eventStore: EventStore;
  /** Holds the executors' shared checkpoint. */
  readStore: ReadStore;
  ledger: Ledger;
  executorID: string;
  /** How long a claim protects an operation from other executors. */
  leaseMs: number;
  maxAttempts: number;
  /** Backoff between attempts after a transient ledger error: base * 2^(attempt-1), capped. */
  retryBaseMs: number;
  retryMaxMs: number;
  /** Operations executed at once. */
  concurrency: number;
  assetScale: number;
  clock: () => Date;
  logger: Logger;
}

/** Every approval before this position has been settled (completed, failed), whichever executor did it. */
export const EXECUTOR_CHECKPOINT = 'executor';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The executor's runner: follows approvals from the shared checkpoint, carries each operation through the
 * workflow (claim, ask the ledger, submit, record the outcome), and advances the checkpoint over what is
 * settled. Several executors may run at once: claims make them competing consumers.
 */
export class Executor {
  private stopped = false;
  private subscription: { stop(): Promise<void> } | undefined;
  private done: Promise<void> | undefined;
  private readonly inFlight = new Map<number, Promise<void>>();
  /** Operations another executor holds a live claim on: looked at again when the claim runs out, outside the concurrency slots. */
  private readonly deferred = new Map<number, NodeJS.Timeout>();
  private lastSeen = 0;
  private readonly settings: WorkflowSettings;
  private readonly pipeline: CommandPipelineDeps;

  constructor(private readonly options: ExecutorOptions) {
    this.settings = { executorID: options.executorID, maxAttempts: options.maxAttempts };
    this.pipeline = { store: options.eventStore };
  }

  start(): void {
    this.done = this.loop();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.subscription?.stop();
    await this.done;
    for (const timer of this.deferred.values()) clearTimeout(timer);
    await Promise.allSettled(this.inFlight.values());
    await this.saveCheckpoint();
  }

  private async loop(): Promise<void> {
    const { eventStore, readStore } = this.options;
    const from = (await readStore.getCheckpoint(EXECUTOR_CHECKPOINT)) ?? 0;
    this.lastSeen = from;
    const subscription = eventStore.subscribeToAll({ from, filter: { eventTypes: ['OperationApproved'] } });
    this.subscription = subscription;
    const saver = setInterval(() => void this.saveCheckpoint(), 200);
    try {
      for await (const event of subscription) {
        while (this.inFlight.size >= this.options.concurrency) await Promise.race(this.inFlight.values());
        if (this.stopped) break;
        this.track(event);
      }
    } catch (error) {
      if (!this.stopped) this.options.logger.error({ err: error }, 'executor subscription failed');
    } finally {
      clearInterval(saver);
    }
  }

  private track(event: RecordedEvent): void {
    this.lastSeen = event.position;
    this.run(event.position, (event as unknown as OperationApproved).data.operationID);
  }

  private run(position: number, operationID: string): void {
    const task = this.execute(operationID)
      .then((outcome) => {
        if (outcome?.deferUntil === undefined || this.stopped) return;
        const timer = setTimeout(() => {
          this.deferred.delete(position);
          if (!this.stopped) this.run(position, operationID);
        }, Math.max(0, outcome.deferUntil - Date.now()) + 10);
        this.deferred.set(position, timer);
      })
      .catch((error: unknown) => this.options.logger.error({ err: error, operationID }, 'operation execution failed; it will be retried at the next start'))
      .finally(() => this.inFlight.delete(position));
    this.inFlight.set(position, task);
  }

  /** The checkpoint may pass an approval only once its operation is settled: up to the oldest one in flight. */
  private async saveCheckpoint(): Promise<void> {
    const pending = [...this.inFlight.keys(), ...this.deferred.keys()];
    const safe = pending.length > 0 ? Math.min(...pending) - 1 : this.lastSeen;
    const { readStore } = this.options;
    for (let attempt = 0; attempt < 3; attempt++) {
      const current = await readStore.getCheckpoint(EXECUTOR_CHECKPOINT);
      if (current !== null && current >= safe) return;
      try {
        await readStore.commit([], { projection: EXECUTOR_CHECKPOINT, position: safe, expected: current });
        return;
      } catch (error) {
        if (!(error instanceof CheckpointConflictError)) throw error;
      }
    }
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
        const found = await ledger.findByOperationID(operationID);
        if (found) await this.record(completionWrites(operation, found, revision, now.toISOString(), assetScale));
        else await this.record(failureWrites(operation, `the ledger stayed unavailable after ${step.attempt - 1} attempts`, revision, now.toISOString(), assetScale));
        return undefined;
      }

      // The claim: appended at the revision just read, so of two executors only one gets here.
      try {
        await this.options.eventStore.append(stream, [{ ...claimEvent(operationID, this.settings.executorID, step.attempt, now, leaseMs), metadata: this.metadata(operationID) }], revision);
      } catch (error) {
        if (error instanceof WrongExpectedVersionError) continue;
        throw error;
      }
      const claimRevision = revision + 1;
      const outcome = await this.submit(operation, step.kind === 'recover');
      const at = clock().toISOString();
      if (outcome.kind === 'transient') {
        this.options.logger.warn({ operationID, attempt: step.attempt, err: outcome.error }, 'ledger unavailable; retrying');
        await sleep(Math.min(this.options.retryMaxMs, this.options.retryBaseMs * 2 ** (step.attempt - 1)));
        continue;
      }
      const writes = outcome.kind === 'executed'
        ? completionWrites(operation, outcome.tx, claimRevision, at, assetScale)
        : failureWrites(operation, outcome.reason, claimRevision, at, assetScale);
      // A conflict means another executor took over meanwhile: look again; the ledger keeps it exactly-once.
      if (await this.record(writes)) return undefined;
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

  private async record(writes: ReturnType<typeof completionWrites>): Promise<boolean> {
    const operationID = writes[0]!.stream.slice('operation-'.length);
    try {
      await runDecision(this.pipeline, { read: {}, decide: () => ({ writes, result: true }), context: this.metadata(operationID), maxAttempts: 1, finalConflict: (conflict) => conflict });
      return true;
    } catch (error) {
      if (error instanceof WrongExpectedVersionError) return false;
      throw error;
    }
  }

  private metadata(operationID: string) {
    return { actor: `system:executor:${this.settings.executorID}`, correlationId: operationID };
  }
}

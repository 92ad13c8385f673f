import { setTimeout as pause } from 'node:timers/promises';
import { WrongExpectedVersionError } from '../ports/event-store.ts';
import type { Ledger } from '../ports/ledger.ts';
import { noTracing, withTraceparent, type Tracing } from '../ports/tracing.ts';
import type { OperationCompleted, OperationFailed, OperationRequested } from '../domain/events.ts';
import { streams } from '../domain/streams.ts';
import { operationState, type OperationState } from '../commands/operations.ts';
import {
  runDecision,
  type CommandContext,
  type CommandPipelineDeps,
  type StreamRead,
  type StreamWrite,
} from '../commands/pipeline.ts';
import type { Logger } from '../logger.ts';
import { backoffMs, type BackoffSchedule } from '../shared/backoff.ts';
import type { UnchangedWatch } from '../shared/unchanged-watch.ts';
import {
  afterAnswer,
  afterVoid,
  answerOfError,
  decideClaim,
  ledgerQuestion,
  legsOf,
  type ExecutionStep,
  type LedgerAnswer,
  type LedgerQuestion,
  type Outcome,
  type WorkflowSettings,
} from './workflow.ts';

/** What the executor tells its observer: each claim it wins, and each outcome it records. */
export interface ExecutorObserver {
  /** A claim appended: attempt 1 for a first claim, more for a retry, a recovery or a takeover. */
  claimed(attempt: number): void;
  completed(): void;
  /**
   * Each recorded only after the operation's void committed on the ledger. `rejected`: the ledger refused the
   * transaction; `gave_up`: out of attempts; `voided`: a submit met the void another executor committed.
   */
  failed(reason: 'rejected' | 'gave_up' | 'voided'): void;
}

export interface PassDeps {
  pipeline: CommandPipelineDeps;
  ledger: Ledger;
  settings: WorkflowSettings;
  leaseMs: number;
  assetScale: number;
  /** The backoff between attempts when the ledger does not answer. */
  retry: BackoffSchedule;
  clock: () => Date;
  /** How long each claim has stood unchanged, on this process's monotonic clock (what a takeover waits on). */
  watch: UnchangedWatch;
  logger: Logger;
  observer?: ExecutorObserver;
  /** Tracing (src/ports/tracing.ts): a pass continues the trace of the operation's approval. None: off. */
  tracing?: Tracing;
}

/** How a pass ended: the operation is settled (or not this executor's to carry out), or when to look again. */
export type PassResult =
  { kind: 'settled' } | { kind: 'wait'; delayMs: number } | { kind: 'retry'; delayMs: number; cause: string };

/** Appends of an outcome retried when only a wallet stream (written at `any`) conflicted. */
const WALLET_CONFLICT_RETRIES = 50;
/** The short pause before such a retry: 20 ms at first, at most 1 s. */
const WALLET_CONFLICT_PAUSE = { firstMs: 20, maxMs: 1_000 };

/**
 * One pass of the workflow on an operation, its I/O only (every decision is workflow.ts'): the claim through
 * the command pipeline, the ledger's answer, the outcome appended. It throws on an unexpected error (the
 * carrier retries with a backoff) and when `signal` is aborted (the executor stops: the operation stays unsettled).
 */
export async function runPass(
  deps: PassDeps,
  operationID: string,
  lastError: string | undefined,
  signal: AbortSignal,
): Promise<PassResult> {
  const context: CommandContext = { actor: `system:executor:${deps.settings.executorID}`, correlationId: operationID };
  for (;;) {
    signal.throwIfAborted();
    const { step, state, revision } = await claim(deps, operationID, context);
    if (step.kind === 'ignore' || state.status === 'none') return settledFor(deps, operationID);
    if (step.kind === 'wait') return { kind: 'wait', delayMs: step.forMs };
    if (step.kind !== 'give-up') deps.observer?.claimed(step.attempt);
    // The ledger's answer and the outcome, in a span that continues the approval's trace; the outcome's events carry
    // it.
    const tracing = deps.tracing ?? noTracing;
    const parent = state.trace.approved ?? state.trace.created ?? undefined;
    const attributes = {
      'wallet_ops.operation_id': operationID,
      'wallet_ops.attempt': step.attempt,
      'wallet_ops.step': step.kind,
    };
    const result = await tracing.span('operation execute', { kind: 'consumer', parent, attributes }, async (span) => {
      const ask = (question: LedgerQuestion) =>
        tracing.span(
          `ledger ${question}`,
          { kind: 'client', parent: span.traceparent, attributes: { 'wallet_ops.operation_id': operationID } },
          async (call) => {
            const answer = await askLedger(deps.ledger, state.operation, question);
            if (answer.kind !== 'executed' && answer.kind !== 'voided') call.fail(answer.kind);
            return answer;
          },
        );
      const answer = await ask(ledgerQuestion(step));
      const { assetScale, retry } = deps;
      const outcomeContext = { revision, now: deps.clock().toISOString(), lastError, assetScale, retry };
      let outcome = afterAnswer(state.operation, step, answer, outcomeContext);
      // A refusal fails the operation only once its void committed (or completes it, if its transaction won).
      if (outcome.kind === 'void')
        outcome = afterVoid(state.operation, step, outcome.failure, await ask('void'), outcomeContext);
      if (outcome.kind === 'retry') {
        deps.logger.warn(
          {
            operationID,
            attempt: step.attempt,
            step: step.kind,
            cause: outcome.cause,
            retryInMs: Math.round(outcome.delayMs),
          },
          'ledger unavailable; retrying',
        );
        span.fail(outcome.cause);
        return outcome;
      }
      if (!(await record(deps, outcome.writes, withTraceparent(context, span.traceparent), signal)))
        return 'moved' as const;
      span.setAttribute('wallet_ops.outcome', outcome.result);
      if (outcome.result !== 'completed') span.fail(outcome.result);
      observe(deps.observer, outcome.result);
      logOutcome(deps.logger, state.operation, step.attempt, outcome);
      return settledFor(deps, operationID);
    });
    if (result !== 'moved') return result;
    // The operation's stream moved (another executor took over): look again. The ledger keeps it exactly-once.
  }
}

/**
 * The next step, decided through the command pipeline on the operation's stream, and its claim appended at
 * the revision read (on a conflict the pipeline reads and decides again). The revision returned is the one an
 * outcome is appended at: after the claim.
 */
async function claim(deps: PassDeps, operationID: string, context: CommandContext) {
  const stream = streams.operation(operationID);
  const now = deps.clock();
  return runDecision<{ operation: Versioned }, { step: ExecutionStep; state: OperationState; revision: number }>(
    deps.pipeline,
    {
      read: { operation: versioned(stream) },
      decide: ({ operation }) => {
        const sighting = {
          unchangedForMs: deps.watch.unchangedForMs(operationID, operation.revision),
          leaseMs: deps.leaseMs,
        };
        const { step, events } = decideClaim(operation.state, deps.settings, now, sighting);
        return {
          writes: [{ stream, events }],
          result: { step, state: operation.state, revision: operation.revision + events.length },
        };
      },
      context,
    },
  );
}

function settledFor(deps: PassDeps, operationID: string): PassResult {
  deps.watch.forget(operationID);
  return { kind: 'settled' };
}

/** The operation's state with the revision it was folded to (revisions start at 0 and have no gaps). */
type Versioned = { state: OperationState; revision: number };
const versioned = (stream: string): StreamRead<Versioned> => ({
  stream,
  initialState: () => ({ state: operationState.initialState(), revision: -1 }),
  evolve: (current, event) => ({ state: operationState.evolve(current.state, event), revision: current.revision + 1 }),
});

/** The ledger's answer to a question, its errors as answers. A void answers with the operation's fate. */
async function askLedger(
  ledger: Ledger,
  operation: OperationRequested['data'],
  question: LedgerQuestion,
): Promise<LedgerAnswer> {
  try {
    if (question === 'void') {
      const fate = await ledger.void(operation.operationID);
      return fate.kind === 'executed' ? fate : { kind: 'voided', voidedAt: fate.voidedAt };
    }
    if (question === 'lookup-then-submit') {
      const found = await ledger.findByOperationID(operation.operationID);
      if (found) return { kind: 'executed', tx: found };
    }
    return {
      kind: 'executed',
      tx: await ledger.submit({ operationID: operation.operationID, legs: legsOf(operation) }),
    };
  } catch (error) {
    return answerOfError(error);
  }
}

/**
 * Appends an outcome through the command pipeline. False when the operation's stream moved (another executor
 * took over: look again). A conflict on a wallet stream is not that: wallets are written at `any`, and only a
 * burst of other writers on the same wallet (e.g. the issuance account, from several executors) exhausts the
 * store's own retries; the outcome is then appended again after a short random pause, under the same claim.
 */
async function record(
  deps: PassDeps,
  writes: StreamWrite[],
  context: CommandContext,
  signal: AbortSignal,
): Promise<boolean> {
  const operationStream = writes[0]!.stream;
  for (let attempt = 1; ; attempt++) {
    try {
      await runDecision(deps.pipeline, {
        read: {},
        decide: () => ({ writes, result: true }),
        context,
        maxAttempts: 1,
        finalConflict: (conflict) => conflict,
      });
      return true;
    } catch (error) {
      if (!(error instanceof WrongExpectedVersionError)) throw error;
      if (error.stream === operationStream) return false;
      if (attempt >= WALLET_CONFLICT_RETRIES) throw error;
      await pause(backoffMs(attempt, WALLET_CONFLICT_PAUSE), undefined, { signal });
    }
  }
}

/**
 * One line per operation outcome, for the operator who follows the log: its ids and its figures, never a key's
 * secret (the operation holds none) nor a memo (a client's free text).
 */
function logOutcome(
  logger: Logger,
  operation: OperationRequested['data'] | null,
  attempt: number,
  outcome: Extract<Outcome, { kind: 'record' }>,
): void {
  const events = outcome.writes.flatMap((write) => write.events);
  const completed = events.find((event): event is OperationCompleted => event.type === 'OperationCompleted');
  const failed = events.find((event): event is OperationFailed => event.type === 'OperationFailed');
  const ids = {
    operationID: operation?.operationID ?? completed?.data.operationID ?? failed?.data.operationID,
    operationType: operation?.operationType,
    party: operation?.party ? `${operation.party.type}:${operation.party.id}` : undefined,
    keyID: operation?.keyID ?? undefined,
    amount: operation?.amount,
    fee: operation?.fee,
    attempt,
  };
  if (completed)
    logger.info(
      { ...ids, walletOperationID: completed.data.walletOperationID, sequenceNumber: completed.data.sequenceNumber },
      'operation completed',
    );
  else logger.info({ ...ids, result: outcome.result, lastError: failed?.data.lastError }, 'operation failed');
}

function observe(observer: ExecutorObserver | undefined, result: Extract<Outcome, { kind: 'record' }>['result']): void {
  if (result === 'completed') observer?.completed();
  else observer?.failed(result);
}

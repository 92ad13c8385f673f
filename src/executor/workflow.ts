import type { OperationExecutionStarted, OperationRequested } from '../domain/events.ts';
import { Decimal } from '../domain/money.ts';
import { streams } from '../domain/streams.ts';
import {
  LedgerDuplicateError,
  LedgerRejectedError,
  LedgerVoidedError,
  type LedgerTransaction,
} from '../ports/ledger.ts';
import type { OperationState } from '../commands/operations.ts';
import { movementWrites, releaseWrites } from '../commands/operations.ts';
import { operationLegs, walletOperationIDOf } from '../commands/failed-settlement.ts';
import type { StreamWrite } from '../commands/pipeline.ts';
import { backoffMs, type BackoffSchedule } from '../shared/backoff.ts';
import { describeError } from '../shared/supervised-consumer.ts';

/**
 * The executor's workflow, as pure decisions on an operation's state and the ledger's answer (the runner,
 * pass.ts, does the I/O): the next step (claim, recover, wait, give up), the claim, what to ask the ledger,
 * and what its answer leads to (complete, fail, retry after a backoff, give up). Exactly-once effect rests on
 * three things: an executor claims an operation by appending at the revision it read, so one claim wins;
 * before submitting again after any interruption it asks the ledger whether the operation's transaction
 * already exists; and the ledger accepts one transaction per operation.
 *
 * The ledger alone decides that an operation failed: a failure is recorded only once a void of the operation
 * id committed on the ledger (ours, or another executor's that a submit met as LedgerVoidedError). A read that
 * finds no transaction proves nothing (a paused executor may hold one uncommitted, or signed and unsent); a void
 * is serialized against the transfer by the ledger, so whichever commits first is the operation's fate.
 */
export type ExecutionStep =
  /** Nothing to do: not approved, or already settled. */
  | { kind: 'ignore' }
  /** Approved and unclaimed: claim it, then submit. */
  | { kind: 'claim'; attempt: number }
  /**
   * Claimed before, by us (a restart or a retry) or by an executor whose lease ran out: claim again, ask the ledger
   * first.
   */
  | { kind: 'recover'; attempt: number }
  /** Another executor holds a claim this process has not yet seen unchanged for a lease: look again after forMs. */
  | { kind: 'wait'; forMs: number }
  /** The attempts are spent: void the operation on the ledger; it fails unless its transaction committed first. */
  | { kind: 'give-up'; attempt: number };

export interface WorkflowSettings {
  executorID: string;
  maxAttempts: number;
}

/**
 * How the latest claim looks from this process: how long (this process's monotonic clock) it has seen the
 * operation's stream unchanged at its current revision, and the lease. A claim's own `leaseUntil` comes from
 * another host's wall clock and is never compared with ours: it is for display only.
 */
export interface ClaimSighting {
  unchangedForMs: number;
  leaseMs: number;
}

export function nextStep(state: OperationState, settings: WorkflowSettings, sighting: ClaimSighting): ExecutionStep {
  switch (state.status) {
    case 'approved':
      return { kind: 'claim', attempt: 1 };
    case 'executing': {
      const claim = state.claim!;
      const mine = claim.executorID === settings.executorID;
      // A live holder appends (claims again, records) well within a lease; a claim seen unchanged that long is dead.
      if (!mine && sighting.unchangedForMs < sighting.leaseMs)
        return { kind: 'wait', forMs: sighting.leaseMs - sighting.unchangedForMs };
      const attempt = claim.attempt + 1;
      return attempt > settings.maxAttempts ? { kind: 'give-up', attempt } : { kind: 'recover', attempt };
    }
    default:
      return { kind: 'ignore' };
  }
}

/**
 * The step, and the claim it appends (for a claim or a recovery): of two executors that read the same revision, one
 * wins.
 */
export function decideClaim(
  state: OperationState,
  settings: WorkflowSettings,
  now: Date,
  sighting: ClaimSighting,
): { step: ExecutionStep; events: OperationExecutionStarted[] } {
  const step = nextStep(state, settings, sighting);
  const leaseMs = sighting.leaseMs;
  const claims =
    state.status !== 'none' && (step.kind === 'claim' || step.kind === 'recover')
      ? [claimEvent(state.operation.operationID, settings.executorID, step.attempt, now, leaseMs)]
      : [];
  return { step, events: claims };
}

/** A step that goes to the ledger. */
export type LedgerStep = Extract<ExecutionStep, { kind: 'claim' | 'recover' | 'give-up' }>;

/**
 * What to ask the ledger: a first claim submits; a recovery (anything may have happened since the last claim)
 * looks the transaction up and submits only when there is none; giving up voids the operation id (never a
 * mere lookup: a transaction still uncommitted, or signed and not yet sent, is invisible to a read).
 */
export type LedgerQuestion = 'submit' | 'lookup-then-submit' | 'void';

export function ledgerQuestion(step: LedgerStep): LedgerQuestion {
  switch (step.kind) {
    case 'claim':
      return 'submit';
    case 'recover':
      return 'lookup-then-submit';
    case 'give-up':
      return 'void';
  }
}

/** The ledger's answer, as data. */
export type LedgerAnswer =
  /** It has the operation's transaction: submitted now, or found (a lookup, a duplicate submit, a void that lost). */
  | { kind: 'executed'; tx: LedgerTransaction }
  /** The operation id is voided on the ledger (our void committed, or a submit met another's): it never executes. */
  | { kind: 'voided'; voidedAt: string }
  /** It refused the transaction (or the void) for good. */
  | { kind: 'rejected'; reason: string }
  /** It did not answer: worth another attempt. */
  | { kind: 'unavailable'; cause: string };

/**
 * The answer a ledger's error stands for: a duplicate carries the transaction, a void and a rejection are final,
 * anything else transient.
 */
export function answerOfError(error: unknown): LedgerAnswer {
  if (error instanceof LedgerDuplicateError) return { kind: 'executed', tx: error.existing };
  if (error instanceof LedgerVoidedError) return { kind: 'voided', voidedAt: error.voidedAt };
  if (error instanceof LedgerRejectedError) return { kind: 'rejected', reason: error.message };
  return { kind: 'unavailable', cause: describeError(error) };
}

/** Why an operation fails once its void commits, and what the metrics count it as. */
export interface Failure {
  lastError: string;
  result: 'rejected' | 'gave_up';
}

/** What the ledger's answer leads to. */
export type Outcome =
  /**
   * Append these writes (one atomic append, at `revision`): the operation is settled. `result` is what the
   * metrics count (`voided`: a submit met a void another executor committed).
   */
  | { kind: 'record'; writes: StreamWrite[]; result: 'completed' | 'rejected' | 'gave_up' | 'voided' }
  /** Void the operation id on the ledger first; `afterVoid` decides on its answer (fail as `failure`, or complete). */
  | { kind: 'void'; failure: Failure }
  /** No answer: look again after delayMs (a claim or recovery then counts as the next attempt). */
  | { kind: 'retry'; delayMs: number; cause: string };

export interface OutcomeContext {
  /** The operation stream's revision the outcome is appended at: after the claim, or as read when giving up. */
  revision: number;
  now: string;
  /** The cause of the operation's last failure, named when it gives up. */
  lastError: string | undefined;
  assetScale: number;
  /** The backoff between attempts after the ledger did not answer. */
  retry: BackoffSchedule;
  /** The backoff's jitter, in [0, 1): the backoff's own random source unless given (tests fix it). */
  random?: () => number;
}

/** The answer to the step's question (a submit, a lookup then a submit, or a give-up's void). */
export function afterAnswer(
  operation: OperationRequested['data'],
  step: LedgerStep,
  answer: LedgerAnswer,
  context: OutcomeContext,
): Outcome {
  if (step.kind === 'give-up') {
    // Out of attempts: the operation fails, naming the last cause, once its void committed; its transaction may yet
    // win.
    const lastError = `gave up after ${step.attempt - 1} attempts: ${
      context.lastError ?? 'the ledger stayed unavailable'
    }`;
    return afterVoid(operation, step, { lastError, result: 'gave_up' }, answer, context);
  }
  const { revision, now, assetScale } = context;
  switch (answer.kind) {
    case 'executed':
      return {
        kind: 'record',
        result: 'completed',
        writes: completionWrites(operation, answer.tx, revision, now, assetScale),
      };
    case 'voided':
      // A void committed first (another executor's give-up, or an earlier void of ours that got no answer): the
      // operation fails.
      return {
        kind: 'record',
        result: 'voided',
        writes: failureWrites(
          operation,
          `the ledger voided the operation at ${answer.voidedAt} (an executor gave up on it, or the ledger refused it)`,
          revision,
          now,
          assetScale,
        ),
      };
    case 'rejected':
      // Refused now, but a transfer still in flight elsewhere (a paused executor's) or a later retry might land:
      // void first, so that the failure recorded is final on the ledger too.
      return { kind: 'void', failure: { lastError: answer.reason, result: 'rejected' } };
    case 'unavailable':
      return retryAfter(step, answer.cause, context);
  }
}

/**
 * The answer to a void made to fail the operation: voided, the failure is recorded; the transaction committed
 * first, the operation completes; no answer (or a void refused), nothing is recorded and the void is asked again
 * after a backoff: an operation is never failed on anything but its void.
 */
export function afterVoid(
  operation: OperationRequested['data'],
  step: LedgerStep,
  failure: Failure,
  answer: LedgerAnswer,
  context: OutcomeContext,
): Exclude<Outcome, { kind: 'void' }> {
  const { revision, now, assetScale } = context;
  switch (answer.kind) {
    case 'executed':
      return {
        kind: 'record',
        result: 'completed',
        writes: completionWrites(operation, answer.tx, revision, now, assetScale),
      };
    case 'voided':
      return {
        kind: 'record',
        result: failure.result,
        writes: failureWrites(operation, failure.lastError, revision, now, assetScale),
      };
    case 'rejected':
      return retryAfter(step, `the ledger refused to void the operation: ${answer.reason}`, context);
    case 'unavailable':
      return retryAfter(step, answer.cause, context);
  }
}

const retryAfter = (step: LedgerStep, cause: string, context: OutcomeContext): Extract<Outcome, { kind: 'retry' }> => ({
  kind: 'retry',
  delayMs: backoffMs(step.attempt, context.retry, context.random),
  cause,
});

export function claimEvent(
  operationID: string,
  executorID: string,
  attempt: number,
  now: Date,
  leaseMs: number,
): OperationExecutionStarted {
  return {
    type: 'OperationExecutionStarted',
    data: {
      operationID,
      executorID,
      attempt,
      leaseUntil: new Date(now.getTime() + leaseMs).toISOString(),
      startedAt: now.toISOString(),
    },
  };
}

/** The payer pays amount + fee: the amount to the payee, the fee to the platform's fee wallet. */
export const legsOf = operationLegs;

/** Channels whose payer holds no funds for the operation: the issuing account is not held against. */
const holdsFunds = (operation: OperationRequested['data']) => operation.payer.kind !== 'platform';

/**
 * What a completion writes, in one atomic append: the submission and the completion on the operation's
 * stream (at the claim's revision), and the money movements on the wallets, which settle the payer's hold.
 */
export function completionWrites(
  operation: OperationRequested['data'],
  tx: LedgerTransaction,
  claimRevision: number,
  now: string,
  assetScale: number,
): StreamWrite[] {
  const { operationID } = operation;
  const walletOperationID = walletOperationIDOf(tx.blockchainID);
  const held = holdsFunds(operation) ? new Decimal(operation.amount).plus(operation.fee).toFixed(assetScale) : '0';
  return [
    {
      stream: streams.operation(operationID),
      expectedRevision: claimRevision,
      events: [
        {
          type: 'OperationSubmitted',
          data: { operationID, sequenceNumber: tx.sequenceNumber, submittedAt: tx.createdAt },
        },
        {
          type: 'OperationCompleted',
          data: {
            operationID,
            blockchainID: tx.blockchainID,
            walletOperationID,
            sequenceNumber: tx.sequenceNumber,
            completedAt: now,
          },
        },
      ],
    },
    ...movementWrites(operation, held, assetScale),
  ];
}

/**
 * What a failure writes, in one atomic append: the failure (at the claim's revision) and the releases of what it held.
 */
export function failureWrites(
  operation: OperationRequested['data'],
  lastError: string,
  claimRevision: number,
  now: string,
  assetScale: number,
): StreamWrite[] {
  const releases = releaseWrites(operation, 'failed', assetScale).filter(
    (write) => holdsFunds(operation) || !write.stream.startsWith('wallet-'),
  );
  return [
    {
      stream: streams.operation(operation.operationID),
      expectedRevision: claimRevision,
      events: [{ type: 'OperationFailed', data: { operationID: operation.operationID, lastError, failedAt: now } }],
    },
    ...releases,
  ];
}

/**
 * What a follower does when the ground moves or a commit fails, as values. Whatever else fails (a read, a handler:
 * a transient fault or a poison event, which the follower cannot tell apart) fails the session: the supervisor
 * logs it, backs off and starts a new one from the checkpoint, and reports the streak on /health and /ready.
 */
import type { Conflict } from './checkpoints.ts';

export interface SettlingPolicy {
  /**
   * A checkpoint that cannot be committed: `fail` ends the session (its batch is handled again by the next);
   * `retry` goes on handling and commits again every `retryCommitMs`, and a failed session resumes from what this
   * process handled instead of reading the checkpoint again. `retry` suits a handler whose work does not depend on
   * the checkpoint's store and that writes nothing beside it (the executor needs the event store and the ledger).
   */
  readonly commitFailure: 'fail' | 'retry';
  /** While events wait to settle (settleLater) or a failed commit waits to be retried: how often it commits. */
  readonly retryCommitMs: number;
  /** At most this many events wait to settle: the follower reads no more until one does. */
  readonly maxUnsettled: number;
}

/** Every commit counts: one that fails ends the session. */
export const failOnCommit: SettlingPolicy = { commitFailure: 'fail', retryCommitMs: 200, maxUnsettled: Infinity };

/** Handling goes on while the checkpoint cannot be committed (see SettlingPolicy.commitFailure). */
export const retryCommits = (options: Partial<Omit<SettlingPolicy, 'commitFailure'>> = {}): SettlingPolicy => ({
  ...failOnCommit,
  ...options,
  commitFailure: 'retry',
});

export type Trouble = Conflict | { kind: 'commit-failed'; error: unknown; writes: number };

export type Settlement =
  /** A new session at once, from the stored checkpoint, and no failure counted: someone else moved the ground. */
  | { kind: 'resubscribe'; reason: string }
  /** Handling goes on; the commit is tried again every `retryCommitMs` (logged once per streak). */
  | { kind: 'retry-commit' }
  /** The session fails with this error (the supervisor backs off and starts a new one). */
  | { kind: 'fail'; error: unknown };

export function settle(policy: SettlingPolicy, trouble: Trouble): Settlement {
  switch (trouble.kind) {
    case 'conflict':
      return { kind: 'resubscribe', reason: trouble.reason };
    case 'commit-failed':
      // Writes that were not committed must be made again: only the session's end (and a replay) does that.
      return policy.commitFailure === 'retry' && trouble.writes === 0
        ? { kind: 'retry-commit' }
        : { kind: 'fail', error: trouble.error };
  }
}

/** Where a session starts: the stored checkpoint, or (retry, after a failed session) what this process handled. */
export function resumeFrom(
  policy: SettlingPolicy,
  follower: { failedBefore: boolean; handled: number | null },
): { from: 'checkpoint' } | { from: 'handled'; position: number } {
  return policy.commitFailure === 'retry' && follower.failedBefore && follower.handled !== null
    ? { from: 'handled', position: follower.handled }
    : { from: 'checkpoint' };
}

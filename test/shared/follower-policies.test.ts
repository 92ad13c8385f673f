import { describe, expect, it } from 'vitest';
import {
  batched,
  checkpointIn,
  commitsNow,
  conflict,
  failOnCommit,
  resumeFrom,
  retryCommits,
  settle,
  type SettlingPolicy,
  type Trouble,
} from '../../src/shared/follower.ts';

/**
 * The follower's policies are values and their decisions pure functions: what a conflict or a failed commit leads
 * to, where a session resumes, and whether a batch's checkpoint is committed now or held back.
 */
describe('the settling policies', () => {
  const down = new Error('read store down');
  const rows: Array<[string, SettlingPolicy, Trouble, ReturnType<typeof settle>]> = [
    ['fail, a conflict', failOnCommit, conflict('moved'), { kind: 'resubscribe', reason: 'moved' }],
    ['retry, a conflict', retryCommits(), conflict('moved'), { kind: 'resubscribe', reason: 'moved' }],
    [
      'fail, a failed commit',
      failOnCommit,
      { kind: 'commit-failed', error: down, writes: 0 },
      { kind: 'fail', error: down },
    ],
    [
      'retry, a failed commit',
      retryCommits(),
      { kind: 'commit-failed', error: down, writes: 0 },
      { kind: 'retry-commit' },
    ],
    [
      'retry, a failed commit that carried writes',
      retryCommits(),
      { kind: 'commit-failed', error: down, writes: 2 },
      { kind: 'fail', error: down },
    ],
  ];
  it.each(rows)('given %s, then the follower settles it as the table says', (_, policy, trouble, settlement) => {
    expect(settle(policy, trouble)).toEqual(settlement);
  });

  const resumes: Array<[string, SettlingPolicy, boolean, number | null, ReturnType<typeof resumeFrom>]> = [
    ['fail, the first session', failOnCommit, false, null, { from: 'checkpoint' }],
    ['fail, after a failed session', failOnCommit, true, 7, { from: 'checkpoint' }],
    ['retry, the first session', retryCommits(), false, 7, { from: 'checkpoint' }],
    ['retry, after a failed session', retryCommits(), true, 7, { from: 'handled', position: 7 }],
    ['retry, after a failed session that handled nothing', retryCommits(), true, null, { from: 'checkpoint' }],
  ];
  it.each(resumes)('given %s, then the session resumes as the table says', (_, policy, failedBefore, handled, from) => {
    expect(resumeFrom(policy, { failedBefore, handled })).toEqual(from);
  });

  it('when commits are retried with settings, then the settings are kept and the rest is the default', () => {
    expect(retryCommits({ maxUnsettled: 5 })).toEqual({ commitFailure: 'retry', retryCommitMs: 200, maxUnsettled: 5 });
  });
});

describe('the checkpoint policies', () => {
  const every = { positions: 100, ms: 1000 };
  const rows: Array<[string, typeof every | undefined, boolean, number, number, boolean]> = [
    ['not batched', undefined, false, 1, 0, true],
    ['batched, asked (writes, an act, a waiting reader)', every, true, 1, 0, true],
    ['batched, nothing asked, little passed', every, false, 99, 999, false],
    ['batched, enough positions passed', every, false, 100, 0, true],
    ['batched, long enough since the last commit', every, false, 0, 1000, true],
  ];
  it.each(rows)('given %s, then the batch commits now as the table says', (_, policy, asked, positions, ms, now) => {
    expect(commitsNow(policy, { asked, positionsSince: positions, msSince: ms })).toBe(now);
  });

  it('when a policy is batched, then it loads and commits as before and carries its interval', async () => {
    const policy = batched(
      checkpointIn(() => 42),
      every,
    );
    expect(policy.every).toEqual(every);
    expect(await policy.load({ eventStore: undefined as never })).toBe(42);
    expect(await policy.commit(43, [])).toEqual({ kind: 'committed' });
  });
});

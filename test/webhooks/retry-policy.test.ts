import { describe, expect, it } from 'vitest';
import { afterAttempt, DEFAULT_RETRY_POLICY, type RetryPolicy } from '../../src/webhooks/retry-policy.ts';

/** The delivery schedule as a pure function: no clock, no receiver. */
const policy: RetryPolicy = { baseDelayMs: 1_000, maxDelayMs: 60_000, giveUpAfterMs: 600_000 };
const noJitter = () => 0.5;
const failed = { ok: false };

describe('webhook retry policy', () => {
  it('given a 2xx, then the delivery is done', () => {
    expect(afterAttempt({ failingSince: 123 }, { ok: true }, 5_000, policy)).toEqual({ kind: 'delivered' });
  });

  it('given a first failure, then it is tried again after the base delay, and the streak starts now', () => {
    expect(afterAttempt({ failingSince: null }, failed, 10_000, policy, noJitter)).toEqual({
      kind: 'retry',
      nextAttemptAt: 11_000,
      failingSince: 10_000,
    });
  });

  it('given a streak that goes on, then each delay is the streak so far (doubling), capped at the maximum', () => {
    const delays: number[] = [];
    let failingSince: number | null = null;
    let now = 0;
    for (let i = 0; i < 10; i++) {
      const outcome = afterAttempt({ failingSince }, failed, now, policy, noJitter);
      if (outcome.kind !== 'retry') throw new Error(`unexpected ${outcome.kind}`);
      delays.push(outcome.nextAttemptAt - now);
      failingSince = outcome.failingSince;
      now = outcome.nextAttemptAt;
    }
    expect(delays).toEqual([1_000, 1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 60_000, 60_000, 60_000]);
  });

  it('given jitter, then a delay stays within ±10% of the schedule', () => {
    const low = afterAttempt({ failingSince: 0 }, failed, 8_000, policy, () => 0);
    const high = afterAttempt({ failingSince: 0 }, failed, 8_000, policy, () => 0.999_999);
    expect(low).toMatchObject({ nextAttemptAt: 8_000 + 7_200 });
    expect(high).toMatchObject({ nextAttemptAt: 8_000 + 8_800 });
  });

  it('given a failure when the streak has lasted the give-up time, then the delivery is given up', () => {
    expect(afterAttempt({ failingSince: 0 }, failed, 599_999, policy, noJitter).kind).toBe('retry');
    expect(afterAttempt({ failingSince: 0 }, failed, 600_000, policy, noJitter)).toEqual({
      kind: 'give-up',
      failingSince: 0,
    });
  });

  it('with the defaults, then a day of failures is about 30 attempts, never more than an hour apart', () => {
    let failingSince: number | null = null;
    let now = 0;
    let attempts = 0;
    let longest = 0;
    for (;;) {
      attempts += 1;
      const outcome = afterAttempt({ failingSince }, failed, now, DEFAULT_RETRY_POLICY, noJitter);
      if (outcome.kind === 'give-up') break;
      if (outcome.kind !== 'retry') throw new Error('unexpected');
      longest = Math.max(longest, outcome.nextAttemptAt - now);
      failingSince = outcome.failingSince;
      now = outcome.nextAttemptAt;
    }
    expect(attempts).toBeGreaterThanOrEqual(25);
    expect(attempts).toBeLessThanOrEqual(40);
    expect(longest).toBe(3_600_000);
    expect(now).toBeGreaterThanOrEqual(86_400_000);
  });
});

import type { AttemptResult } from './sender.ts';
import type { DeliveryDoc } from './deliveries.ts';

/**
 * What happens to a delivery after an attempt: a pure decision, so the schedule is tested without a clock.
 *
 * A failed delivery is tried again after a delay that doubles as the failure streak grows: the delay is the
 * time the streak has lasted so far, at least `baseDelayMs` and at most `maxDelayMs`, with ±10% jitter so that
 * the deliveries of many endpoints that failed together do not come back in step. With the defaults (5 s,
 * 1 h) that is about 30 attempts over a day. A delivery still failing `giveUpAfterMs` (a day) after its first
 * failure is given up, and the endpoint is disabled with it: an endpoint that has answered nothing useful for a
 * day is broken, and its makers and checkers see why in the console.
 */
export interface RetryPolicy {
  baseDelayMs: number;
  maxDelayMs: number;
  giveUpAfterMs: number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = {
  baseDelayMs: 5_000,
  maxDelayMs: 3_600_000,
  giveUpAfterMs: 86_400_000,
};

export type AttemptOutcome =
  | { kind: 'delivered' }
  | { kind: 'retry'; nextAttemptAt: number; failingSince: number }
  | { kind: 'give-up'; failingSince: number };

/** `startedAt`: when the attempt began (epoch ms); `random` in [0, 1). */
export function afterAttempt(
  delivery: Pick<DeliveryDoc, 'failingSince'>,
  result: Pick<AttemptResult, 'ok'>,
  startedAt: number,
  policy: RetryPolicy,
  random: () => number = Math.random,
): AttemptOutcome {
  if (result.ok) return { kind: 'delivered' };
  const failingSince = delivery.failingSince ?? startedAt;
  const streak = startedAt - failingSince;
  if (streak >= policy.giveUpAfterMs) return { kind: 'give-up', failingSince };
  const delay = Math.min(policy.maxDelayMs, Math.max(policy.baseDelayMs, streak)) * (0.9 + 0.2 * random());
  return { kind: 'retry', nextAttemptAt: startedAt + Math.round(delay), failingSince };
}

/**
 * When retry number `attempt` comes: the ceiling of attempt 1 is `firstMs`, each later attempt doubles it up to
 * `maxMs`.
 */
export interface BackoffSchedule {
  firstMs: number;
  maxMs: number;
}

/** Beyond 2^52 the ceiling is past any cap, and a larger exponent would overflow (0 × Infinity is NaN). */
const MAX_EXPONENT = 52;

/**
 * The wait before retry number `attempt` (1 for the first retry): capped exponential with "equal jitter", the
 * one backoff of the service. Half the ceiling is fixed, so a retry never comes back at once and the waits
 * grow whatever the draws; the other half is random, so that many waiters (consumers, processes, calls) that
 * failed together do not retry in step. `random` returns a number in [0, 1); tests pass a scripted one.
 */
export function backoffMs(
  attempt: number,
  { firstMs, maxMs }: BackoffSchedule,
  random: () => number = Math.random,
): number {
  // An attempt below 1 (or not a number) counts as the first, so a caller's off-by-one never waits nothing.
  const nth = Math.max(1, Math.floor(attempt)) || 1;
  const ceiling = Math.min(maxMs, firstMs * 2 ** Math.min(nth - 1, MAX_EXPONENT));
  return ceiling / 2 + random() * (ceiling / 2);
}

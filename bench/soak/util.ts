/** Small helpers shared by the soak's parts: waiting, randomness, percentiles, formatting. */

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, Math.max(0, ms)));

/** A pause that ends early when the signal aborts (the end of the load phase). */
export function pause(ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, Math.max(0, ms));
    signal.addEventListener('abort', done, { once: true });
  });
}

export const randomBetween = (min: number, max: number) => min + Math.random() * (max - min);
export const randomInt = (min: number, max: number) => Math.floor(randomBetween(min, max + 1));
export const pick = <T>(items: readonly T[]): T => items[Math.floor(Math.random() * items.length)]!;

/** An amount with two decimals in [min, max]. */
export const amountBetween = (min: number, max: number) => randomBetween(min, max).toFixed(2);

/** Picks a key of `weights` with probability proportional to its weight. */
export function weighted<K extends string>(weights: Record<K, number>): K {
  const entries = Object.entries(weights) as Array<[K, number]>;
  let roll = Math.random() * entries.reduce((sum, [, w]) => sum + w, 0);
  for (const [key, weight] of entries) {
    roll -= weight;
    if (roll < 0) return key;
  }
  return entries.at(-1)![0];
}

/** The q-quantile (0..1) of the values (nearest rank); NaN when there are none. */
export function percentile(values: number[], q: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
}

export const fmtMs = (ms: number) =>
  Number.isNaN(ms) ? '-' : ms >= 10_000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms)} ms`;
export const fmtInt = (n: number) => n.toLocaleString('en-US');

/** Increments a counter in a record of counters. */
export function bump(counts: Record<string, number>, key: string, by = 1): void {
  counts[key] = (counts[key] ?? 0) + by;
}

/** Polls `condition` every `everyMs` until it holds (true) or `timeoutMs` passes (false). */
export async function waitUntil(
  condition: () => Promise<boolean> | boolean,
  timeoutMs: number,
  everyMs = 100,
): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await condition()) return true;
    if (Date.now() >= deadline) return false;
    await sleep(everyMs);
  }
}

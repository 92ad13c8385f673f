import { describe, expect, it } from 'vitest';
import { backoffMs } from '../../src/shared/backoff.ts';

const schedule = { firstMs: 100, maxMs: 1_000 };
const highest = () => 1 - Number.EPSILON;

describe('backoffMs', () => {
  it('when it is the first attempt, then the wait is between half the first delay and the first delay', () => {
    expect(backoffMs(1, schedule, () => 0)).toBe(50);
    expect(backoffMs(1, schedule, () => 0.5)).toBe(75);
    expect(backoffMs(1, schedule, highest)).toBeCloseTo(100);
    expect(backoffMs(1, schedule, highest)).toBeLessThan(100);
  });

  it('when attempts follow each other, then the ceiling doubles until it reaches the cap and stays there', () => {
    const ceilings = [1, 2, 3, 4, 5, 6, 30].map((attempt) => backoffMs(attempt, schedule, () => 0) * 2);
    expect(ceilings).toEqual([100, 200, 400, 800, 1_000, 1_000, 1_000]);
  });

  it('when the random source draws, then it is drawn once per wait and only the upper half of the ceiling is random', () => {
    let draws = 0;
    const wait = backoffMs(3, schedule, () => {
      draws += 1;
      return 0.25;
    });
    expect(draws).toBe(1);
    expect(wait).toBe(200 + 0.25 * 200);
  });

  it('when the attempt is very large, then the wait is finite and at most the cap', () => {
    for (const attempt of [60, 1_100, Number.MAX_SAFE_INTEGER, Infinity]) {
      const wait = backoffMs(attempt, schedule, highest);
      expect(Number.isFinite(wait)).toBe(true);
      expect(wait).toBeLessThanOrEqual(1_000);
      expect(wait).toBeGreaterThanOrEqual(500);
    }
  });

  it('when the attempt is below 1 or not a number, then it counts as the first', () => {
    for (const attempt of [0, -3, 0.5, Number.NaN]) expect(backoffMs(attempt, schedule, () => 0)).toBe(50);
  });

  it('when no random source is given, then every wait of every attempt lies between half its ceiling and its ceiling', () => {
    for (let attempt = 1; attempt <= 12; attempt++) {
      const ceiling = Math.min(1_000, 100 * 2 ** (attempt - 1));
      for (let draw = 0; draw < 50; draw++) {
        const wait = backoffMs(attempt, schedule);
        expect(wait).toBeGreaterThanOrEqual(ceiling / 2);
        expect(wait).toBeLessThanOrEqual(ceiling);
      }
    }
  });
});

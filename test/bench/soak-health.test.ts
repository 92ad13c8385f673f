import { describe, expect, it } from 'vitest';
import { judgeHealth } from '../../bench/soak/server-faults.ts';
import { SoakStats } from '../../bench/soak/stats.ts';

/** An outage of 10 s from t=0, the grace 5 s; the probes of one process, one a second, from `statuses`. */
function outage(
  statuses: Array<number | null>,
  options: { steady?: boolean; starts?: (i: number) => number } = {},
): SoakStats {
  const stats = new SoakStats();
  stats.serverFaults.push({
    kind: 'outage',
    startedAt: 0,
    endedAt: 10_000,
    detail: 'stopped 10 s',
    steady: options.steady === false ? [] : ['api-1'],
  });
  statuses.forEach((status, i) =>
    stats.healthProbes.push({ at: i * 1000, child: 'api-1', status, starts: options.starts?.(i) ?? 1 }),
  );
  return stats;
}

describe('soak: /health judged through a PostgreSQL outage', () => {
  it('when a process answered 503 past the grace and 200 again after the start, then nothing is wrong', () => {
    const stats = outage([200, 200, 200, 200, 200, 200, 503, 503, 503, 503, 503, 503, 200]);
    expect(judgeHealth(stats, ['api-1'], 5000)[0]).toMatch(
      /^api-1: 503 from 6\.0 s .*200 again 2\.0 s after the start, no restart$/,
    );
    expect(stats.problems).toEqual([]);
  });

  it('when a process answered 200 all through the outage, then it lied, and that is a problem', () => {
    const stats = outage(Array.from({ length: 14 }, () => 200));
    judgeHealth(stats, ['api-1'], 5000);
    expect(stats.problems.join('\n')).toMatch(/never answered 503 while PostgreSQL was down/);
    expect(stats.problems.join('\n')).toMatch(
      /answered 200 \d+ time\(s\) while PostgreSQL had been down longer than the grace/,
    );
  });

  it('when a process never answered 200 again after the start, then that is a problem', () => {
    const stats = outage([200, 200, 200, 200, 200, 200, 503, 503, 503, 503, 503, 503, 503, 503]);
    judgeHealth(stats, ['api-1'], 5000);
    expect(stats.problems).toEqual([expect.stringMatching(/did not answer 200 again within 60 s/)]);
  });

  it('when a process was restarted around the outage, then it is not judged', () => {
    const stats = outage(
      Array.from({ length: 14 }, () => 200),
      { steady: false },
    );
    expect(judgeHealth(stats, ['api-1'], 5000)).toEqual(['api-1: not judged (down or restarted around the outage)']);
    expect(stats.problems).toEqual([]);
  });
});

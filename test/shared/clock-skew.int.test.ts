import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.ts';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { CorrectedClock, fileTime, measureClockSkew, watchClockSkew } from '../../src/shared/clock-skew.ts';
import { tempDir } from '../support/temp-dir.ts';
import { waitFor } from '../support/system.ts';

describe('the clock skew warning', () => {
  const STORE = new Date('2026-03-01T12:00:00.000Z');

  it('when this clock runs 90 s ahead of the store, then the skew is +90 s', async () => {
    expect(
      await measureClockSkew(
        async () => STORE,
        () => new Date(STORE.getTime() + 90_000),
      ),
    ).toBe(90_000);
  });

  it('when the skew is beyond CLOCK_SKEW_WARN_MS, then a warning is logged and the metric told', async () => {
    const lines: string[] = [];
    const reported: number[] = [];
    const stop = watchClockSkew({
      storeNow: async () => STORE,
      clock: () => new Date(STORE.getTime() - 86_400_000),
      warnMs: 5_000,
      intervalMs: 60_000,
      logger: createLogger('info', { write: (line: string) => void lines.push(line) }),
      report: (seconds) => reported.push(seconds),
    });
    await waitFor(() => reported.length === 1);
    stop();
    expect(reported).toEqual([-86_400]);
    expect(lines.map((line) => JSON.parse(line) as Record<string, unknown>)).toEqual([
      expect.objectContaining({
        level: 40,
        skewMs: -86_400_000,
        msg: expect.stringMatching(/86400000 ms behind the store's: check NTP/),
      }),
    ]);
  });

  it('when the skew is within CLOCK_SKEW_WARN_MS, then nothing is logged but the metric is told', async () => {
    const lines: string[] = [];
    const reported: number[] = [];
    const stop = watchClockSkew({
      storeNow: async () => STORE,
      clock: () => new Date(STORE.getTime() + 1_000),
      warnMs: 5_000,
      intervalMs: 60_000,
      logger: createLogger('info', { write: (line: string) => void lines.push(line) }),
      report: (seconds) => reported.push(seconds),
    });
    await waitFor(() => reported.length === 1);
    stop();
    expect(reported).toEqual([1]);
    expect(lines).toEqual([]);
  });
});

describe("the embedded store's clock", () => {
  it("when this process's clock runs a day ahead, then the kernel's stamp on a file of the data directory measures +1 day, and the corrected clock tells the store's day", async () => {
    const dir = tempDir('clock-probe-');
    try {
      const ahead = () => new Date(Date.now() + 86_400_000);
      const skewMs = await measureClockSkew(fileTime(join(dir.path, 'clock-probe')), ahead);
      expect(Math.abs(skewMs - 86_400_000)).toBeLessThan(1_000);
      const corrected = new CorrectedClock(ahead);
      corrected.measured(skewMs);
      expect(Math.abs(corrected.now().getTime() - Date.now())).toBeLessThan(1_000);
    } finally {
      dir.cleanup();
    }
  });
});

describe('the clock probe file', () => {
  it('when it is written in the data directory, then it is 0600 like every file there', async () => {
    const dir = tempDir('clock-probe-mode-');
    try {
      await fileTime(join(dir.path, 'clock-probe'))();
      expect((statSync(join(dir.path, 'clock-probe')).mode & 0o777).toString(8)).toBe('600');
    } finally {
      dir.cleanup();
    }
  });
});

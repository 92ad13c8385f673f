import { appendFileSync, readFileSync } from 'node:fs';
import { afterAll, expect } from 'vitest';
import { onEvm, onPostgres } from './run-on.ts';

/**
 * With TEST_CPU_LOG=<file>, each test file appends the CPU it cost to that file (JSON lines): its worker's own
 * and that of every process it started and reaped (wallet-ops servers, CLI children, chromium), from
 * /proc/self/stat. Unlike a file's duration, that does not grow with the machine's load: it is what to read
 * to make the suite faster.
 */
const LOG = process.env.TEST_CPU_LOG;

function cpuSeconds(): { self: number; children: number } {
  // Fields after the command's closing parenthesis: utime stime cutime cstime are the 12th to 15th of them.
  const fields = readFileSync('/proc/self/stat', 'utf8').split(') ')[1]!.split(' ');
  const ticks = (i: number) => Number(fields[i]) / 100;
  return { self: ticks(11) + ticks(12), children: ticks(13) + ticks(14) };
}

if (LOG) {
  // From before the test file is imported: its imports and their transform count too.
  const start = cpuSeconds();
  afterAll(() => {
    const end = cpuSeconds();
    const file = expect.getState().testPath ?? 'unknown';
    appendFileSync(
      LOG,
      `${JSON.stringify({ file, project: onPostgres() ? 'on-postgres' : onEvm() ? 'on-evm' : 'embedded', self: +(end.self - start.self).toFixed(2), children: +(end.children - start.children).toFixed(2) })}\n`,
    );
  });
}

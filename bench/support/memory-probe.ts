/**
 * Preloaded into a server the benchmarks measure (`node --expose-gc --import tsx --import <this> src/main.ts`):
 * on SIGUSR2 it collects garbage and writes the process's memory to BENCH_MEMORY_FILE as one JSON line, so the
 * server measured is the real src/main.ts, untouched.
 */
import { readFileSync, writeFileSync } from 'node:fs';

export interface MemorySample {
  seq: number;
  rss: number;
  heapUsed: number;
  heapTotal: number;
  external: number;
  /** The process's peak resident set (VmHWM), since it started. */
  peakRss: number;
}

const file = process.env.BENCH_MEMORY_FILE;
let seq = 0;
if (file) {
  process.on('SIGUSR2', () => {
    const gc = (globalThis as { gc?: () => void }).gc;
    gc?.();
    gc?.();
    const usage = process.memoryUsage();
    const hwm = /VmHWM:\s+(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'));
    const sample: MemorySample = {
      seq: ++seq,
      rss: usage.rss,
      heapUsed: usage.heapUsed,
      heapTotal: usage.heapTotal,
      external: usage.external,
      peakRss: hwm ? Number(hwm[1]) * 1024 : 0,
    };
    writeFileSync(file, `${JSON.stringify(sample)}\n`);
  });
}

/**
 * Memory of the projections' live catch-up, for bench:store (issue 26): a fresh embedded data directory is given
 * N events of the realistic history (bench/support/history.ts, appended with appendMulti in large batches), then
 * a child process starts the projections as a server does (buildWalletOps with the 'projections' part: every
 * projection runner, the sealer, the API-key directory) with no read model yet, and samples its memory until
 * every consumer has caught up to the head. Reported: the peak RSS (VmHWM) and the highest heap used seen.
 *
 *   node --import tsx bench/support/catch-up-memory.ts 20000,100000     (stand-alone)
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { openStores } from '../../src/adapters/open-stores.ts';
import { tempDir } from '../../test/support/temp-dir.ts';
import { HistoryGenerator } from './history.ts';

const SELF = fileURLToPath(import.meta.url);

export interface CatchUpMemory {
  events: number;
  appendSeconds: number;
  catchUpSeconds: number;
  peakRss: number;
  peakHeapUsed: number;
}

/** Appends `events` to a fresh store, then measures the catch-up in a child process. */
export async function measureCatchUpMemory(sizes: number[], log: (line: string) => void): Promise<CatchUpMemory[]> {
  const results: CatchUpMemory[] = [];
  for (const size of sizes) {
    const dir = tempDir('catch-up-memory-');
    try {
      const stores = await openStores({ dataDir: dir.path });
      const appended = await new HistoryGenerator().extendTo(stores.eventStore, size);
      await stores.close();
      log(
        `catch-up memory: ${appended.events.toLocaleString('en-US')} events appended in ${appended.seconds.toFixed(0)} s`,
      );
      const sample = await runChild(dir.path);
      results.push({ events: appended.events, appendSeconds: appended.seconds, ...sample });
      log(
        `catch-up memory: caught up in ${sample.catchUpSeconds.toFixed(1)} s; peak RSS ${mb(sample.peakRss)} MB, peak heap used ${mb(sample.peakHeapUsed)} MB`,
      );
    } finally {
      dir.cleanup();
    }
  }
  return results;
}

function runChild(dataDir: string): Promise<Omit<CatchUpMemory, 'events' | 'appendSeconds'>> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', SELF, '--child', dataDir], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.once('error', reject);
    child.once('exit', (code) => {
      if (code !== 0) return reject(new Error(`the catch-up child exited with ${String(code)}`));
      resolve(JSON.parse(out.trim().split('\n').at(-1)!));
    });
  });
}

/** In the child: start the projections on the directory, sample memory every 50 ms until every consumer is at the head. */
async function child(dataDir: string): Promise<void> {
  const { loadConfig } = await import('../../src/config.ts');
  const { createLogger } = await import('../../src/logger.ts');
  const { buildWalletOps } = await import('../../src/wallet-ops.ts');
  const { consumerReports } = await import('../../src/health.ts');
  const config = loadConfig({
    DATA_DIR: dataDir,
    EVENT_STORE: 'embedded',
    READ_STORE: 'embedded',
    LEDGER: 'embedded',
    LOG_LEVEL: 'warn',
    METRICS_ENABLED: 'false',
  });
  let peakHeapUsed = 0;
  const sampler = setInterval(() => (peakHeapUsed = Math.max(peakHeapUsed, process.memoryUsage().heapUsed)), 50);
  const started = performance.now();
  const ops = await buildWalletOps(config, createLogger('warn'), () => new Date(), ['projections']);
  for (;;) {
    // Caught up as /ready says it: no event of a consumer's filter after its position.
    const reports = await consumerReports(ops.stores.eventStore, ops.consumers, new Date(), 1);
    if (reports.every((report) => report.lagEvents === 0)) break;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  const catchUpSeconds = (performance.now() - started) / 1000;
  clearInterval(sampler);
  peakHeapUsed = Math.max(peakHeapUsed, process.memoryUsage().heapUsed);
  const hwm = /VmHWM:\s+(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'));
  await ops.close();
  process.stdout.write(
    `${JSON.stringify({ catchUpSeconds, peakRss: hwm ? Number(hwm[1]) * 1024 : 0, peakHeapUsed })}\n`,
  );
}

const mb = (bytes: number) => (bytes / 1024 / 1024).toFixed(0);

if (process.argv[1] === SELF) {
  if (process.argv[2] === '--child') {
    await child(process.argv[3]!);
  } else {
    const sizes = (process.argv[2] ?? '20000,100000').split(',').map(Number);
    await measureCatchUpMemory(sizes, (line) => console.error(line));
  }
}

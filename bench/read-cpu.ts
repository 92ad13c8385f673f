/**
 * The read path's CPU per request with every part in one process (`npm start`), against its floors timed the same
 * way: the server's CPU time (user + system) over a fixed number of requests, which a shared machine disturbs far
 * less than a request rate. Balance against bare express, list of 100 against one indexed SELECT.
 *   node --import tsx bench/read-cpu.ts [store=sqlite|postgres] [n=20000] [runs=3] [cases=balance,list] [prof=DIR]
 * `prof=DIR`: the system runs under `node --cpu-prof` and writes its profile to DIR when it stops.
 */
import '../test/support/fast-passwords.ts';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { startPostgresServer } from '../test/support/postgres-server.ts';
import { tempDir } from '../test/support/temp-dir.ts';
import { profileWhile } from './support/cpu-profile.ts';
import type { LoadSpec } from './support/load-generator.ts';
import { postgresReadBaselineApp } from './support/postgres-baselines.ts';
import { bareExpressApp, baselineApp } from './support/read-system.ts';
import { listen, runLoad } from './support/run-load.ts';
import { seedSystem, startLayout } from './support/system-processes.ts';

const args = new Map(
  process.argv.slice(2).map((a) => [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)] as [string, string]),
);
const N = Number(args.get('n') ?? 20_000);
const RUNS = Number(args.get('runs') ?? 3);
const CASES = (args.get('cases') ?? 'balance,list').split(',') as Array<'balance' | 'list'>;
const PROFILE_DIR = args.get('prof');
const CONNECTIONS = 64;
if (PROFILE_DIR) mkdirSync(PROFILE_DIR, { recursive: true });

const server = args.get('store') === 'postgres' ? await startPostgresServer({ durable: true }) : undefined;
if (server)
  Object.assign(process.env, { TEST_POSTGRES_URL: server.url, TEST_STORES: 'postgres', TEST_POSTGRES_POOL_SIZE: '10' });

/** CPU ms (user + system) of a process so far, from /proc (clock ticks of 10 ms). */
const cpuOfPid = (pid: number) => {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
};
const ownCpu = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
};

/** µs of the server's CPU per request over N requests, each of RUNS runs, after a warm-up. */
async function timed(url: string, requests: LoadSpec['requests'], cpuMs: () => number): Promise<number[]> {
  await runLoad({ url, connections: CONNECTIONS, durationSeconds: 60, amount: N, requests });
  const runs: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const before = cpuMs();
    const result = await runLoad({ url, connections: CONNECTIONS, durationSeconds: 120, amount: N, requests });
    const after = cpuMs();
    if (result.non2xx + result.errors > 0) throw new Error(`${result.non2xx} non-2xx, ${result.errors} errors`);
    runs.push(((after - before) * 1000) / result.total);
  }
  return runs;
}

const show = (name: string, runs: number[]) => {
  const sorted = [...runs].sort((a, b) => a - b);
  console.log(
    `${name}: median ${sorted[Math.floor(sorted.length / 2)]!.toFixed(1)}, least ${sorted[0]!.toFixed(1)} µs CPU per request (runs ${runs.map((r) => r.toFixed(1)).join(', ')})`,
  );
};

const dir = tempDir('read-cpu-');
let closeFloor: (() => Promise<void>) | undefined;
let floorUrl = '';
try {
  const requests = await seedSystem(dir.path, 10, 100, async (sys) => {
    if (!CASES.includes('list')) return;
    if (server) {
      const app = await postgresReadBaselineApp(sys, server.url);
      const served = await listen(app.app);
      floorUrl = served.url;
      closeFloor = async () => (await served.close(), await app.close());
    } else {
      const app = await baselineApp(sys, dir.path);
      const served = await listen(app.app);
      floorUrl = served.url;
      closeFloor = async () => {
        await served.close();
        app.db.close();
      };
    }
  });
  console.log(
    `load average ${(await import('node:os'))
      .loadavg()
      .map((n) => n.toFixed(2))
      .join(', ')}`,
  );
  if (CASES.includes('list')) show('floor: indexed SELECT of 100', await timed(floorUrl, requests.list, ownCpu));
  await closeFloor?.();
  if (CASES.includes('balance')) {
    const bare = await listen(bareExpressApp());
    const floor = () => timed(bare.url, requests.balance, ownCpu);
    if (PROFILE_DIR) {
      const { result, profile } = await profileWhile(floor);
      writeFileSync(`${PROFILE_DIR}/bare-express.json`, JSON.stringify(profile));
      show('floor: bare express (profiled)', result);
    } else show('floor: bare express', await floor());
    await bare.close();
  }
  if (PROFILE_DIR) process.env.NODE_OPTIONS = `--cpu-prof --cpu-prof-dir=${PROFILE_DIR}`;
  const running = await startLayout('all', dir.path);
  delete process.env.NODE_OPTIONS;
  try {
    const pid = running.pids[0]!;
    // What the process spends with no request at all (its followers' polls, timers, the key-usage flush).
    const idleFrom = cpuOfPid(pid);
    await new Promise((resolve) => setTimeout(resolve, 10_000));
    console.log(`every part, one process: idle ${((cpuOfPid(pid) - idleFrom) / 10).toFixed(1)} ms of CPU a second`);
    for (const c of CASES)
      show(`every part, one process: ${c}`, await timed(running.url, requests[c], () => cpuOfPid(pid)));
  } finally {
    await running.stop();
  }
} finally {
  dir.cleanup();
  await server?.stop();
}

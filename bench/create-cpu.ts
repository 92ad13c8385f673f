/**
 * The server's CPU per create, the measure of issue 41's CPU work (req/s is noisy on a shared machine; CPU time per
 * create much less so): a fixed number of creates against a layout of bench:system, at `conns` at once, and the
 * CPU (user + system) of the layout's processes over them and until the followers have settled, less what an idle
 * system spends in as long.
 *   node --import tsx bench/create-cpu.ts [n=2000] [conns=1] [layout=all] [store=sqlite|postgres] [prof=DIR]
 * `prof=DIR`: the processes run under `--cpu-prof`; the samples taken while the creates ran are summarized (self
 * time by function, and total time of wallet-ops' own functions) and the profiles kept in DIR.
 */
import '../test/support/fast-passwords.ts';
import { spawn } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { tempDir } from '../test/support/temp-dir.ts';
import { startPostgresServer } from '../test/support/postgres-server.ts';
import { seedSystem, startLayout, type Layout } from './support/system-processes.ts';
import { processCpuMs } from './support/process-cpu.ts';
import { pinWalFrames } from './support/wal-frames.ts';

const args = new Map(
  process.argv.slice(2).map((a) => [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)] as [string, string]),
);
const N = Number(args.get('n') ?? 2000);
const CONNS = Number(args.get('conns') ?? 1);
const layout = (args.get('layout') ?? 'all') as Layout;
const profDir = args.get('prof') ? resolve(args.get('prof')!) : undefined;
/** `perf=FILE`: `perf record` of the processes (CPU time only, with JIT symbols) while the creates run. */
const perfFile = args.get('perf') ? resolve(args.get('perf')!) : undefined;
/** `frames=1`: the read store's WAL frames per create, by table and index (see walFrames); `frames=events`: the event
 * store's. */
const countFrames = args.get('frames') === '1' || args.get('frames') === 'events';
for (const [key, value] of args) if (/^[A-Z_]+$/.test(key)) process.env[key] = value;

const server = args.get('store') === 'postgres' ? await startPostgresServer({ durable: true }) : undefined;
if (server)
  Object.assign(process.env, { TEST_POSTGRES_URL: server.url, TEST_STORES: 'postgres', TEST_POSTGRES_POOL_SIZE: '10' });
const dir = tempDir();
const requests = await seedSystem(dir.path, 10, 10, async () => {});
if (perfFile)
  process.env.NODE_OPTIONS = `${process.env.NODE_OPTIONS ?? ''} --perf-basic-prof --interpreted-frames-native-stack`;
if (profDir) {
  mkdirSync(profDir, { recursive: true });
  process.env.NODE_OPTIONS = `${process.env.NODE_OPTIONS ?? ''} --cpu-prof --cpu-prof-dir=${profDir} --cpu-prof-interval=250`;
}
// parts=write-api,projections: one process serving those parts instead of a layout.
const parts = args.get('parts');
const running = await startLayout(parts ? [['bin/wallet-ops.js', 'serve', ...parts.split(',')]] : layout, dir.path);
delete process.env.NODE_OPTIONS;
const cpuMs = (thread: 'all' | 'main' = 'all') => processCpuMs(running.pids, thread);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const nowUs = () => Number(process.hrtime.bigint() / 1000n);
/** Events in the log, and the event store's group commits (its batch size histogram's count). */
async function counters(): Promise<{ events: number; commits: number }> {
  const text = await (await fetch(`${running.url}/metrics`)).text();
  const count = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
  const events = server
    ? NaN
    : Number(
        (
          new Database(join(dir.path, 'events.sqlite'), { readonly: true })
            .prepare('SELECT max(position) AS head FROM events')
            .get() as { head: number }
        ).head,
      );
  return { events, commits: count('wallet_ops_event_store_group_commit_batch_size_count') };
}

let sent = 0;
async function creates(count: number): Promise<void> {
  const limit = sent + count;
  await Promise.all(
    Array.from({ length: CONNS }, async () => {
      while (sent < limit) {
        const request = requests.create[sent++ % requests.create.length]!;
        const res = await fetch(`${running.url}${request.path}`, {
          method: request.method,
          headers: request.headers,
          body: request.body as string,
        });
        await res.text();
        if (res.status >= 300) throw new Error(`status ${res.status}`);
      }
    }),
  );
}
/**
 * Waits until the processes spend under 2% of a core for 300 ms: the followers have caught up. Under `prof=` 10%: the
 * profiler's sampling thread is counted (schedstat sees every thread) and never rests.
 */
const SETTLED_MS = profDir ? 30 : 6;
async function settled(): Promise<void> {
  for (let last = cpuMs(); ;) {
    await sleep(300);
    const now = cpuMs();
    if (now - last < SETTLED_MS) return;
    last = now;
  }
}

try {
  await creates(Math.min(500, N));
  await settled();
  const [idleAt, idleMainAt] = [cpuMs(), cpuMs('main')];
  await sleep(1000);
  const [idlePerMs, idleMainPerMs] = [(cpuMs() - idleAt) / 1000, (cpuMs('main') - idleMainAt) / 1000];
  const before = await counters();
  const frames =
    countFrames && !server
      ? args.get('frames') === 'events'
        ? eventStoreFrames(join(dir.path, 'events.sqlite'))
        : walFrames(join(dir.path, 'read-models.sqlite'))
      : undefined;
  const [cpuAt, mainAt, wallAt, fromUs] = [cpuMs(), cpuMs('main'), performance.now(), nowUs()];
  const perf = perfFile
    ? spawn('perf', ['record', '-F', '1999', '-g', '-o', perfFile, '-p', running.pids.join(',')], { stdio: 'inherit' })
    : undefined;
  if (perf) await sleep(300);
  await creates(N);
  if (perf) {
    perf.kill('SIGINT');
    await new Promise((r) => perf.once('exit', r));
  }
  const [loadWall, toUs] = [performance.now() - wallAt, nowUs()];
  await settled();
  const wall = performance.now() - wallAt;
  const cpu = cpuMs() - cpuAt - idlePerMs * wall;
  const mainCpu = cpuMs('main') - mainAt - idleMainPerMs * wall;
  const after = await counters();
  frames?.report(N);
  console.log(
    `${parts ?? layout} ${args.get('store') ?? 'sqlite'} ${N} creates at ${CONNS}: ${((N / loadWall) * 1000).toFixed(0)}/s; ` +
      `server CPU ${(cpu / N).toFixed(3)} ms per create (idle ${(idlePerMs * 1000).toFixed(1)} ms/s subtracted), ` +
      `its main threads' ${(mainCpu / N).toFixed(3)} ms; ` +
      `${((after.events - before.events) / N).toFixed(2)} events, ` +
      `${((after.commits - before.commits) / N).toFixed(2)} event store commits per create`,
  );
  if (!server && process.env.TYPES)
    console.log(
      new Database(join(dir.path, 'events.sqlite'), { readonly: true })
        .prepare('SELECT type, count(*) AS n FROM events GROUP BY type ORDER BY n DESC')
        .all(),
    );
  await running.stop();
  if (profDir) for (const file of readdirSync(profDir)) summarizeProfile(join(profDir, file), fromUs, toUs, N);
} finally {
  await running.stop();
  await server?.stop();
  dir.cleanup();
}

/** The read store's WAL frames per create from now on, by table and index (bench/support/wal-frames.ts). */
function walFrames(file: string): { report(count: number): void } {
  // A reader of a fully checkpointed WAL reads the database file alone and does not hold the WAL: one frame first.
  const writer = new Database(file);
  writer.pragma('wal_autocheckpoint = 0');
  writer.prepare("INSERT OR REPLACE INTO checkpoints (projection, position) VALUES ('bench-frames', 0)").run();
  writer.close();
  const counted = pinWalFrames(file);
  return {
    report(count) {
      const { frames, commits, byOwner } = counted();
      console.log(
        `read store: ${(frames / count).toFixed(2)} WAL frames, ${(commits / count).toFixed(2)} commits per create`,
      );
      for (const [owner, n] of [...byOwner].sort((a, b) => b[1] - a[1]))
        console.log(`  ${(n / count).toFixed(2).padStart(6)}  ${owner}`);
    },
  };
}

/** The event store's WAL frames per create: its WAL holds the warm-up's frames, so no write is needed to pin it. */
function eventStoreFrames(file: string): { report(count: number): void } {
  const counted = pinWalFrames(file);
  return {
    report(count) {
      const { frames, commits, byOwner } = counted();
      console.log(
        `event store: ${(frames / count).toFixed(2)} WAL frames, ${(commits / count).toFixed(2)} commits per create`,
      );
      for (const [owner, n] of [...byOwner].sort((a, b) => b[1] - a[1]))
        console.log(`  ${(n / count).toFixed(2).padStart(6)}  ${owner}`);
    },
  };
}

interface Node {
  id: number;
  children?: number[];
  callFrame: { functionName: string; url: string; lineNumber: number };
}
function summarizeProfile(file: string, fromUs: number, toUs: number, count: number): void {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as {
    nodes: Node[];
    startTime: number;
    samples: number[];
    timeDeltas: number[];
  };
  const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const label = (n: Node) =>
    `${n.callFrame.functionName || '(anon)'} ${n.callFrame.url.replace(/^.*\/(node_modules\/|src\/)/, '$1')}:${n.callFrame.lineNumber + 1}`;
  const self = new Map<string, number>();
  const total = new Map<string, number>();
  let t = profile.startTime;
  let busy = 0;
  profile.samples.forEach((id, i) => {
    const delta = profile.timeDeltas[i] ?? 0;
    t += delta;
    if (t < fromUs || t > toUs) return;
    const node = nodes.get(id)!;
    if (node.callFrame.functionName === '(idle)') return;
    busy += delta;
    const own =
      node.callFrame.url === '' && parent.has(id)
        ? `${label(node)} <- ${label(nodes.get(parent.get(id)!)!)}`
        : label(node);
    self.set(own, (self.get(own) ?? 0) + delta);
    const seen = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const l = label(nodes.get(at)!);
      if (seen.has(l)) continue;
      seen.add(l);
      total.set(l, (total.get(l) ?? 0) + delta);
    }
  });
  const top = Number(process.env.TOP ?? 45);
  const print = (m: Map<string, number>, filter: (k: string) => boolean) =>
    [...m]
      .filter(([k]) => filter(k))
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .forEach(([k, us]) => console.log(`  ${(us / count).toFixed(1).padStart(7)} µs  ${k}`));
  console.log(`${file}: busy ${(busy / count).toFixed(0)} µs per create (sampled)\n self:`);
  print(self, () => true);
  console.log(' total (src/ and packages):');
  print(total, (k) => / (src|node_modules)\//.test(k));
}

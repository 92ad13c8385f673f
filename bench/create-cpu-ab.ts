/**
 * create-cpu.ts for several source trees side by side, for differences of a few percent that a shared machine hides
 * between runs: each tree's layout runs at once on its own seeded data (its own database on PostgreSQL), and they
 * take batches of creates in turn, round after round, the order reversed every other round, so that a neighbour's
 * load falls on every tree alike. Per tree: the server's CPU per create (all threads, and the main threads'), idle
 * rate subtracted, median and mean of the lower half of the rounds (a neighbour's burst only ever adds CPU time).
 *   node bench/create-cpu-ab.ts trees=/path/a,/path/b [n=1000] [rounds=8] [conns=64] [layout=write] [store=postgres]
 * `trees`: checkouts of other commits, each with node_modules (a symbolic link to this one's does).
 */
import { resolve } from 'node:path';
import { tempDir } from '../test/support/temp-dir.ts';
import { startPostgresServer } from '../test/support/postgres-server.ts';
import { processCpuMs } from './support/process-cpu.ts';

const args = new Map(
  process.argv.slice(2).map((a) => [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)] as [string, string]),
);
const N = Number(args.get('n') ?? 1000);
const ROUNDS = Number(args.get('rounds') ?? 8);
const CONNS = Number(args.get('conns') ?? 64);
const layout = args.get('layout') ?? 'write';
const TREES = (args.get('trees') ?? resolve(import.meta.dirname, '..')).split(',').map((tree) => resolve(tree));

const server = args.get('store') === 'postgres' ? await startPostgresServer({ durable: true }) : undefined;
if (server)
  Object.assign(process.env, { TEST_POSTGRES_URL: server.url, TEST_STORES: 'postgres', TEST_POSTGRES_POOL_SIZE: '10' });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Tree {
  name: string;
  url: string;
  pids: number[];
  requests: Array<{ method: string; path: string; headers?: Record<string, string>; body?: unknown }>;
  idlePerMs: number;
  idleMainPerMs: number;
  cpu: number[];
  main: number[];
  stop(): Promise<void>;
}

const dirs: Array<{ cleanup(): void }> = [];
const trees: Tree[] = [];
let sent = 0;
async function creates(tree: Tree, count: number): Promise<void> {
  let left = count;
  await Promise.all(
    Array.from({ length: CONNS }, async () => {
      while (left-- > 0) {
        const request = tree.requests[sent++ % tree.requests.length]!;
        const res = await fetch(`${tree.url}${request.path}`, {
          method: request.method,
          headers: request.headers ?? {},
          body: request.body as string,
        });
        await res.text();
        if (res.status >= 300) throw new Error(`${tree.name}: status ${res.status}`);
      }
    }),
  );
}
/** Until the tree's processes spend under 2% of a core for 300 ms (snapshots and followers done). */
async function settled(tree: Tree): Promise<void> {
  for (let last = processCpuMs(tree.pids); ;) {
    await sleep(300);
    const now = processCpuMs(tree.pids);
    if (now - last < 6) return;
    last = now;
  }
}

try {
  for (const [i, path] of TREES.entries()) {
    await import(`${path}/test/support/fast-passwords.ts`);
    const processes = (await import(
      `${path}/bench/support/system-processes.ts`
    )) as typeof import('./support/system-processes.ts');
    const dir = tempDir();
    dirs.push(dir);
    const requests = await processes.seedSystem(dir.path, 10, 10, async () => {});
    const running = await processes.startLayout(layout as 'write', dir.path);
    trees.push({
      name: `${i}:${path}`,
      url: running.url,
      pids: running.pids,
      requests: requests.create,
      idlePerMs: 0,
      idleMainPerMs: 0,
      cpu: [],
      main: [],
      stop: () => running.stop(),
    });
  }
  for (const tree of trees) {
    await creates(tree, 2000); // past the JIT's tiering up
    await settled(tree);
  }
  for (const tree of trees) {
    const [all, main] = [processCpuMs(tree.pids), processCpuMs(tree.pids, 'main')];
    await sleep(1000);
    tree.idlePerMs = (processCpuMs(tree.pids) - all) / 1000;
    tree.idleMainPerMs = (processCpuMs(tree.pids, 'main') - main) / 1000;
  }
  for (let round = 0; round < ROUNDS; round++) {
    for (const tree of round % 2 === 0 ? trees : [...trees].reverse()) {
      const [all, main, at] = [processCpuMs(tree.pids), processCpuMs(tree.pids, 'main'), performance.now()];
      await creates(tree, N);
      await settled(tree);
      const wall = performance.now() - at;
      tree.cpu.push((processCpuMs(tree.pids) - all - tree.idlePerMs * wall) / N);
      tree.main.push((processCpuMs(tree.pids, 'main') - main - tree.idleMainPerMs * wall) / N);
    }
    console.log(`round ${round + 1}: ${trees.map((t) => `${t.cpu.at(-1)!.toFixed(3)}`).join(' / ')} ms per create`);
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const lowerHalf = (xs: number[]) => {
    const sorted = [...xs].sort((a, b) => a - b).slice(0, Math.max(1, Math.floor(xs.length / 2)));
    return sorted.reduce((a, b) => a + b, 0) / sorted.length;
  };
  for (const tree of trees)
    console.log(
      `${tree.name}: server CPU ${median(tree.cpu).toFixed(3)} / ${lowerHalf(tree.cpu).toFixed(3)} ms per create, ` +
        `main threads ${median(tree.main).toFixed(3)} / ${lowerHalf(tree.main).toFixed(3)} ` +
        "(median / lower half's mean)",
    );
} finally {
  for (const tree of trees) await tree.stop();
  await server?.stop();
  for (const dir of dirs) dir.cleanup();
}

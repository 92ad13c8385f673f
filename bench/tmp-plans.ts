/**
 * The console's operation pages over one party's 100,000 operations on the embedded read store:
 *   npm run bench:console                     (writes the "Console operations" section of docs/benchmarks.md)
 *   BENCH_OPERATIONS=20000 npm run bench:console  (a quick check; does not write the doc)
 * Builds the console_operations read model through the projection's own evolve (applyBatch, what the runner
 * and a rebuild do) from a generated history: BENCH_OPERATIONS operations of one distributor (plus a fifth as
 * many of another, so the party filter has something to exclude), each requested and most decided and
 * completed, over a year, with 5 keys, 2,000 phones, 40 merchants and memos. Then each console query
 * (findOperations: one page of 50, the total, and the page's position) is timed, median and p95 of 30 runs,
 * beside the baseline of the same run: a plain indexed SELECT of 50 documents of the party, newest first,
 * with raw better-sqlite3 on the same file.
 */
import Database from 'better-sqlite3';
const seenSql = new Set<string>();
const origPrepare = Database.prototype.prepare;
Database.prototype.prepare = function (this: Database.Database, sql: string) {
  if (/^SELECT/.test(sql) && sql.includes('console_operations')) seenSql.add(sql);
  return origPrepare.call(this, sql) as never;
} as never;
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { openSqliteReadStore } from '../src/adapters/sqlite/sqlite-read-store.ts';
import type { OperationRequested } from '../src/domain/events.ts';
import type { ReadStore } from '../src/ports/read-store.ts';
import {
  allOperations,
  findOperations,
  type OperationFilter,
  type PageRequest,
} from '../src/projections/console-operation-queries.ts';
import {
  amountKey,
  CONSOLE_OPERATIONS_COLLECTION,
  CONSOLE_OPERATIONS_PROJECTION,
  consoleOperationsProjection,
} from '../src/projections/console-operations.ts';
import type { ProjectedEvent } from '../src/projections/projection.ts';
import { applyBatch } from '../src/projections/projection-runner.ts';
import { tempDir } from '../test/support/temp-dir.ts';
import { machineNote, writeBenchSection } from './support/report.ts';

const OPERATIONS = Number(process.env.BENCH_OPERATIONS ?? 100_000);
const RUNS = 30;
const AIM_MS = 200;
const HEADING = '## Console operations (npm run bench:console)';
const SCALE = 2;
const T0 = Date.parse('2025-01-01T00:00:00.000Z');
const YEAR_MS = 365 * 86_400_000;

const party = { type: 'distributor' as const, id: randomUUID() };
const otherParty = { type: 'distributor' as const, id: randomUUID() };
const PARTY = `distributor:${party.id}`;
const keys = Array.from({ length: 5 }, (_, i) => `key_${String(i).padStart(32, '0')}`);
const phones = Array.from({ length: 2000 }, (_, i) => `+2348${String(100_000_000 + i * 7919).slice(0, 9)}`);
const merchants = Array.from({ length: 40 }, (_, i) => ({
  id: randomUUID(),
  name: `Shop ${i}`,
  shortCode: String(20_000 + i),
}));
/** An operation of the party with a memo (i % 3 !== 0), searched for by its whole memo. */
const RARE = Math.floor(OPERATIONS / 2) + 2 - ((Math.floor(OPERATIONS / 2) + 2) % 3 === 0 ? 1 : 0);
const MEMOS = ['school fees', 'rent', 'float top-up', 'groceries', 'salary advance', 'market stall', 'transport'];

function requested(i: number, of: typeof party, count: number): OperationRequested['data'] {
  const operationID = `op_${randomUUID().replaceAll('-', '')}`;
  const toMerchant = i % 10 === 0;
  const merchant = merchants[i % merchants.length]!;
  const phone = phones[(i * 7) % phones.length]!;
  const amount = ((i * 7919) % 500_000) / 100 + 1;
  return {
    operationID,
    party: of,
    keyID: keys[i % keys.length]!,
    operationType: i % 4 === 3 ? 'cash-out-fulfillment' : 'cash-in',
    amount: amount.toFixed(SCALE),
    fee: '0.00',
    payer: { kind: 'distributor', id: of.id },
    payee: toMerchant ? { kind: 'merchant', id: merchant.id } : { kind: 'individual', id: phone },
    payerName: 'Bench Agents',
    payerShortCode: '1001',
    counterparty: toMerchant
      ? { kind: 'merchant', ...merchant }
      : { kind: 'individual', id: phone, name: `Customer ${i % 2000}` },
    memo: i % 3 === 0 ? null : `${MEMOS[i % MEMOS.length]} ${i}`,
    cashOutFulfillmentType: null,
    cashOutFulfillmentID: null,
    volumeDay: null,
    createdAt: new Date(T0 + Math.floor((i / count) * YEAR_MS)).toISOString(),
  };
}

/** The operation's events: requested, then (most) approved and completed, some rejected or failed. */
function history(data: OperationRequested['data'], i: number): Array<{ type: string; data: unknown }> {
  const at = (minutes: number) => new Date(Date.parse(data.createdAt) + minutes * 60_000).toISOString();
  const { operationID } = data;
  const events: Array<{ type: string; data: unknown }> = [{ type: 'OperationRequested', data }];
  const fate = i % 20;
  if (fate === 0) return events; // pending
  if (fate === 1)
    return [
      ...events,
      { type: 'OperationRejected', data: { operationID, rejectedBy: 'user', reason: 'not ours', rejectedAt: at(5) } },
    ];
  events.push({ type: 'OperationApproved', data: { operationID, approvedBy: 'user', approvedAt: at(5) } });
  events.push({ type: 'OperationSubmitted', data: { operationID, sequenceNumber: i, submittedAt: at(6) } });
  if (fate === 2)
    return [
      ...events,
      { type: 'OperationFailed', data: { operationID, lastError: 'ledger refused', failedAt: at(7) } },
    ];
  return [
    ...events,
    {
      type: 'OperationCompleted',
      data: {
        operationID,
        blockchainID: `0x${i.toString(16)}`,
        walletOperationID: `wo_${i}`,
        sequenceNumber: i,
        completedAt: at(7),
      },
    },
  ];
}

async function fill(readStore: ReadStore): Promise<{ sampleOperationID: string }> {
  const projection = consoleOperationsProjection({ assetScale: SCALE });
  let position = 0;
  let batch: ProjectedEvent[] = [];
  let sampleOperationID = '';
  const flush = async () => {
    await applyBatch(readStore, projection as never, batch, {
      collection: CONSOLE_OPERATIONS_COLLECTION.name,
      checkpoint: CONSOLE_OPERATIONS_PROJECTION,
    });
    batch = [];
  };
  const add = async (data: OperationRequested['data'], i: number) => {
    for (const event of history(data, i))
      batch.push({ ...event, position: (position += 1), createdAt: data.createdAt });
    if (batch.length >= 20_000) await flush();
  };
  for (let i = 0; i < OPERATIONS; i += 1) {
    const data = requested(i, party, OPERATIONS);
    if (i === Math.floor(OPERATIONS / 2)) sampleOperationID = data.operationID;
    await add(data, i);
    if (i % 5 === 4) await add(requested(i, otherParty, OPERATIONS), i); // another party's, interleaved in time
  }
  await flush();
  return { sampleOperationID };
}

async function time(run: () => Promise<unknown>): Promise<{ median: number; p95: number }> {
  await run(); // warm the statement cache and the pages
  const samples: number[] = [];
  for (let i = 0; i < RUNS; i += 1) {
    const start = performance.now();
    await run();
    samples.push(performance.now() - start);
  }
  samples.sort((a, b) => a - b);
  return { median: samples[Math.floor(RUNS / 2)]!, p95: samples[Math.floor(RUNS * 0.95)]! };
}

async function main(): Promise<void> {
  const started = Date.now();
  const dir = await tempDir('bench-console-');
  const file = join(dir.path, 'read-models.sqlite');
  const readStore = openSqliteReadStore({ file });
  await readStore.defineCollections([CONSOLE_OPERATIONS_COLLECTION]);
  const fillStart = Date.now();
  const { sampleOperationID } = await fill(readStore);
  const fillSeconds = (Date.now() - fillStart) / 1000;
  const mine = await readStore.count(CONSOLE_OPERATIONS_COLLECTION.name, { where: { party: PARTY } });
  const all = await readStore.count(CONSOLE_OPERATIONS_COLLECTION.name);

  const raw = new Database(file, { readonly: true });
  const baselineStatement = raw.prepare(
    `SELECT doc FROM console_operations WHERE json_extract(doc, '$.party') = ? ORDER BY json_extract(doc, '$.sortKey') DESC LIMIT 50`,
  );
  const baseline = await time(async () =>
    baselineStatement.all(PARTY).map((row) => JSON.parse((row as { doc: string }).doc)),
  );

  const first: PageRequest = { order: 'newest', limit: 50 };
  // The cursor of a page halfway down the list: what "Next" reaches after ~1,000 pages.
  const halfway = (
    await readStore.find<{ id: string; sortKey: string }>(CONSOLE_OPERATIONS_COLLECTION.name, {
      where: { party: PARTY },
      sort: [['sortKey', 'desc']],
      skip: Math.floor(mine / 2),
      limit: 1,
    })
  )[0]!.sortKey;
  const base: OperationFilter = { party: PARTY };
  const month = { from: '2025-06-01T00:00:00.000Z', to: '2025-07-01T00:00:00.000Z' };
  const scenarios: Array<{ name: string; filter: OperationFilter; page?: PageRequest }> = [
    { name: 'first page, newest first, no filter', filter: base },
    {
      name: 'a page halfway down (keyset, row 50,000)',
      filter: base,
      page: { order: 'newest', limit: 50, after: halfway },
    },
    { name: 'oldest first', filter: base, page: { order: 'oldest', limit: 50 } },
    { name: 'status = failed (5 %)', filter: { ...base, status: 'failed' } },
    { name: 'type = cash-out-fulfillment (25 %)', filter: { ...base, operationType: 'cash-out-fulfillment' } },
    { name: 'one key (20 %)', filter: { ...base, keyID: keys[2]! } },
    { name: 'one phone (counterparty)', filter: { ...base, counterparty: phones[7]! } },
    { name: 'one month (date range)', filter: { ...base, ...month } },
    {
      name: 'amount 1,000.00 to 1,100.00',
      filter: { ...base, minAmountKey: amountKey('1000', SCALE), maxAmountKey: amountKey('1100', SCALE) },
    },
    {
      name: 'status + month + amount ≥ 2,000',
      filter: { ...base, status: 'completed', ...month, minAmountKey: amountKey('2000', SCALE) },
    },
    { name: 'search a memo word ("rent", many)', filter: { ...base, search: 'rent' } },
    {
      name: 'search a rare memo text (one match)',
      filter: { ...base, search: `${MEMOS[RARE % MEMOS.length]} ${RARE}` },
    },
    { name: 'search an operation id prefix (one match)', filter: { ...base, search: sampleOperationID.slice(3, 15) } },
    { name: 'search a phone (digits, no +)', filter: { ...base, search: phones[7]!.slice(1, 10) } },
  ];
  const results: Array<{ name: string; total: number; median: number; p95: number }> = [];
  for (const scenario of scenarios) {
    let total = 0;
    const timing = await time(async () => {
      const page = await findOperations(readStore, scenario.filter, scenario.page ?? first);
      total = page.total;
    });
    results.push({ name: scenario.name, total, ...timing });
    for (const sql of seenSql) {
      const plan = (raw.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...new Array<null>(sql.split("?").length - 1).fill(null)) as Array<{ detail: string }>).map((r) => r.detail);
      console.log(`   ${sql.replace(/json_extract\(doc, '\$\.(\w+)'\)/g, '$1').slice(0, 230)}\n      -> ${plan.join(' / ')}`);
    }
    seenSql.clear();
    console.log(`${scenario.name}: ${timing.median.toFixed(1)} ms (p95 ${timing.p95.toFixed(1)}), ${total} match`);
  }
  const exportStart = performance.now();
  let exported = 0;
  for await (const _row of allOperations(readStore, base, 'newest')) exported += 1;
  const exportMs = performance.now() - exportStart;
  raw.close();
  await readStore.close();
  await dir.cleanup();

  const fmt = (n: number) => n.toLocaleString('en-US');
  const worst = Math.max(...results.map((r) => r.p95));
  const section = [
    HEADING,
    '',
    machineNote(),
    `${fmt(mine)} operations of one distributor (${fmt(all)} documents in console_operations), built through the projection's evolve (applyBatch) in ${fillSeconds.toFixed(1)} s.`,
    "Each row is one console page: findOperations (50 rows by keyset, the total count, and the page's position when it is not the first), median and p95 of 30 runs.",
    "Baseline: a plain indexed SELECT of the party's 50 newest documents with raw better-sqlite3 + JSON.parse on the same file.",
    '',
    '| query | matches | median ms | p95 ms | vs baseline (median) |',
    '|---|---:|---:|---:|---:|',
    `| baseline: indexed SELECT of 50 | ${fmt(mine)} | ${baseline.median.toFixed(2)} | ${baseline.p95.toFixed(2)} | 1.0x |`,
    ...results.map(
      (r) =>
        `| ${r.name} | ${fmt(r.total)} | ${r.median.toFixed(1)} | ${r.p95.toFixed(1)} | ${(r.median / baseline.median).toFixed(1)}x |`,
    ),
    '',
    `Aim: every page under ${AIM_MS} ms: ${worst < AIM_MS ? 'met' : 'NOT met'} (worst p95 ${worst.toFixed(1)} ms).`,
    `CSV export's read (allOperations, batches of 500 by keyset) of all ${fmt(exported)} rows: ${(exportMs / 1000).toFixed(2)} s.`,
    `Whole run: ${Math.round((Date.now() - started) / 1000)} s.`,
    '',
  ].join('\n');


}

await main();

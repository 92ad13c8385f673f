/**
 * Read-side throughput and latency at 64 connections, the load generator in its own process:
 *   npm run bench:read       (writes the "Read side" section of docs/benchmarks.md)
 * GET /api/v1/distributors/{id}/operations?limit=100 and GET /api/v1/distributors/{id}/balance on a system
 * seeded with OPERATIONS operations over DISTRIBUTORS distributors, beside baselines measured in the same run:
 * an express handler doing one indexed better-sqlite3 SELECT of 100 rows holding the very same documents
 * (index on (party, createdAt, id), same pragmas), JSON.parse of each and res.json; and one primary-key SELECT
 * for the balance.
 */
import { randomUUID } from 'node:crypto';
import express from 'express';
import { openSqliteDatabase } from '../src/adapters/sqlite/sqlite-database.ts';
import type { OperationRequested, WalletRef } from '../src/domain/events.ts';
import { streams } from '../src/domain/streams.ts';
import type { StreamAppend } from '../src/ports/event-store.ts';
import { BALANCES_COLLECTION, type BalanceDoc } from '../src/projections/balances.ts';
import { DISTRIBUTOR_OPERATIONS_COLLECTION, type DistributorOperationDoc } from '../src/projections/distributor-operations.ts';
import { allProjections } from '../src/projections/index.ts';
import { projectionStatus } from '../src/projections/rebuild.ts';
import { startTestSystem, type TestSystem } from '../test/support/system.ts';
import { tempDir } from '../test/support/temp-dir.ts';
import { machineNote, writeBenchSection } from './support/report.ts';
import { listen, runLoad } from './support/run-load.ts';
import type { LoadResult, LoadSpec } from './support/load-generator.ts';

const CONNECTIONS = 64;
const DURATION_SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const WARMUP_SECONDS = 2;
const DISTRIBUTORS = 10;
const OPERATIONS = Number(process.env.BENCH_OPERATIONS ?? 5000);
const APPEND_BATCH = 500;
const PAGE = 100;
const HEADING = '## Read side (npm run bench:read)';

async function measure(url: string, requests: LoadSpec['requests']): Promise<LoadResult> {
  await runLoad({ url, connections: CONNECTIONS, durationSeconds: WARMUP_SECONDS, requests });
  return runLoad({ url, connections: CONNECTIONS, durationSeconds: DURATION_SECONDS, requests });
}

/** A distributor's operation as the write side records it: cash-in to an individual or a merchant, or a cash-out-fulfillment. */
function operationEvents(i: number, distributor: { id: string; name: string; shortCode: string }, createdAt: Date): StreamAppend {
  const operationID = `op_${randomUUID().replaceAll('-', '')}`;
  const payerWallet: WalletRef = { kind: 'distributor', id: distributor.id };
  const phone = `+23481234${String(50000 + (i % 40000)).padStart(5, '0')}`;
  const kind = i % 10 < 6 ? 'individual' : i % 10 < 8 ? 'merchant' : 'fulfillment';
  const at = createdAt.toISOString();
  const data: OperationRequested['data'] = {
    operationID,
    party: { type: 'distributor', id: distributor.id },
    keyID: 'key_benchbenchbench01',
    operationType: kind === 'fulfillment' ? 'cash-out-fulfillment' : 'cash-in',
    amount: `${(i % 900) + 10}.50`,
    fee: '0.00',
    payer: kind === 'fulfillment' ? { kind: 'individual', id: phone } : payerWallet,
    payee: kind === 'fulfillment' ? payerWallet : kind === 'merchant' ? { kind: 'merchant', id: `m-${i % 50}` } : { kind: 'individual', id: phone },
    payerName: kind === 'fulfillment' ? 'Bench Customer' : distributor.name,
    payerShortCode: kind === 'fulfillment' ? null : distributor.shortCode,
    counterparty: kind === 'merchant' ? { kind: 'merchant', id: `m-${i % 50}`, name: `Merchant ${i % 50}`, shortCode: String(4000 + (i % 50)) } : { kind: 'individual', id: phone, name: 'Bench Customer' },
    memo: i % 3 === 0 ? `invoice ${i}` : null,
    cashOutFulfillmentType: kind === 'fulfillment' ? 'cash' : null,
    cashOutFulfillmentID: kind === 'fulfillment' ? `RCPT-${i}` : null,
    volumeDay: null,
    createdAt: at,
  };
  const events: StreamAppend['events'] = [{ type: 'OperationRequested', data, metadata: { actor: 'apikey:bench' } }];
  // Most are completed, so the documents carry what a real list shows (blockchain and wallet operation ids).
  if (i % 5 !== 0) {
    const later = new Date(createdAt.getTime() + 60_000).toISOString();
    events.push(
      { type: 'OperationApproved', data: { operationID, approvedBy: 'user-checker', approvedAt: later } },
      { type: 'OperationSubmitted', data: { operationID, sequenceNumber: 40_000 + i, submittedAt: later } },
      { type: 'OperationCompleted', data: { operationID, blockchainID: randomUUID().replaceAll('-', '').repeat(2), walletOperationID: `wo_${randomUUID().replaceAll('-', '')}`, sequenceNumber: 40_000 + i, completedAt: later } },
    );
  }
  return { stream: streams.operation(operationID), events, expectedRevision: 'no_stream' };
}

interface Seeded {
  sys: TestSystem;
  requests: { list: LoadSpec['requests']; balance: LoadSpec['requests'] };
  seedSeconds: number;
}

async function seed(): Promise<Seeded> {
  const started = performance.now();
  const sys = await startTestSystem();
  const list: LoadSpec['requests'] = [];
  const balance: LoadSpec['requests'] = [];
  const distributors: Array<{ id: string; name: string; shortCode: string }> = [];
  for (let d = 0; d < DISTRIBUTORS; d++) {
    const distributor = await sys.party('distributor');
    const { apiKey } = await distributor.key({ permissions: 'read-balance,read-transactions' });
    await sys.credit(distributor.wallet, '1000000.00');
    distributors.push({ id: distributor.ref.id, name: distributor.name, shortCode: distributor.shortCode });
    const headers = { authorization: `Bearer ${apiKey}` };
    list.push({ method: 'GET', path: `/api/v1/distributors/${distributor.ref.id}/operations?limit=${PAGE}`, headers });
    balance.push({ method: 'GET', path: `/api/v1/distributors/${distributor.ref.id}/balance`, headers });
  }
  const t0 = Date.now() - OPERATIONS * 60_000;
  for (let from = 0; from < OPERATIONS; from += APPEND_BATCH) {
    const batch: StreamAppend[] = [];
    for (let i = from; i < Math.min(OPERATIONS, from + APPEND_BATCH); i++) batch.push(operationEvents(i, distributors[i % DISTRIBUTORS]!, new Date(t0 + i * 60_000)));
    await sys.system.stores.eventStore.appendMulti(batch);
  }
  const projections = allProjections(sys.config.ASSET_SCALE);
  for (;;) {
    const status = await projectionStatus(sys.system.stores, projections, 1);
    if (status.every((s) => s.lagEvents === 0)) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return { sys, requests: { list, balance }, seedSeconds: (performance.now() - started) / 1000 };
}

/** The baseline tables hold the very documents the projections built. */
async function baselineApp(sys: TestSystem, dir: string) {
  const db = openSqliteDatabase(`${dir}/baseline.sqlite`);
  db.exec('CREATE TABLE operations (id TEXT PRIMARY KEY, party TEXT NOT NULL, createdAt TEXT NOT NULL, doc TEXT NOT NULL)');
  db.exec('CREATE INDEX operations_by_party ON operations (party, createdAt, id)');
  db.exec('CREATE TABLE balances (id TEXT PRIMARY KEY, doc TEXT NOT NULL)');
  const docs = await sys.system.stores.readStore.find<DistributorOperationDoc>(DISTRIBUTOR_OPERATIONS_COLLECTION.name);
  const balances = await sys.system.stores.readStore.find<BalanceDoc>(BALANCES_COLLECTION.name);
  const insert = db.prepare('INSERT INTO operations (id, party, createdAt, doc) VALUES (?, ?, ?, ?)');
  const insertBalance = db.prepare('INSERT INTO balances (id, doc) VALUES (?, ?)');
  db.transaction(() => {
    for (const doc of docs) insert.run(doc.id, doc.distributorID, doc.createdAt, JSON.stringify(doc));
    for (const doc of balances) insertBalance.run(doc.id, JSON.stringify(doc));
  })();
  const page = db.prepare('SELECT doc FROM operations WHERE party = ? ORDER BY createdAt DESC, id DESC LIMIT ?').pluck();
  const one = db.prepare('SELECT doc FROM balances WHERE id = ?').pluck();
  const app = express();
  app.get('/api/v1/distributors/:id/operations', (req, res) => {
    res.json((page.all(req.params.id, PAGE) as string[]).map((doc) => JSON.parse(doc) as unknown));
  });
  app.get('/api/v1/distributors/:id/balance', (req, res) => {
    const doc = one.get(`distributor:${req.params.id}`) as string | undefined;
    res.json({ balance: doc ? (JSON.parse(doc) as BalanceDoc).balance : '0.00' });
  });
  return { app, db, documents: docs.length };
}

function row(name: string, result: LoadResult, baseline: LoadResult, note = ''): string {
  const ratio = result.requestsPerSecond / baseline.requestsPerSecond;
  return `| ${name} | ${result.requestsPerSecond.toFixed(0)} | ${result.p50Ms.toFixed(1)} | ${result.p99Ms.toFixed(1)} | ${(ratio * 100).toFixed(0)}% | ${result.non2xx + result.errors} | ${note} |`;
}

async function main(): Promise<void> {
  const started = performance.now();
  console.log(`bench:read: ${CONNECTIONS} connections, ${DURATION_SECONDS} s per scenario, ${OPERATIONS} operations over ${DISTRIBUTORS} distributors`);
  const { sys, requests, seedSeconds } = await seed();
  const dir = tempDir('read-bench-');
  const baseline = await baselineApp(sys, dir.path);
  const baselineServer = await listen(baseline.app);
  try {
    // Both sides answer the same thing before anything is measured.
    const [first] = requests.list;
    const ours = (await (await fetch(`${sys.baseUrl}${first!.path}`, { headers: first!.headers })).json()) as Array<{ operationID: string }>;
    const theirs = (await (await fetch(`${baselineServer.url}${first!.path}`)).json()) as Array<{ operationID: string }>;
    if (ours.length !== PAGE || ours.map((o) => o.operationID).join() !== theirs.map((o) => o.operationID).join()) throw new Error('wallet-ops and the baseline return different pages');
    console.log(`seeded in ${seedSeconds.toFixed(1)} s; ${baseline.documents} documents; a page is ${JSON.stringify(ours).length} bytes`);

    const baseList = await measure(baselineServer.url, requests.list);
    console.log('baseline list', baseList);
    const list = await measure(sys.baseUrl, requests.list);
    console.log('wallet-ops list', list);
    const baseBalance = await measure(baselineServer.url, requests.balance);
    console.log('baseline balance', baseBalance);
    const balance = await measure(sys.baseUrl, requests.balance);
    console.log('wallet-ops balance', balance);

    const section = [
      HEADING,
      '',
      machineNote(),
      `${OPERATIONS} distributor operations (80% completed) over ${DISTRIBUTORS} distributors, appended with appendMulti and projected before the run;`,
      `${CONNECTIONS} connections, ${DURATION_SECONDS} s each after a ${WARMUP_SECONDS} s warm-up, autocannon in its own process, requests cycling over the ${DISTRIBUTORS} distributors and their keys.`,
      `The list baseline is an express handler doing one indexed better-sqlite3 SELECT of ${PAGE} rows (the same documents, index on (party, createdAt, id), WAL, same pragmas), JSON.parse of each, res.json;`,
      'the balance baseline one primary-key SELECT. Baselines do no authentication, no query validation and no mapping to the contract object.',
      '',
      '| scenario | req/s | p50 ms | p99 ms | vs baseline | non-2xx + errors | note |',
      '|---|---:|---:|---:|---:|---:|---|',
      row(`baseline: indexed SELECT of ${PAGE} documents`, baseList, baseList),
      row(`wallet-ops GET /distributors/{id}/operations?limit=${PAGE}`, list, baseList, list.requestsPerSecond / baseList.requestsPerSecond >= 0.6 ? 'aim (>= 60%) met' : 'below the 60% aim'),
      row('baseline: primary-key SELECT of a balance', baseBalance, baseBalance),
      row('wallet-ops GET /distributors/{id}/balance', balance, baseBalance),
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

await main();

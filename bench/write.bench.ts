/**
 * Create-operation throughput and latency at 64 connections, the load generator in its own process:
 *   npm run bench:write      (writes the "Write side" section of docs/benchmarks.md)
 * Beside two baselines measured in the same run: a bare express handler returning the same JSON, and an
 * express handler that does one better-sqlite3 insert of a similar row with the same durability setting
 * (WAL, synchronous=FULL). Then the peer rows: the same read-decide-append with Emmett (bench/support/peer-emmett.ts).
 */
import { randomUUID } from 'node:crypto';
import express from 'express';
import { openSqliteDatabase } from '../src/adapters/sqlite/sqlite-database.ts';
import { startTestSystem } from '../test/support/system.ts';
import { tempDir } from '../test/support/temp-dir.ts';
import { machineNote, writeBenchSection } from './support/report.ts';
import { listen, runLoad } from './support/run-load.ts';
import { peerComparison } from './support/peer-emmett.ts';
import type { LoadResult, LoadSpec } from './support/load-generator.ts';

const CONNECTIONS = 64;
const DURATION_SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const PARTIES = 100;

const sampleBody = JSON.stringify({ operationType: 'cash-in', amount: '1.00', phoneTo: '+2348123456781', memo: 'bench' });
const baselineRequests = (): LoadSpec['requests'] => [
  { method: 'POST', path: '/api/v1/distributors/d1/operations', headers: { 'content-type': 'application/json', authorization: 'Bearer x' }, body: sampleBody },
];

async function bareExpress(): Promise<LoadResult> {
  const app = express();
  app.post('/api/v1/distributors/:id/operations', express.json(), (_req, res) => {
    res.json({ operationID: `op_${randomUUID().replaceAll('-', '')}` });
  });
  const server = await listen(app);
  try {
    return await runLoad({ url: server.url, connections: CONNECTIONS, durationSeconds: DURATION_SECONDS, requests: baselineRequests() });
  } finally {
    await server.close();
  }
}

async function expressWithInsert(): Promise<LoadResult> {
  const dir = tempDir();
  const db = openSqliteDatabase(`${dir.path}/baseline.sqlite`);
  db.exec('CREATE TABLE operations (position INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT UNIQUE, stream TEXT, data TEXT, created_at TEXT)');
  const insert = db.prepare('INSERT INTO operations (id, stream, data, created_at) VALUES (?, ?, ?, ?)');
  const app = express();
  app.post('/api/v1/distributors/:id/operations', express.json(), (req, res) => {
    const operationID = `op_${randomUUID().replaceAll('-', '')}`;
    insert.run(operationID, `operation-${operationID}`, JSON.stringify(req.body), new Date().toISOString());
    res.json({ operationID });
  });
  const server = await listen(app);
  try {
    return await runLoad({ url: server.url, connections: CONNECTIONS, durationSeconds: DURATION_SECONDS, requests: baselineRequests() });
  } finally {
    await server.close();
    db.close();
    dir.cleanup();
  }
}

async function walletOps(parties: number): Promise<LoadResult & { created: number }> {
  // The write API alone, as it runs behind a load balancer in production; projections and executor elsewhere.
  const sys = await startTestSystem({}, undefined, ['write-api']);
  try {
    const phone = await sys.individual('+2348123456781', 'Bench Customer');
    const requests: LoadSpec['requests'] = [];
    for (let i = 0; i < parties; i++) {
      const distributor = await sys.party('distributor');
      const { apiKey } = await distributor.key({ permissions: 'perform-operations' });
      await sys.credit(distributor.wallet, '1000000000.00');
      requests.push({
        method: 'POST',
        path: `/api/v1/distributors/${distributor.ref.id}/operations`,
        headers: { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` },
        body: JSON.stringify({ operationType: 'cash-in', amount: '1.00', phoneTo: phone, memo: 'bench' }),
      });
    }
    const before = await sys.system.stores.eventStore.headPosition();
    const result = await runLoad({ url: sys.baseUrl, connections: CONNECTIONS, durationSeconds: DURATION_SECONDS, requests });
    const created = (await sys.system.stores.eventStore.readAll({ fromPosition: before + 1, filter: { eventTypes: ['OperationRequested'] } })).length;
    return { ...result, created };
  } finally {
    await sys.close();
  }
}

function row(name: string, result: LoadResult, baseline: LoadResult, note = ''): string {
  const ratio = result.requestsPerSecond / baseline.requestsPerSecond;
  return `| ${name} | ${result.requestsPerSecond.toFixed(0)} | ${result.p50Ms.toFixed(1)} | ${result.p99Ms.toFixed(1)} | ${(ratio * 100).toFixed(0)}% | ${result.non2xx} | ${note} |`;
}

async function main(): Promise<void> {
  const started = performance.now();
  console.log(`bench:write: ${CONNECTIONS} connections, ${DURATION_SECONDS} s per scenario`);
  const bare = await bareExpress();
  console.log('bare express', bare);
  const insert = await expressWithInsert();
  console.log('express + one synced insert', insert);
  const spread = await walletOps(PARTIES);
  console.log(`wallet-ops, ${PARTIES} parties`, spread);
  const oneKey = await walletOps(1);
  console.log('wallet-ops, one key', oneKey);
  const peer = await peerComparison(DURATION_SECONDS);

  const section = [
    '## Write side (npm run bench:write)',
    '',
    machineNote(),
    `POST create-operation (cash-in of 1.00 to a registered phone), ${CONNECTIONS} connections, ${DURATION_SECONDS} s each, autocannon in its own process.`,
    'Ratios are against the insert baseline (an express handler doing one better-sqlite3 insert, WAL, synchronous=FULL).',
    '',
    '| scenario | req/s | p50 ms | p99 ms | vs insert baseline | non-2xx | note |',
    '|---|---:|---:|---:|---:|---:|---|',
    row('bare express, same JSON', bare, insert),
    row('express + one synced insert (baseline)', insert, insert),
    row(`wallet-ops, spread over ${PARTIES} parties and keys`, spread, insert, `${spread.created} operations appended`),
    row('wallet-ops, all on one key and payer', oneKey, insert, `${oneKey.created} operations appended; ${(oneKey.requestsPerSecond / spread.requestsPerSecond).toFixed(2)}x the 100-party rate`),
    '',
    'Each wallet-ops create reads the payer wallet stream (cached by revision), checks the rules, and appends the operation',
    'and the hold in one atomic multi-stream append, durable (fsync) before the response; concurrent appends share one',
    'commit (group commit). Creates for one payer are queued in the process so that they do not collide into retries.',
    '',
    ...peer,
    `Whole run: ${((performance.now() - started) / 1000).toFixed(0)} s.`,
    '',
  ].join('\n');
  writeBenchSection('## Write side (npm run bench:write)', section);
  console.log(section);
}

await main();

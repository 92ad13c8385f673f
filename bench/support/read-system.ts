/**
 * The read benches' system: OPERATIONS distributor operations over DISTRIBUTORS distributors, projected, with
 * a key per distributor; and the baseline tables holding the very same documents. Shared by bench:read and
 * bench:profile.
 */
import { randomUUID } from 'node:crypto';
import express from 'express';
import { openSqliteDatabase } from '../../src/adapters/sqlite/sqlite-database.ts';
import type { OperationRequested, WalletRef } from '../../src/domain/events.ts';
import { streams } from '../../src/domain/streams.ts';
import type { StreamAppend } from '../../src/ports/event-store.ts';
import { BALANCES_COLLECTION, type BalanceDoc } from '../../src/projections/balances.ts';
import {
  DISTRIBUTOR_OPERATIONS_COLLECTION,
  type DistributorOperationDoc,
} from '../../src/projections/distributor-operations.ts';
import { allProjections } from '../../src/projections/index.ts';
import { projectionStatus } from '../../src/projections/rebuild.ts';
import { startTestSystem, type TestSystem } from '../../test/support/system.ts';
import type { LoadSpec } from './load-generator.ts';

export const DISTRIBUTORS = 10;
export const OPERATIONS = Number(process.env.BENCH_OPERATIONS ?? 5000);
const APPEND_BATCH = 500;
export const PAGE = 100;

/** A distributor's operation as the write side records it: cash-in to an individual or a merchant, or a cash-out-fulfillment. */
export function operationEvents(
  i: number,
  distributor: { id: string; name: string; shortCode: string },
  createdAt: Date,
): StreamAppend {
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
    payee:
      kind === 'fulfillment'
        ? payerWallet
        : kind === 'merchant'
          ? { kind: 'merchant', id: `m-${i % 50}` }
          : { kind: 'individual', id: phone },
    payerName: kind === 'fulfillment' ? 'Bench Customer' : distributor.name,
    payerShortCode: kind === 'fulfillment' ? null : distributor.shortCode,
    counterparty:
      kind === 'merchant'
        ? { kind: 'merchant', id: `m-${i % 50}`, name: `Merchant ${i % 50}`, shortCode: String(4000 + (i % 50)) }
        : { kind: 'individual', id: phone, name: 'Bench Customer' },
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
      {
        type: 'OperationCompleted',
        data: {
          operationID,
          blockchainID: randomUUID().replaceAll('-', '').repeat(2),
          walletOperationID: `wo_${randomUUID().replaceAll('-', '')}`,
          sequenceNumber: 40_000 + i,
          completedAt: later,
        },
      },
    );
  }
  return { stream: streams.operation(operationID), events, expectedRevision: 'no_stream' };
}

export interface Seeded {
  sys: TestSystem;
  requests: { list: LoadSpec['requests']; balance: LoadSpec['requests'] };
  seedSeconds: number;
}

export async function seed(): Promise<Seeded> {
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
    for (let i = from; i < Math.min(OPERATIONS, from + APPEND_BATCH); i++)
      batch.push(operationEvents(i, distributors[i % DISTRIBUTORS]!, new Date(t0 + i * 60_000)));
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

/**
 * A document as the baselines hold it: without the serialized API object the read model keeps for wallet-ops'
 * own lists (issue 28), which a baseline would only pay to parse.
 */
export const withoutApiText = ({
  apiText: _,
  ...doc
}: DistributorOperationDoc): Omit<DistributorOperationDoc, 'apiText'> => doc;

/** The baseline tables hold the very documents the projections built (without their API text). */
export async function baselineApp(sys: TestSystem, dir: string) {
  const db = openSqliteDatabase(`${dir}/baseline.sqlite`);
  db.exec(
    'CREATE TABLE operations (id TEXT PRIMARY KEY, party TEXT NOT NULL, createdAt TEXT NOT NULL, doc TEXT NOT NULL)',
  );
  db.exec('CREATE INDEX operations_by_party ON operations (party, createdAt, id)');
  db.exec('CREATE TABLE balances (id TEXT PRIMARY KEY, doc TEXT NOT NULL)');
  const docs = await sys.system.stores.readStore.find<DistributorOperationDoc>(DISTRIBUTOR_OPERATIONS_COLLECTION.name);
  const balances = await sys.system.stores.readStore.find<BalanceDoc>(BALANCES_COLLECTION.name);
  const insert = db.prepare('INSERT INTO operations (id, party, createdAt, doc) VALUES (?, ?, ?, ?)');
  const insertBalance = db.prepare('INSERT INTO balances (id, doc) VALUES (?, ?)');
  db.transaction(() => {
    for (const doc of docs) insert.run(doc.id, doc.distributorID, doc.createdAt, JSON.stringify(withoutApiText(doc)));
    for (const doc of balances) insertBalance.run(doc.id, JSON.stringify(doc));
  })();
  const page = db
    .prepare('SELECT doc FROM operations WHERE party = ? ORDER BY createdAt DESC, id DESC LIMIT ?')
    .pluck();
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

/** Express and nothing else: the balance's route answering a constant object of the balance's shape (bench:read's and bench:profile's baseline). */
export function bareExpressApp(): express.Express {
  const app = express();
  const body = { balance: '1000000.00', available: '1000000.00', held: '0.00' };
  app.get('/api/v1/distributors/:id/balance', (_req, res) => {
    res.json(body);
  });
  return app;
}

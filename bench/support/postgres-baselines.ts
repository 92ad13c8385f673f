/**
 * The baselines of bench:write and bench:read on PostgreSQL (issue 28), on the very server the stores use, each in a
 * fresh database of its own, through a pg pool of 10 (POSTGRES_POOL_SIZE's default):
 * - the floor of a create: express doing one INSERT of a similar row per request (synchronous_commit as the server
 *   has it: on, so a commit waits for its WAL flush);
 * - the list: one indexed SELECT of 100 JSONB documents (the documents the projections built, without their API text, index on
 *   (party, created_at, id)), the driver's JSON parse, res.json;
 * - the balance: one primary-key SELECT.
 */
import { randomUUID } from 'node:crypto';
import express from 'express';
import pg from 'pg';
import { BALANCES_COLLECTION, type BalanceDoc } from '../../src/projections/balances.ts';
import {
  DISTRIBUTOR_OPERATIONS_COLLECTION,
  type DistributorOperationDoc,
} from '../../src/projections/distributor-operations.ts';
import { freshPostgresDatabase } from '../../test/support/postgres-server.ts';
import type { TestSystem } from '../../test/support/system.ts';
import { PAGE, withoutApiText } from './read-system.ts';

const POOL_SIZE = 10;

/** The floor: one INSERT per create, committed (and flushed, synchronous_commit on) before the response. */
export async function postgresInsertBaselineApp(
  serverUrl: string,
): Promise<{ app: express.Express; close: () => Promise<void> }> {
  const pool = new pg.Pool({ connectionString: await freshPostgresDatabase(serverUrl), max: POOL_SIZE });
  await pool.query(
    'CREATE TABLE operations (position BIGSERIAL PRIMARY KEY, id TEXT UNIQUE NOT NULL, stream TEXT NOT NULL, data JSONB NOT NULL, created_at TIMESTAMPTZ NOT NULL)',
  );
  const app = express();
  app.post('/api/v1/distributors/:id/operations', express.json(), async (req, res, next) => {
    try {
      const operationID = `op_${randomUUID().replaceAll('-', '')}`;
      await pool.query('INSERT INTO operations (id, stream, data, created_at) VALUES ($1, $2, $3, $4)', [
        operationID,
        `operation-${operationID}`,
        JSON.stringify(req.body),
        new Date(),
      ]);
      res.json({ operationID });
    } catch (error) {
      next(error);
    }
  });
  return { app, close: () => pool.end() };
}

/** The read baselines, holding the very documents the projections built. */
export async function postgresReadBaselineApp(
  sys: TestSystem,
  serverUrl: string,
): Promise<{ app: express.Express; documents: number; close: () => Promise<void> }> {
  const pool = new pg.Pool({ connectionString: await freshPostgresDatabase(serverUrl), max: POOL_SIZE });
  await pool.query(
    'CREATE TABLE operations (id TEXT PRIMARY KEY, party TEXT NOT NULL, created_at TEXT NOT NULL, doc JSONB NOT NULL)',
  );
  await pool.query('CREATE INDEX operations_by_party ON operations (party, created_at, id)');
  await pool.query('CREATE TABLE balances (id TEXT PRIMARY KEY, doc JSONB NOT NULL)');
  const docs = await sys.system.stores.readStore.find<DistributorOperationDoc>(DISTRIBUTOR_OPERATIONS_COLLECTION.name);
  const balances = await sys.system.stores.readStore.find<BalanceDoc>(BALANCES_COLLECTION.name);
  for (let i = 0; i < docs.length; i += 1000) {
    const chunk = docs.slice(i, i + 1000);
    await pool.query(
      'INSERT INTO operations (id, party, created_at, doc) SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::jsonb[])',
      [
        chunk.map((d) => d.id),
        chunk.map((d) => d.distributorID),
        chunk.map((d) => d.createdAt),
        chunk.map((d) => JSON.stringify(withoutApiText(d))),
      ],
    );
  }
  await pool.query('INSERT INTO balances (id, doc) SELECT * FROM unnest($1::text[], $2::jsonb[])', [
    balances.map((d) => d.id),
    balances.map((d) => JSON.stringify(d)),
  ]);
  await pool.query('ANALYZE');
  const app = express();
  app.get('/api/v1/distributors/:id/operations', async (req, res, next) => {
    try {
      const { rows } = await pool.query<{ doc: unknown }>(
        'SELECT doc FROM operations WHERE party = $1 ORDER BY created_at DESC, id DESC LIMIT $2',
        [req.params.id, PAGE],
      );
      res.json(rows.map((row) => row.doc));
    } catch (error) {
      next(error);
    }
  });
  app.get('/api/v1/distributors/:id/balance', async (req, res, next) => {
    try {
      const { rows } = await pool.query<{ doc: BalanceDoc }>('SELECT doc FROM balances WHERE id = $1', [
        `distributor:${req.params.id}`,
      ]);
      res.json({ balance: rows[0]?.doc.balance ?? '0.00' });
    } catch (error) {
      next(error);
    }
  });
  return { app, documents: docs.length, close: () => pool.end() };
}

/**
 * The write benches' system: the write API alone (as it runs behind a load balancer in production;
 * projections and executor elsewhere) with PARTIES distributors, each with its own perform-operations key and
 * a large balance, and one create-operation request per key. Shared by bench:write and bench:profile.
 */
import { randomUUID } from 'node:crypto';
import express from 'express';
import { openSqliteDatabase } from '../../src/adapters/sqlite/sqlite-database.ts';
import type { Part } from '../../src/wallet-ops.ts';
import { tempDir } from '../../test/support/temp-dir.ts';
import { startTestSystem, type TestSystem } from '../../test/support/system.ts';
import type { LoadSpec } from './load-generator.ts';

export async function writeSystem(
  parties: number,
  env: Record<string, string> = {},
  parts: readonly Part[] = ['write-api'],
): Promise<{ sys: TestSystem; requests: LoadSpec['requests'] }> {
  const sys = await startTestSystem(env, undefined, parts);
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
  return { sys, requests };
}

/**
 * The insert baseline: an express handler doing one better-sqlite3 insert of a similar row per create, fully synced
 * (WAL, synchronous=FULL, as the stores) or not synced at all. `close` removes its file.
 */
export function insertBaselineApp(synced: boolean): { app: express.Express; close: () => void } {
  const dir = tempDir();
  const db = openSqliteDatabase(`${dir.path}/baseline.sqlite`);
  if (!synced) db.pragma('synchronous = OFF');
  db.exec(
    'CREATE TABLE operations (position INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT UNIQUE, stream TEXT, data TEXT, created_at TEXT)',
  );
  const insert = db.prepare('INSERT INTO operations (id, stream, data, created_at) VALUES (?, ?, ?, ?)');
  const app = express();
  app.post('/api/v1/distributors/:id/operations', express.json(), (req, res) => {
    const operationID = `op_${randomUUID().replaceAll('-', '')}`;
    insert.run(operationID, `operation-${operationID}`, JSON.stringify(req.body), new Date().toISOString());
    res.json({ operationID });
  });
  return {
    app,
    close: () => {
      db.close();
      dir.cleanup();
    },
  };
}

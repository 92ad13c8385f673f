/**
 * The system as users run it, for bench:system: a data directory seeded in this process (parties, keys, funds, a
 * history of operations for the lists), then wallet-ops in child processes on it: `npm start` (every part in one
 * process), the split layout (the APIs in one process, projections, executor and webhooks in another) or the write
 * API alone.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { StreamAppend } from '../../src/ports/event-store.ts';
import { allProjections } from '../../src/projections/index.ts';
import { projectionStatus } from '../../src/projections/rebuild.ts';
import { freePort } from '../../test/support/processes.ts';
import { startTestSystem, waitFor, type TestSystem } from '../../test/support/system.ts';
import { knownLedgerEnv } from '../../test/support/test-ledger.ts';
import { knownStoreEnv } from '../../test/support/test-stores.ts';
import type { LoadSpec } from './load-generator.ts';
import { operationEvents } from './read-system.ts';

export type Layout = 'all' | 'split' | 'write';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const BIN = `${ROOT}bin/wallet-ops.js`;

/** What each layout starts: argv of each process; the first one serves the APIs. */
const LAYOUTS: Record<Layout, string[][]> = {
  all: [['src/main.ts']],
  split: [
    [BIN, 'serve', 'write-api', 'read-api'],
    [BIN, 'serve', 'projections', 'executor', 'webhooks'],
  ],
  write: [[BIN, 'serve', 'write-api']],
};

export const LAYOUT_NAMES: Record<Layout, string> = {
  all: 'every part in one process (npm start)',
  split: 'split: APIs, then projections + executor + webhooks',
  write: 'the write API alone',
};

export interface SeededRequests {
  create: LoadSpec['requests'];
  list: LoadSpec['requests'];
  balance: LoadSpec['requests'];
}

/**
 * Seeds `dataDir` with `keys` distributors (a key each, a large balance) and `perKey` projected operations each,
 * then hands the still-open seeding system to `withSeed` (the read floors copy its documents) and closes it.
 */
export async function seedSystem(
  dataDir: string,
  keys: number,
  perKey: number,
  withSeed: (sys: TestSystem) => Promise<void>,
): Promise<SeededRequests> {
  const sys = await startTestSystem({ DATA_DIR: dataDir }, undefined, ['projections']);
  try {
    const phone = await sys.individual('+2348123456781', 'Bench Customer');
    const requests: SeededRequests = { create: [], list: [], balance: [] };
    const distributors: Array<{ id: string; name: string; shortCode: string }> = [];
    for (let i = 0; i < keys; i++) {
      const d = await sys.party('distributor');
      const { apiKey } = await d.key({ permissions: 'read-balance,read-transactions,perform-operations' });
      await sys.credit(d.wallet, '1000000000.00');
      distributors.push({ id: d.ref.id, name: d.name, shortCode: d.shortCode });
      const headers = { authorization: `Bearer ${apiKey}` };
      const base = `/api/v1/distributors/${d.ref.id}`;
      requests.create.push({
        method: 'POST',
        path: `${base}/operations`,
        headers: { ...headers, 'content-type': 'application/json' },
        body: JSON.stringify({ operationType: 'cash-in', amount: '1.00', phoneTo: phone, memo: 'bench' }),
      });
      requests.list.push({ method: 'GET', path: `${base}/operations?limit=100`, headers });
      requests.balance.push({ method: 'GET', path: `${base}/balance`, headers });
    }
    const total = keys * perKey;
    const t0 = Date.now() - total * 60_000;
    for (let from = 0; from < total; from += 500) {
      const batch: StreamAppend[] = [];
      for (let i = from; i < Math.min(total, from + 500); i++)
        batch.push(operationEvents(i, distributors[i % keys]!, new Date(t0 + i * 60_000)));
      await sys.system.stores.eventStore.appendMulti(batch);
    }
    const projections = allProjections(sys.config.ASSET_SCALE);
    await waitFor(
      async () => (await projectionStatus(sys.system.stores, projections, 1)).every((s) => s.lagEvents === 0),
      120_000,
    );
    await withSeed(sys);
    return requests;
  } finally {
    await sys.close();
  }
}

export interface RunningLayout {
  url: string;
  pids: number[];
  /** The PostgreSQL database the processes use (none on the embedded stores). */
  postgresUrl?: string;
  stop(): Promise<void>;
}

/** Starts the layout's processes on the seeded data directory; resolves once the API answers /health. */
export async function startLayout(layout: Layout | string[][], dataDir: string): Promise<RunningLayout> {
  const argvs = typeof layout === 'string' ? LAYOUTS[layout] : layout;
  const port = await freePort();
  const storeEnv = knownStoreEnv(dataDir);
  const children: ChildProcess[] = [];
  const outputs: string[] = [];
  for (const [i, argv] of argvs.entries()) {
    const child = spawn(process.execPath, argv, {
      cwd: ROOT,
      env: {
        ...process.env,
        LOG_LEVEL: 'warn',
        DATA_DIR: dataDir,
        HOST: '127.0.0.1',
        PORT: String(i === 0 ? port : await freePort()),
        API_KEY_RATE_LIMIT: '0',
        AUTH_FAILURE_LIMIT: '0',
        ...knownLedgerEnv(dataDir),
        ...storeEnv,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const index = outputs.push('') - 1;
    const keep = (chunk: Buffer) => {
      outputs[index] = (outputs[index]! + chunk.toString()).slice(-8000);
    };
    child.stdout!.on('data', keep);
    child.stderr!.on('data', keep);
    children.push(child);
  }
  const url = `http://127.0.0.1:${port}`;
  const stop = async () => {
    await Promise.all(
      children.map(
        (child) =>
          new Promise<void>((resolve) => {
            if (child.exitCode !== null || child.signalCode !== null) return resolve();
            child.once('exit', () => resolve());
            child.kill('SIGTERM');
          }),
      ),
    );
  };
  try {
    await waitFor(async () => {
      const dead = children.find((child) => child.exitCode !== null);
      if (dead) throw new Error(`a ${String(layout)} process exited: ${outputs.join('\n---\n')}`);
      return (await fetch(`${url}/health`).catch(() => null))?.status === 200;
    }, 60_000);
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    url,
    pids: children.map((child) => child.pid!),
    ...(storeEnv.POSTGRES_URL ? { postgresUrl: storeEnv.POSTGRES_URL } : {}),
    stop,
  };
}

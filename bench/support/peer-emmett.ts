/**
 * The peer rows of `npm run bench:write`: wallet-ops' create beside the same read-decide-append done with
 * Emmett (bench/peer/server.ts, its SQLite store; also its PostgreSQL store when PEER_POSTGRES_URL is set),
 * measured in the same run at 1, 16 and 64 connections over 10 payers and 64 connections on one payer,
 * wallet-ops then the peer for each scenario, autocannon in its own process. The peer is pinned in
 * bench/peer/package.json and installed there on demand: it is no dependency of wallet-ops.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { startTestSystem, type TestSystem } from '../../test/support/system.ts';
import { tempDir } from '../../test/support/temp-dir.ts';
import type { LoadResult, LoadSpec } from './load-generator.ts';
import { runLoad } from './run-load.ts';

const PEER_DIR = fileURLToPath(new URL('../peer/', import.meta.url));
const PEER_SERVER = fileURLToPath(new URL('../peer/server.ts', import.meta.url));
const PEER_VERSIONS = fileURLToPath(new URL('../peer/package.json', import.meta.url));

interface Scenario {
  name: string;
  connections: number;
  payers: number;
}
const SCENARIOS: Scenario[] = [
  { name: '1 connection, 10 payers', connections: 1, payers: 10 },
  { name: '16 connections, 10 payers', connections: 16, payers: 10 },
  { name: '64 connections, 10 payers', connections: 64, payers: 10 },
  { name: '64 connections, one payer', connections: 64, payers: 1 },
];

export type PeerStore = 'sqlite' | 'postgresql';

export interface Measured extends LoadResult {
  okPerSecond: number;
}
export interface PeerMeasured extends Measured {
  outcomes: Record<string, number>;
  stuck: number;
  payers: number;
}

const body = (phone: string) =>
  JSON.stringify({ operationType: 'cash-in', amount: '1.00', phoneTo: phone, memo: 'bench' });

/** Installs the pinned peer into bench/peer/node_modules if it is not there (sqlite3 builds from source). */
function ensurePeerInstalled(): void {
  // npm writes this file last: a node_modules without it is an interrupted install, which npm ci redoes.
  if (existsSync(`${PEER_DIR}node_modules/.package-lock.json`)) return;
  console.log(
    'bench:write: installing the Emmett peer: npm ci --prefix bench/peer (builds sqlite3 from source, a few minutes, once)',
  );
  const started = performance.now();
  const result = spawnSync('npm', ['ci', '--prefix', PEER_DIR, '--no-audit', '--no-fund'], { stdio: 'inherit' });
  if (result.status !== 0)
    throw new Error(`npm ci --prefix bench/peer failed (${result.error?.message ?? `exit ${result.status}`})`);
  console.log(`bench:write: Emmett peer installed in ${((performance.now() - started) / 1000).toFixed(0)} s`);
}

/** Only the 2xx answers count as work done; both sides are measured the same way. */
export function measured(result: LoadResult, seconds: number): Measured {
  return { ...result, okPerSecond: (result.total - result.non2xx) / seconds };
}

interface PeerServer {
  store: PeerStore;
  url: string;
  settings: string;
  payers: (scenario: number) => string[];
  close: () => Promise<void>;
}

async function startPeer(store: PeerStore, runId: string): Promise<PeerServer> {
  const payerIds = (scenario: number) =>
    Array.from({ length: SCENARIOS[scenario]!.payers }, (_, i) => `${runId}s${scenario}p${i}`);
  const started = await startPeerProcess(
    store,
    SCENARIOS.flatMap((_, s) => payerIds(s)),
  );
  return { ...started, payers: payerIds };
}

/** The peer in its own process, its payers' wallet streams seeded with a credit; `env` may name its PostgreSQL database. */
export async function startPeerProcess(
  store: PeerStore,
  allPayers: string[],
  env: Record<string, string> = {},
): Promise<Omit<PeerServer, 'payers'>> {
  ensurePeerInstalled();
  const dir = tempDir();
  // Emmett logs every failed transaction with console.log: its stdout goes nowhere, as a service's would to a
  // log collector; stderr is kept for a crash report.
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', PEER_SERVER], {
    env: {
      ...process.env,
      ...env,
      PEER_STORE: store,
      PEER_SQLITE_FILE: `${dir.path}/peer.sqlite`,
      PEER_PAYERS: allPayers.join(','),
    },
    stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
  });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  const ready = await new Promise<{ url: string; settings: string }>((resolve, reject) => {
    child.once('message', (message) => resolve(message as { url: string; settings: string }));
    child.once('exit', (code) => reject(new Error(`the Emmett peer (${store}) exited with ${code}: ${stderr}`)));
  });
  return {
    store,
    ...ready,
    close: async () => {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.disconnect();
      await exited;
      dir.cleanup();
    },
  };
}

/** One load on the peer over the given payers: its 2xx rate, its failures as it counted them, and its stuck streams. */
export async function measurePeerOn(
  peer: Omit<PeerServer, 'payers'>,
  payers: string[],
  connections: number,
  seconds: number,
  phone: string,
): Promise<PeerMeasured> {
  await peerOutcomes(peer); // resets the counts
  const requests: LoadSpec['requests'] = payers.map((payer) => ({
    method: 'POST',
    path: `/api/v1/distributors/${payer}/operations`,
    headers: { 'content-type': 'application/json' },
    body: body(phone),
  }));
  const result = await runLoad({ url: peer.url, connections, durationSeconds: seconds, requests });
  const outcomes = await peerOutcomes(peer);
  const { stuck } = (await (await fetch(`${peer.url}/__peer/stuck?payers=${payers.join(',')}`)).json()) as {
    stuck: number;
  };
  return { ...measured(result, seconds), outcomes, stuck, payers: payers.length };
}

async function peerOutcomes(peer: Pick<PeerServer, 'url'>): Promise<Record<string, number>> {
  return (await (await fetch(`${peer.url}/__peer/outcomes`)).json()) as Record<string, number>;
}

async function measurePeer(peer: PeerServer, scenario: number, seconds: number, phone: string): Promise<PeerMeasured> {
  await peerOutcomes(peer); // resets the counts
  const requests: LoadSpec['requests'] = peer.payers(scenario).map((payer) => ({
    method: 'POST',
    path: `/api/v1/distributors/${payer}/operations`,
    headers: { 'content-type': 'application/json' },
    body: body(phone),
  }));
  const result = await runLoad({
    url: peer.url,
    connections: SCENARIOS[scenario]!.connections,
    durationSeconds: seconds,
    requests,
  });
  const drainStarted = performance.now();
  const outcomes = await peerOutcomes(peer);
  console.log(
    `peer comparison: the peer finished its last requests ${((performance.now() - drainStarted) / 1000).toFixed(1)} s after the load stopped`,
  );
  const payers = peer.payers(scenario);
  const { stuck } = (await (await fetch(`${peer.url}/__peer/stuck?payers=${payers.join(',')}`)).json()) as {
    stuck: number;
  };
  return { ...measured(result, seconds), outcomes, stuck, payers: payers.length };
}

async function walletOpsRequests(sys: TestSystem, payers: number, phone: string): Promise<LoadSpec['requests']> {
  const requests: LoadSpec['requests'] = [];
  for (let i = 0; i < payers; i++) {
    const distributor = await sys.party('distributor');
    const { apiKey } = await distributor.key({ permissions: 'perform-operations' });
    await sys.credit(distributor.wallet, '1000000000.00');
    requests.push({
      method: 'POST',
      path: `/api/v1/distributors/${distributor.ref.id}/operations`,
      headers: { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` },
      body: body(phone),
    });
  }
  return requests;
}

/** A rate: whole numbers, but a peer that served a handful in the run still shows as more than 0. */
const fixed = (n: number) => (n > 0 && n < 10 ? n.toFixed(1) : n.toFixed(0));
const latency = (r: LoadResult) => `${r.p50Ms.toFixed(0)} / ${r.p99Ms.toFixed(0)}`;

/** "500 SQLITE_BUSY: database is locked 60%, ..." of all the peer's answers, server side, or "none". */
export function failures(peer: PeerMeasured): string {
  const answered = Object.values(peer.outcomes).reduce((a, b) => a + b, 0);
  const failed = Object.entries(peer.outcomes)
    .filter(([key]) => key !== '200')
    .sort((a, b) => b[1] - a[1]);
  const share = (n: number) =>
    `${((n / Math.max(answered, 1)) * 100).toFixed(n / Math.max(answered, 1) < 0.01 ? 2 : 0)}%`;
  const parts = [
    ...(peer.total === 0 ? ['no answer within the run'] : []),
    failed.length === 0
      ? 'no failure'
      : `${failed.map(([key, n]) => `${key} ${share(n)}`).join(', ')} (of ${answered})`,
    ...(peer.errors > 0 ? [`${peer.errors} connection errors/timeouts`] : []),
    ...(peer.stuck > 0 ? [`afterwards ${peer.stuck} of ${peer.payers} payer streams refuse every append`] : []),
  ];
  return parts.join('; ');
}

function ratio(ours: Measured, peer: Measured): string {
  if (peer.okPerSecond === 0) return 'n/a (peer: no 2xx)';
  const x = ours.okPerSecond / peer.okPerSecond;
  return `${x.toFixed(x < 100 ? 1 : 0)}x`;
}

export function versions(): string {
  const { dependencies } = JSON.parse(readFileSync(PEER_VERSIONS, 'utf8')) as { dependencies: Record<string, string> };
  return Object.entries(dependencies)
    .map(([name, version]) => `${name} ${version}`)
    .join(', ');
}

/**
 * Runs the comparison and returns the lines of its part of the bench section (a table and a paragraph);
 * a peer that cannot be installed or started is reported in those lines, and the rest of the bench runs.
 */
export async function peerComparison(seconds: number): Promise<string[]> {
  const stores: PeerStore[] = ['sqlite', ...(process.env.PEER_POSTGRES_URL ? (['postgresql'] as const) : [])];
  const heading = [
    '### Peer: the same read-decide-append with Emmett',
    '',
    `POST create (cash-in of 1.00), ${seconds} s each, wallet-ops then the peer for each scenario, payers seeded with a credit, fresh payers per scenario.`,
    ...(process.env.PEER_POSTGRES_URL
      ? []
      : ["Emmett's PostgreSQL store is measured too when PEER_POSTGRES_URL is set (postgresql://user@host:port/db)."]),
  ];
  try {
    ensurePeerInstalled();
  } catch (error) {
    console.error(error);
    return [...heading, '', `Peer not measured: ${(error as Error).message}`, ''];
  }

  const runId = `r${Date.now().toString(36)}`;
  const sys = await startTestSystem({}, undefined, ['write-api']);
  const peers: PeerServer[] = [];
  try {
    const phone = await sys.individual('+2348123456781', 'Bench Customer');
    const notStarted: string[] = [];
    for (const store of stores) {
      await startPeer(store, runId).then(
        (peer) => peers.push(peer),
        (error: Error) => {
          console.error(error);
          const lines = error.message.split('\n').map((line) => line.trim());
          notStarted.push(
            `Emmett's ${store} store not measured: ${lines.find((line) => /^\w*Error: /.test(line)) ?? lines[0]}`,
          );
        },
      );
    }
    const rows: string[] = [];
    for (const [i, scenario] of SCENARIOS.entries()) {
      const ours = measured(
        await runLoad({
          url: sys.baseUrl,
          connections: scenario.connections,
          durationSeconds: seconds,
          requests: await walletOpsRequests(sys, scenario.payers, phone),
        }),
        seconds,
      );
      console.log(`peer comparison, ${scenario.name}: wallet-ops`, ours);
      for (const server of peers) {
        const { store } = server;
        const peer = await measurePeer(server, i, seconds, phone);
        console.log(`peer comparison, ${scenario.name}: Emmett/${store}`, peer);
        rows.push(
          `| ${scenario.name} | ${fixed(ours.okPerSecond)} | Emmett, ${store} | ${fixed(peer.okPerSecond)} | ${ratio(ours, peer)} | ${latency(ours)} | ${latency(peer)} | ${ours.non2xx + ours.errors} | ${failures(peer)} |`,
        );
      }
    }
    return [
      ...heading,
      `Peer: ${versions()} (bench/peer/package.json, installed on demand); express 5 and decimal.js as wallet-ops. Peer store settings, as Emmett opens them: ${peers.map((p) => `${p.store}: ${p.settings}`).join('; ')}.`,
      ...notStarted,
      "Ratios are wallet-ops 2xx/s over the peer's 2xx/s; p50 / p99 are over all answers, failed ones included.",
      '',
      '| scenario | wallet-ops 2xx/s | peer | peer 2xx/s | wallet-ops / peer | wallet-ops p50 / p99 ms | peer p50 / p99 ms | wallet-ops non-2xx + errors | peer failures (share of its answers, counted by the peer, late ones included) |',
      '|---|---:|---|---:|---:|---:|---:|---:|---|',
      ...rows,
      '',
      "The peer (bench/peer/server.ts) reads the payer's wallet stream through Emmett's CommandHandler, folds it into balance",
      'and holds, checks amount + fee against the available balance and appends OperationRequested and FundsHeld to that stream',
      "with the version read as expected version, retrying a version conflict as Emmett's `onVersionConflict: true` does",
      "(3 retries). It does none of wallet-ops' authentication, validation, limits, idempotency or hash chain, and re-reads the",
      "whole stream on every request (no snapshot or cache), so its reads grow with the stream. Emmett's SQLite store opens a",
      "connection per store call, and a lock still busy after node-sqlite3's 1 s busy timeout comes back as a failed ROLLBACK (500);",
      "after a version conflict it keeps the stream's position advanced with no event written, so that stream refuses every later",
      'append ("refuse every append" above).',
      '',
    ];
  } finally {
    for (const peer of peers) await peer.close();
    await sys.close();
  }
}

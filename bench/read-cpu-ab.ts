/**
 * The read path's CPU per request, several versions side by side in one process, for differences a shared machine
 * hides between processes: bare express and every part of wallet-ops (one system per source tree given, each on a
 * copy of one seeded data directory) answer batches of requests in turn, round after round, so a neighbour's load
 * falls on all of them alike. The client is a raw socket per connection pipelining its requests (its CPU, the same
 * for every server, is counted too: compare differences, not ratios).
 *   node --import tsx bench/read-cpu-ab.ts [case=balance|list] [n=5000] [rounds=8] [trees=/path/a,/path/b]
 * `trees`: source trees of wallet-ops (a checkout of another commit with node_modules); default this one. Other
 * KEY=VALUE arguments go to the systems' configuration (METRICS_ENABLED=false: what the metrics cost).
 */
import '../test/support/fast-passwords.ts';
import { cpSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { fileURLToPath } from 'node:url';
import { tempDir } from '../test/support/temp-dir.ts';
import type { LoadSpec } from './support/load-generator.ts';
import { bareExpressApp } from './support/read-system.ts';
import { listen } from './support/run-load.ts';
import { seedSystem } from './support/system-processes.ts';

const args = new Map(
  process.argv.slice(2).map((a) => [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)] as [string, string]),
);
const CASE = (args.get('case') ?? 'balance') as 'balance' | 'list';
const N = Number(args.get('n') ?? 5000);
const ROUNDS = Number(args.get('rounds') ?? 8);
const TREES = (args.get('trees') ?? fileURLToPath(new URL('..', import.meta.url))).split(',');
const ENV = Object.fromEntries([...args].filter(([key]) => /^[A-Z_]+$/.test(key)));
const CONNECTIONS = 8;
const DEPTH = 8;

/** Sends `n` requests over CONNECTIONS sockets, DEPTH in flight on each; resolves with the 2xx count. */
async function drive(url: string, requests: LoadSpec['requests'], n: number): Promise<number> {
  const { hostname, port } = new URL(url);
  const raw = requests.map(
    (r) =>
      `${r.method} ${r.path} HTTP/1.1\r\nHost: ${hostname}\r\n${Object.entries(r.headers ?? {})
        .map(([k, v]) => `${k}: ${v}\r\n`)
        .join('')}\r\n`,
  );
  let sent = 0;
  let ok = 0;
  let answered = 0;
  await Promise.all(
    Array.from(
      { length: CONNECTIONS },
      (_, c) =>
        new Promise<void>((resolve, reject) => {
          const socket = connect(Number(port), hostname);
          let inFlight = 0;
          let tail = '';
          const top = () => {
            let batch = '';
            while (inFlight < DEPTH && sent < n) {
              batch += raw[(sent++ + c) % raw.length]!;
              inFlight++;
            }
            if (batch) socket.write(batch);
            else if (inFlight === 0) socket.end();
          };
          socket.setEncoding('latin1');
          socket.on('connect', top);
          socket.on('data', (chunk: string) => {
            // Responses are counted by their status lines (no body here holds one).
            const text = tail + chunk;
            let at = text.indexOf('HTTP/1.1 ');
            while (at >= 0) {
              if (text.length < at + 10) break;
              answered++;
              inFlight--;
              if (text[at + 9] === '2') ok++;
              at = text.indexOf('HTTP/1.1 ', at + 10);
            }
            tail = text.slice(-16);
            if (tail.includes('HTTP/1.1 ')) tail = tail.slice(tail.indexOf('HTTP/1.1 ') + 9);
            top();
          });
          socket.on('end', () => resolve());
          socket.on('error', reject);
        }),
    ),
  );
  if (answered !== n) throw new Error(`${answered} answers to ${n} requests`);
  return ok;
}

const cpuMs = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
};

const dir = tempDir('read-cpu-ab-');
const servers: Array<{ name: string; url: string; close(): Promise<void> }> = [];
try {
  const requests = await seedSystem(dir.path, 10, 100, async () => {});
  const bare = await listen(bareExpressApp());
  if (CASE === 'balance') servers.push({ name: 'bare express', ...bare });
  for (const [i, tree] of TREES.entries()) {
    const copy = `${dir.path}-${i}`;
    cpSync(dir.path, copy, { recursive: true });
    const { startTestSystem } = (await import(
      `${tree}/test/support/system.ts`
    )) as typeof import('../test/support/system.ts');
    const sys = await startTestSystem({ DATA_DIR: copy, LOG_LEVEL: 'warn', ...ENV });
    servers.push({ name: tree, url: sys.baseUrl, close: () => sys.close() });
  }
  const spent = new Map<string, number[]>(servers.map((s) => [s.name, []]));
  for (const server of servers) await drive(server.url, requests[CASE], N); // warm-up
  for (let round = 0; round < ROUNDS; round++)
    // Every other round in the reverse order: whoever runs right after another server's round is not always the same.
    for (const server of round % 2 ? [...servers].reverse() : servers) {
      const before = cpuMs();
      const ok = await drive(server.url, requests[CASE], N);
      spent.get(server.name)!.push(((cpuMs() - before) * 1000) / N);
      if (ok !== N) throw new Error(`${server.name}: ${N - ok} answers not 2xx`);
    }
  for (const [name, runs] of spent) {
    const sorted = [...runs].sort((a, b) => a - b);
    // The lower half's mean: a neighbour's burst only ever adds CPU time (caches, migrations), so the quieter rounds
    // say more than the median on a loaded machine.
    const lower = sorted.slice(0, Math.ceil(sorted.length / 2));
    const lowerMean = lower.reduce((sum, r) => sum + r, 0) / lower.length;
    console.log(
      `${CASE} ${name}: median ${sorted[Math.floor(sorted.length / 2)]!.toFixed(1)}, lower half ${lowerMean.toFixed(1)}, ` +
        `least ${sorted[0]!.toFixed(1)} µs CPU per request, client included (${runs.map((r) => r.toFixed(1)).join(' ')})`,
    );
  }
  await bare.close();
} finally {
  for (const server of servers) if (server.name !== 'bare express') await server.close();
  dir.cleanup();
  for (const i of TREES.keys()) rmSync(`${dir.path}-${i}`, { recursive: true, force: true });
}

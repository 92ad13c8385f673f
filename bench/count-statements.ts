/**
 * What one create costs the database with every part running in one process (`npm start`'s layout), on PostgreSQL:
 *   node --import tsx bench/count-statements.ts
 * Statements are counted by a wrapper around node-postgres' Client.query in this process (every statement is one
 * round trip: node-postgres does not pipeline); commits by the server (pg_stat_database.xact_commit of the
 * system's database) and WAL fsyncs (pg_stat_io's, PostgreSQL 16 and later; cluster-wide, the server is this
 * script's own unless POSTGRES_URL names one). Creates are sent one at a time (COUNT_CREATES, default 200), then
 * COUNT_CONCURRENT (default 2000) at 64 at once; each window runs until the executor and the followers are idle,
 * less the statements an idle system sends in as long (the LISTEN connection's fallback polls).
 */
import '../test/support/fast-passwords.ts';
import pg from 'pg';
import { ALL_PARTS } from '../src/wallet-ops.ts';
import { inParallel } from './support/in-parallel.ts';
import { startBenchStores } from './support/bench-stores.ts';
import { writeSystem } from './support/write-system.ts';

process.env.BENCH_STORES ??= 'postgres';
const SEQUENTIAL = Number(process.env.COUNT_CREATES ?? 200);
const CONCURRENT = Number(process.env.COUNT_CONCURRENT ?? 2000);

const counts = { statements: 0, byKind: new Map<string, number>() };
const query = pg.Client.prototype.query as (...args: unknown[]) => unknown;
pg.Client.prototype.query = function counted(this: pg.Client, ...args: unknown[]) {
  counts.statements += 1;
  const first = args[0];
  const text = typeof first === 'string' ? first : ((first as { text?: string } | null)?.text ?? '');
  const kind =
    text
      .trim()
      .replace(/\s+/g, ' ')
      .slice(0, Number(process.env.COUNT_KIND_CHARS ?? 40)) || '?';
  counts.byKind.set(kind, (counts.byKind.get(kind) ?? 0) + 1);
  if (process.env.COUNT_COMMITTERS && text.startsWith('WITH m0_row')) {
    // Which checkpoints each one-statement commit moved (the first parameter of each member's fence).
    const values = (first as { values?: unknown[] }).values ?? [];
    const members = [...text.matchAll(/ON c(\d+)\.projection = \$(\d+)/g)].map((match) =>
      String(values[Number(match[2]) - 1]),
    );
    const key = `  commit of ${members.sort().join('+')}`;
    counts.byKind.set(key, (counts.byKind.get(key) ?? 0) + 1);
  }
  return query.apply(this, args);
} as typeof pg.Client.prototype.query;

const stores = await startBenchStores();
const { sys, requests } = await writeSystem(10, {}, ALL_PARTS);
const database = new URL(sys.config.POSTGRES_URL!).pathname.slice(1);
const admin = new pg.Client({ connectionString: sys.config.POSTGRES_URL });
await admin.connect();
const ownStatements = () => counts.statements; // the admin client's own are subtracted below

async function serverCounters(): Promise<{ commits: number; walSyncs: number }> {
  const { rows } = await admin.query<{ commits: string; syncs: string }>(
    `SELECT (SELECT xact_commit FROM pg_stat_database WHERE datname = $1) AS commits,
            (SELECT coalesce(sum(fsyncs), 0) FROM pg_stat_io WHERE object = 'wal') AS syncs`,
    [database],
  );
  return { commits: Number(rows[0]!.commits), walSyncs: Number(rows[0]!.syncs) };
}

async function create(i: number): Promise<void> {
  const request = requests[i % requests.length]!;
  const response = await fetch(`${sys.baseUrl}${request.path}`, {
    method: 'POST',
    headers: request.headers,
    body: request.body,
  });
  if (!response.ok) throw new Error(`create answered ${response.status}: ${await response.text()}`);
}

/**
 * Waits until the executor and the followers are done: fewer than 40 statements in 1.5 s (an idle system's polls,
 * eleven subscriptions' a second before the shared reader, fall in one window together), at most a minute.
 */
async function quiet(): Promise<void> {
  const samples: number[] = [];
  const deadline = Date.now() + 60_000;
  for (let last = ownStatements(); Date.now() < deadline;) {
    await new Promise((resolve) => setTimeout(resolve, 500));
    const now = ownStatements();
    samples.push(now - last);
    last = now;
    if (samples.length >= 3 && samples.slice(-3).reduce((a, b) => a + b, 0) < 40) return;
  }
}

async function measure(label: string, creates: number, connections: number): Promise<void> {
  await quiet();
  // What an idle system sends in a while (polls), to subtract.
  const idleStart = { statements: ownStatements(), at: Date.now() };
  await new Promise((resolve) => setTimeout(resolve, 3000));
  const idlePerMs = (ownStatements() - idleStart.statements) / (Date.now() - idleStart.at);
  const before = {
    statements: ownStatements(),
    byKind: new Map(counts.byKind),
    server: await serverCounters(),
    at: Date.now(),
  };
  const started = Date.now();
  await inParallel(
    Array.from({ length: creates }, (_, i) => i),
    connections,
    (i) => create(i),
  );
  const createdMs = Date.now() - started;
  await quiet();
  const elapsed = Date.now() - before.at;
  const after = await serverCounters();
  const statements = ownStatements() - before.statements - 2 - idlePerMs * elapsed; // less the admin's two
  const kinds = [...counts.byKind]
    .map(([kind, n]) => [kind, (n - (before.byKind.get(kind) ?? 0)) / creates] as const)
    .filter(([, n]) => n >= 0.05)
    .sort((a, b) => b[1] - a[1]);
  console.log(
    `\n${label}: ${creates} creates at ${connections} connection(s), ${Math.round((creates / createdMs) * 1000)} creates/s`,
  );
  console.log(
    `  statements per create: ${(statements / creates).toFixed(1)} (idle polls subtracted: ${((idlePerMs * elapsed) / creates).toFixed(2)})`,
  );
  const commits = (after.commits - before.server.commits - 1) / creates;
  const walSyncs = (after.walSyncs - before.server.walSyncs) / creates;
  console.log(`  commits per create (server): ${commits.toFixed(2)}; WAL syncs per create: ${walSyncs.toFixed(2)}`);
  for (const [kind, n] of kinds) console.log(`    ${n.toFixed(2)}  ${kind}`);
}

try {
  for (let i = 0; i < 30; i++) await create(i); // warm: statements prepared, caches filled
  await measure('one at a time', SEQUENTIAL, 1);
  await measure('64 at once', CONCURRENT, 64);
  console.log(
    `\n${stores.label}; machine shared with other work (load average ${(await import('node:os'))
      .loadavg()
      .map((n) => n.toFixed(1))
      .join(' ')})`,
  );
} finally {
  await admin.end();
  await sys.close();
  await stores.stop();
}

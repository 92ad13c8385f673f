/**
 * Webhook delivery latency, completion -> delivered, at a steady rate of completions to one local receiver:
 *   npm run bench:webhooks      (writes the "Webhooks" section of docs/benchmarks.md)
 *
 * The system runs in a child process of its own (bench/support/webhook-system.ts: every part, embedded stores
 * and ledger, the default configuration but WEBHOOK_ALLOW_INSECURE_LOCALHOST=true and the API rate limits off for
 * the setup's traffic), so that the receiver and the load generator here do not share its event loop. One
 * distributor with a key, one endpoint subscribed to operation.completed pointing at a receiver in this process
 * (test/support/webhook-receiver.ts: a plain node:http server that answers 200).
 *
 * Steady: BENCH_WEBHOOK_OPS cash-ins (default 3000) are created over HTTP first (64 in flight, pending), then a
 * checker approves them at BENCH_WEBHOOK_RATE a second (default 100), open loop: approval i is sent at
 * start + i / rate whatever the answers, over IPC to the system's process, which runs decideOperation as the
 * console would; the executor completes them as they come, so completions happen at about that rate. For every
 * event the receiver got, latency = when its body was complete here minus the envelope's createdAt (the
 * OperationCompleted event's stored commit time; both are this machine's wall clock, the receipt with
 * sub-millisecond precision, createdAt to the millisecond). Every delivery's signature is verified
 * (the standardwebhooks library, at the time it arrived) and its envelope checked against the completion it reports; duplicates (an event id
 * received twice), missing events and deliveries out of event order are counted and must all be 0.
 *
 * Baselines in the same run, the floors a webhook cannot beat:
 *  - the same completions' commit -> an event-store subscriber in the system's process seeing them
 *    (subscribeToAll with an OperationCompleted filter, woken by the append as the outbox is): measured during
 *    the steady phase, on the same events, under the same load;
 *  - a raw HTTP POST from the system's process to the same receiver, the body of a real delivery, a fresh
 *    connection each (as the sender: agent false), BENCH_WEBHOOK_FLOOR_POSTS of them (default 1000) at the same
 *    rate, with the system idle: send -> body complete here (one way, the two processes' wall clocks).
 * The webhook's latency is reported against the subscriber floor and against the sum of both floors (what a
 * delivery costs at least: learning of the commit, then one POST), as a difference and as a ratio.
 *
 * Burst: the receiver answers 503 while BENCH_WEBHOOK_BURST cash-ins (default 1000) are created, approved in bulk
 * and completed, until the outbox has queued them all; then it answers 200 again. The dispatcher retries the
 * first undelivered event on its backoff (WEBHOOK_RETRY_BASE_MS, default 5 s), so the first delivery comes at its
 * next retry; from there the drain rate (deliveries/s, first to last) and the order (event order, no duplicate).
 *
 * BENCH_WEBHOOK_CPU_PROF=<dir> starts the system's process with --cpu-prof into that directory;
 * BENCH_WEBHOOK_SYSTEM_ENV='{"WEBHOOK_POLL_INTERVAL_MS":"100"}' adds configuration (the section then names it).
 */
import { fork, type ChildProcess } from 'node:child_process';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { Webhook } from 'standardwebhooks';
import { loadConfig } from '../src/config.ts';
import { call } from '../test/support/system.ts';
import { startWebhookReceiver, type ReceivedWebhook } from '../test/support/webhook-receiver.ts';
import { inParallel } from './support/in-parallel.ts';
import { machineNote, writeBenchSection } from './support/report.ts';
import type { DeliveryTimeline, Meter, Request, SeenCompletion } from './support/webhook-system.ts';

const N = Number(process.env.BENCH_WEBHOOK_OPS ?? 3000);
const RATE = Number(process.env.BENCH_WEBHOOK_RATE ?? 100);
const N_BURST = Number(process.env.BENCH_WEBHOOK_BURST ?? 1000);
const N_FLOOR = Number(process.env.BENCH_WEBHOOK_FLOOR_POSTS ?? 1000);
const CPU_PROF = process.env.BENCH_WEBHOOK_CPU_PROF;
const PHONES = 10;
const IN_FLIGHT = 64;
const HEADING = '## Webhooks (npm run bench:webhooks)';
/** BENCH_WEBHOOK_SYSTEM_ENV: JSON of more configuration for the system (experiments; the section says what was used). */
const EXTRA_ENV = JSON.parse(process.env.BENCH_WEBHOOK_SYSTEM_ENV ?? '{}') as Record<string, string>;
const ENV = { WEBHOOK_ALLOW_INSECURE_LOCALHOST: 'true', ...EXTRA_ENV };
const CONFIG = loadConfig({ LOG_LEVEL: 'silent', ...ENV });
const HOST = fileURLToPath(new URL('./support/webhook-system.ts', import.meta.url));

/** Wall-clock epoch ms, sub-millisecond (as the system's process measures). */
const wallNow = () => performance.timeOrigin + performance.now();
const wallOf = (r: ReceivedWebhook) => performance.timeOrigin + r.receivedAt;

/** The standardwebhooks library's verdict as the receiver would have given it on arrival (its window reads Date.now). */
function verifiesOnArrival(secret: string, r: ReceivedWebhook): boolean {
  const realNow = Date.now;
  Date.now = () => wallOf(r);
  try {
    new Webhook(secret).verify(
      r.body,
      Object.fromEntries(Object.entries(r.headers).map(([name, value]) => [name, String(value)])),
    );
    return true;
  } catch {
    return false;
  } finally {
    Date.now = realNow;
  }
}
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// ---------------------------------------------------------------- the system's process, over IPC

interface SystemProcess {
  request<T>(request: Request): Promise<T>;
  baseUrl: string;
  child: ChildProcess;
}

async function startSystemProcess(topology: 'together' | 'apart' = 'together'): Promise<SystemProcess> {
  const execArgv = ['--import', 'tsx', ...(CPU_PROF ? ['--cpu-prof', '--cpu-prof-dir', CPU_PROF] : [])];
  const child = fork(HOST, [JSON.stringify(ENV), topology], {
    execArgv,
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const waiting = new Map<number, { resolve: (value: unknown) => void; reject: (error: Error) => void }>();
  let nextID = 0;
  const ready = new Promise<string>((resolve, reject) => {
    child.on(
      'message',
      (message: { ready?: boolean; baseUrl?: string; id?: number; ok?: boolean; result?: unknown; error?: string }) => {
        if (message.ready) return resolve(message.baseUrl!);
        const entry = waiting.get(message.id!);
        waiting.delete(message.id!);
        if (message.ok) entry?.resolve(message.result);
        else entry?.reject(new Error(`system process: ${message.error}`));
      },
    );
    child.once('exit', (code, signal) => {
      const error = new Error(`the system's process exited (${code ?? signal})`);
      reject(error);
      for (const entry of waiting.values()) entry.reject(error);
      waiting.clear();
    });
  });
  const baseUrl = await ready;
  return {
    baseUrl,
    child,
    request<T>(request: Request) {
      const id = nextID++;
      return new Promise<T>((resolve, reject) => {
        waiting.set(id, { resolve: resolve as (value: unknown) => void, reject });
        child.send({ id, request });
      });
    },
  };
}

// ---------------------------------------------------------------- statistics

interface Dist {
  n: number;
  mean: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
}

function percentile(sorted: number[], q: number): number {
  return sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

function dist(values: number[]): Dist {
  const sorted = [...values].sort((a, b) => a - b);
  return {
    n: sorted.length,
    mean: sorted.reduce((sum, v) => sum + v, 0) / sorted.length,
    p50: percentile(sorted, 0.5),
    p90: percentile(sorted, 0.9),
    p99: percentile(sorted, 0.99),
    max: sorted.at(-1) ?? NaN,
  };
}

/** Receipts whose event comes before one received earlier (by event position): 0 when delivered in order. */
function outOfOrder(positions: number[]): number {
  let highest = -Infinity;
  let late = 0;
  for (const position of positions) {
    if (position < highest) late++;
    highest = Math.max(highest, position);
  }
  return late;
}

// ---------------------------------------------------------------- the bench

interface Setup {
  distributorID: string;
  apiKey: string;
  phones: string[];
}

async function createCashIns(
  system: SystemProcess,
  setup: Setup,
  n: number,
): Promise<{ operationIDs: string[]; seconds: number }> {
  const started = performance.now();
  const operationIDs = await inParallel(Array.from({ length: n }), IN_FLIGHT, async (_, i) => {
    const r = await call(system.baseUrl, 'POST', `/api/v1/distributors/${setup.distributorID}/operations`, {
      apiKey: setup.apiKey,
      body: { operationType: 'cash-in', amount: '1.00', phoneTo: setup.phones[i % setup.phones.length] },
    });
    if (r.status !== 200) throw new Error(`create failed: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body.operationID as string;
  });
  return { operationIDs, seconds: (performance.now() - started) / 1000 };
}

/** Asks the system's process until it has seen every one of these operations complete. */
async function completionsOf(
  system: SystemProcess,
  operationIDs: string[],
  timeoutMs: number,
): Promise<Map<string, SeenCompletion>> {
  const wanted = new Set(operationIDs);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const seen = (await system.request<SeenCompletion[]>({ cmd: 'completions', after: 0 })).filter((s) =>
      wanted.has(s.operationID),
    );
    if (seen.length >= wanted.size) return new Map(seen.map((s) => [s.eventID, s]));
    if (Date.now() > deadline) throw new Error(`only ${seen.length} of ${wanted.size} operations completed`);
    await sleep(200);
  }
}

async function until(condition: () => boolean | Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await sleep(20);
  }
}

interface Checked {
  /** Deliveries (requests) received. */
  requests: number;
  distinct: number;
  duplicates: number;
  missing: number;
  outOfOrder: number;
  badSignatures: number;
  /** Envelopes that are not the operation.completed of the operation their event id says. */
  wrongEnvelopes: number;
}

/** What a receiver checks: the signature, the envelope against the completion it reports; and duplicates, gaps, order. */
function check(received: ReceivedWebhook[], expected: Map<string, SeenCompletion>, secret: string): Checked {
  const ids = received.map((r) => r.json.id);
  const distinct = new Set(ids);
  let badSignatures = 0;
  let wrongEnvelopes = 0;
  for (const r of received) {
    if (!verifiesOnArrival(secret, r)) badSignatures++;
    const completion = expected.get(r.json.id);
    const envelopeOK =
      completion !== undefined &&
      r.headers['webhook-id'] === r.json.id &&
      r.json.type === 'operation.completed' &&
      Date.parse(r.json.createdAt) === completion.createdAt &&
      r.json.data.operation?.operationID === completion.operationID &&
      r.json.data.operation?.status === 'completed';
    if (!envelopeOK) wrongEnvelopes++;
  }
  return {
    requests: received.length,
    distinct: distinct.size,
    duplicates: received.length - distinct.size,
    missing: [...expected.keys()].filter((id) => !distinct.has(id)).length,
    outOfOrder: outOfOrder(received.map((r) => expected.get(r.json.id)?.position ?? -1)),
    badSignatures,
    wrongEnvelopes,
  };
}

interface Steady {
  createSeconds: number;
  webhook: Dist;
  subscriber: Dist;
  /** Completions/s: (n - 1) / (last commit - first commit). */
  completionsPerSecond: number;
  /** Deliveries/s: (n - 1) / (last receipt - first receipt). */
  deliveriesPerSecond: number;
  /** How late the approvals left against their schedule (the load generator keeping up). */
  approvalLagP99Ms: number;
  checked: Checked;
  meter: Meter;
  /** Where the time goes, from the delivery log: commit -> queued by the outbox -> attempt started -> received. */
  stages: { queued: Dist; attempted: Dist; received: Dist; post: Dist };
  /** This process's event-loop delay meanwhile (the receiver's): mean and p99 ms. */
  benchLoopDelay: { mean: number; p99: number };
  /** A real delivery's body, for the POST floor. */
  sampleBody: string;
}

async function steady(
  system: SystemProcess,
  setup: Setup,
  endpointID: string,
  secret: string,
  received: ReceivedWebhook[],
): Promise<Steady> {
  const { operationIDs, seconds: createSeconds } = await createCashIns(system, setup, N);
  console.log(`steady: ${N} cash-ins created in ${createSeconds.toFixed(1)} s; approving at ${RATE}/s`);
  received.length = 0;
  await system.request({ cmd: 'meterStart' });
  const loop = monitorEventLoopDelay({ resolution: 5 });
  loop.enable();
  const approvals: Array<Promise<unknown>> = [];
  const lags: number[] = [];
  const started = performance.now();
  for (let i = 0; i < N; i++) {
    const due = started + (i * 1000) / RATE;
    const wait = due - performance.now();
    if (wait > 0) await sleep(wait);
    lags.push(performance.now() - due);
    approvals.push(system.request({ cmd: 'approve', operationID: operationIDs[i]! }));
  }
  await Promise.all(approvals);
  const expected = await completionsOf(system, operationIDs, 120_000);
  await until(
    () => new Set(received.map((r) => r.json.id)).size >= expected.size,
    120_000,
    `all ${expected.size} deliveries`,
  );
  const meter = await system.request<Meter>({ cmd: 'meterStop' });
  loop.disable();
  await sleep(500); // any late duplicate would come now
  const firstReceipts = new Map<string, number>();
  for (const r of received) if (!firstReceipts.has(r.json.id)) firstReceipts.set(r.json.id, wallOf(r));
  const completions = [...expected.values()];
  const commits = completions.map((c) => c.createdAt);
  const receipts = [...firstReceipts.values()];
  const timeline = (await system.request<DeliveryTimeline[]>({ cmd: 'timeline', endpointID })).filter(
    (t) => expected.has(t.eventID) && firstReceipts.has(t.eventID),
  );
  const stages = {
    queued: dist(timeline.map((t) => t.queuedAt - expected.get(t.eventID)!.createdAt)),
    attempted: dist(timeline.map((t) => t.attemptAt - t.queuedAt)),
    received: dist(timeline.map((t) => firstReceipts.get(t.eventID)! - t.attemptAt)),
    post: dist(timeline.map((t) => t.postMs)),
  };
  return {
    benchLoopDelay: { mean: loop.mean / 1e6, p99: loop.percentile(99) / 1e6 },
    stages,
    createSeconds,
    webhook: dist(
      completions.filter((c) => firstReceipts.has(c.eventID)).map((c) => firstReceipts.get(c.eventID)! - c.createdAt),
    ),
    subscriber: dist(completions.map((c) => c.seenAt - c.createdAt)),
    completionsPerSecond: (completions.length - 1) / ((Math.max(...commits) - Math.min(...commits)) / 1000),
    deliveriesPerSecond: (receipts.length - 1) / ((Math.max(...receipts) - Math.min(...receipts)) / 1000),
    approvalLagP99Ms: dist(lags).p99,
    checked: check(received, expected, secret),
    meter,
    sampleBody: received[0]!.body,
  };
}

interface PostFloor {
  oneWay: Dist;
  roundTrip: Dist;
}

async function postFloor(
  system: SystemProcess,
  url: string,
  body: string,
  received: ReceivedWebhook[],
): Promise<PostFloor> {
  received.length = 0;
  const roundTrips = await system.request<number[]>({ cmd: 'postFloor', url, n: N_FLOOR, rate: RATE, body });
  if (received.length !== N_FLOOR) throw new Error(`the receiver got ${received.length} of ${N_FLOOR} floor POSTs`);
  return { oneWay: dist(received.map((r) => wallOf(r) - Number(r.headers['x-sent-at']))), roundTrip: dist(roundTrips) };
}

interface Burst {
  operations: number;
  /** How long the outage lasted until all were queued, and the 503 answers meanwhile. */
  queuedAfterSeconds: number;
  refusals: number;
  /** From the receiver answering 200 again to the first delivery (the head's next retry). */
  firstAfterMs: number;
  drainSeconds: number;
  deliveriesPerSecond: number;
  checked: Checked;
  meter: Meter;
}

async function burst(
  system: SystemProcess,
  setup: Setup,
  endpointID: string,
  secret: string,
  received: ReceivedWebhook[],
  setDown: (down: boolean) => void,
): Promise<Burst> {
  const { operationIDs } = await createCashIns(system, setup, N_BURST);
  const before = await system.request<{ pending: number }>({ cmd: 'deliveries', endpointID });
  if (before.pending !== 0) throw new Error(`${before.pending} deliveries still pending before the burst`);
  setDown(true);
  received.length = 0;
  const outage = performance.now();
  await system.request({ cmd: 'approveAll', operationIDs, inFlight: IN_FLIGHT });
  const expected = await completionsOf(system, operationIDs, 120_000);
  await until(
    async () => (await system.request<{ pending: number }>({ cmd: 'deliveries', endpointID })).pending >= N_BURST,
    120_000,
    'the backlog queued',
  );
  const queuedAfterSeconds = (performance.now() - outage) / 1000;
  const refusals = received.length;
  await system.request({ cmd: 'meterStart' });
  received.length = 0;
  const back = wallNow();
  setDown(false);
  await until(
    () => new Set(received.map((r) => r.json.id)).size >= expected.size,
    300_000,
    `all ${expected.size} backlog deliveries`,
  );
  const meter = await system.request<Meter>({ cmd: 'meterStop' });
  await sleep(500);
  const receipts = received.map(wallOf);
  const drainSeconds = (Math.max(...receipts) - Math.min(...receipts)) / 1000;
  return {
    operations: N_BURST,
    queuedAfterSeconds,
    refusals,
    firstAfterMs: Math.min(...receipts) - back,
    drainSeconds,
    deliveriesPerSecond: (receipts.length - 1) / drainSeconds,
    checked: check(received, expected, secret),
    meter,
  };
}

// ---------------------------------------------------------------- the report

const fmt = (n: number, digits = 0) =>
  n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
const ms = (n: number) => fmt(n, 1);
const ratio = (a: number, b: number) => `${(a / b).toFixed(1)}x`;

function distRow(name: string, d: Dist, note: string): string {
  return `| ${name} | ${fmt(d.n)} | ${ms(d.p50)} | ${ms(d.p90)} | ${ms(d.p99)} | ${ms(d.max)} | ${note} |`;
}

function checkedNote(c: Checked): string {
  return `${fmt(c.requests)} requests, ${fmt(c.distinct)} distinct events; duplicates ${c.duplicates}, missing ${c.missing}, out of order ${c.outOfOrder}, bad signatures ${c.badSignatures}, wrong envelopes ${c.wrongEnvelopes}`;
}

/** Whether the endpoint's one-at-a-time queue kept up, and why not when it did not. */
function saturation(s: Steady): string[] {
  const postShare = (s.deliveriesPerSecond * s.stages.post.mean) / 1000;
  const kept = s.deliveriesPerSecond >= 0.95 * s.completionsPerSecond && s.stages.attempted.p50 < 1000 / RATE;
  const short =
    s.completionsPerSecond < 0.95 * RATE
      ? [
          `The system's process did not reach ${RATE} completions/s in this run (${fmt(s.completionsPerSecond, 1)}/s: approvals, executions and deliveries share its one event loop`,
          "and this machine's 2 cores with whatever else ran), so the phase lasted longer and the webhook figures are those of an overloaded system.",
        ]
      : [];
  return [
    ...short,
    `An endpoint's deliveries go one at a time, in event order: its worker sent ${fmt(s.deliveriesPerSecond, 1)}/s for ${fmt(s.completionsPerSecond, 1)} completions/s, its POSTs alone`,
    `taking ${fmt(s.stages.post.mean, 1)} ms each on average (${(postShare * 100).toFixed(0)}% of the time), against ${fmt(1000 / RATE, 0)} ms between completions. ${
      kept
        ? 'It kept up: the queue stayed short.'
        : 'It did not keep up: the queue grew and "queued -> attempt started" is the wait in it. Each POST needs a few turns of the system\'s event loop (connect, response), and each turn waits behind the synchronous SQLite commits (fsync) of the executor, the projections, the outbox and the attempts\' own records, so a busy machine stretches a delivery several times over its idle round trip.'
    }`,
    '',
  ];
}

function section(s: Steady, floor: PostFloor, b: Burst, seconds: number, apart: Steady): string {
  const both = {
    p50: s.subscriber.p50 + floor.oneWay.p50,
    p90: s.subscriber.p90 + floor.oneWay.p90,
    p99: s.subscriber.p99 + floor.oneWay.p99,
  };
  const vs = (q: 'p50' | 'p90' | 'p99') =>
    `| ${q} | ${ms(s.webhook[q])} | ${ms(s.subscriber[q])} | +${ms(s.webhook[q] - s.subscriber[q])} | ${ratio(s.webhook[q], s.subscriber[q])} | ${ms(both[q])} | +${ms(s.webhook[q] - both[q])} | ${ratio(s.webhook[q], both[q])} |`;
  return [
    HEADING,
    '',
    machineNote(),
    'Completion -> delivered: the whole system (every part, embedded stores and ledger, default configuration but',
    `WEBHOOK_ALLOW_INSECURE_LOCALHOST=true${
      Object.keys(EXTRA_ENV).length > 0
        ? ` and ${Object.entries(EXTRA_ENV)
            .map(([k, v]) => `${k}=${v}`)
            .join(', ')}`
        : ''
    }: WEBHOOK_CONCURRENCY ${CONFIG.WEBHOOK_CONCURRENCY}, WEBHOOK_POLL_INTERVAL_MS ${CONFIG.WEBHOOK_POLL_INTERVAL_MS}, WEBHOOK_RETRY_BASE_MS ${CONFIG.WEBHOOK_RETRY_BASE_MS}) in a process of its own;`,
    'one distributor, one endpoint subscribed to operation.completed, a plain node:http receiver in the bench process answering 200.',
    `${fmt(N)} cash-ins created over HTTP beforehand (${s.createSeconds.toFixed(1)} s), then approved by a checker at ${RATE}/s, open loop (approvals sent on schedule,`,
    `p99 ${ms(s.approvalLagP99Ms)} ms late), run in the system's process as the console would; the executor completes them as they come.`,
    "Latency: the receipt of the body (bench process, wall clock) minus the envelope's createdAt, the OperationCompleted event's stored",
    "commit time (same machine's clock, to the ms). Baselines in the same run: the same completions' commit -> an event-store subscriber",
    "in the system's process (subscribeToAll, woken by the append as the webhook outbox is); and raw HTTP POSTs of a real delivery's",
    `body from the system's process to the same receiver, a fresh connection each as the sender makes them, ${fmt(N_FLOOR)} at ${RATE}/s with the`,
    'system idle (send -> body received, one way).',
    '',
    '| measure | events | p50 ms | p90 ms | p99 ms | max ms | note |',
    '|---|---:|---:|---:|---:|---:|---|',
    distRow('floor: commit -> in-process subscriber', s.subscriber, 'the same completions, under the same load'),
    distRow(
      'floor: raw HTTP POST, one way',
      floor.oneWay,
      `round trip p50 ${ms(floor.roundTrip.p50)}, p99 ${ms(floor.roundTrip.p99)} ms`,
    ),
    distRow(
      `webhook: commit -> delivered, ${RATE} completions/s`,
      s.webhook,
      `${fmt(s.completionsPerSecond, 1)} completions/s, ${fmt(s.deliveriesPerSecond, 1)} deliveries/s achieved`,
    ),
    distRow(
      'webhooks part apart: floor, commit -> subscriber',
      apart.subscriber,
      'a second run, a fresh system: every part but webhooks in one process',
    ),
    distRow(
      `webhooks part apart: commit -> delivered, ${RATE} completions/s`,
      apart.webhook,
      `\`serve webhooks\` in its own process, as docker-compose.yml runs it; ${fmt(apart.completionsPerSecond, 1)} completions/s, ${fmt(apart.deliveriesPerSecond, 1)} deliveries/s; ${checkedNote(apart.checked)}`,
    ),
    '',
    `With every part in one process (what \`npm start\` runs), the webhooks share its event loop with the executor, the projections and the`,
    "approvals (a loaded run has seen its queue fall behind for seconds); in its own process the dispatcher's loop waits on nothing",
    'but its own work, and its outbox learns of commits by polling the shared embedded store (every 15 ms: most of its higher p50).',
    'The tables below are of the first run.',
    '',
    'The webhook against the floors, per percentile: against the subscriber alone, and against the subscriber plus one POST (what a',
    "delivery costs at least: learning of the commit, then sending). The difference is the outbox (reading the operation's stream,",
    'folding the body, committing the delivery) and the dispatcher (finding it, the lease, recording the attempt).',
    '',
    '| percentile | webhook ms | subscriber ms | difference | ratio | subscriber + POST ms | difference | ratio |',
    '|---|---:|---:|---:|---:|---:|---:|---:|',
    vs('p50'),
    vs('p90'),
    vs('p99'),
    '',
    "Where the webhook's time goes, from the delivery log (times to the ms, in the system's process but the receipt): the outbox",
    'queues the delivery (its clock before its commit), the dispatcher starts the attempt (before signing and sending), the receiver',
    'has the body. The deliveries attempted once, which is all of them here.',
    '',
    '| stage | deliveries | p50 ms | p90 ms | p99 ms | max ms | note |',
    '|---|---:|---:|---:|---:|---:|---|',
    distRow('commit -> queued by the outbox', s.stages.queued, "subscription, the operation's stream read and folded"),
    distRow('queued -> attempt started', s.stages.attempted, 'the dispatcher waking, its queries, the lease'),
    distRow('attempt started -> received', s.stages.received, 'signing, connecting, sending'),
    distRow(
      "the attempt's POST, as the sender timed it",
      s.stages.post,
      `to the response's end, in ms; the same POST with the system idle: round trip p50 ${ms(floor.roundTrip.p50)}, p99 ${ms(floor.roundTrip.p99)} ms`,
    ),
    '',
    ...saturation(s),
    `Checked at the receiver: ${checkedNote(s.checked)}. The system's process used`,
    `${ms(s.meter.cpuMs / N)} ms of CPU per completion (everything: approval, execution, projections, outbox, delivery); its event-loop delay`,
    `mean ${ms(s.meter.loopDelayMeanMs)} ms, p99 ${ms(s.meter.loopDelayP99Ms)} ms, max ${ms(s.meter.loopDelayMaxMs)} ms (the bench process's, with the receiver: mean ${ms(s.benchLoopDelay.mean)}, p99 ${ms(s.benchLoopDelay.p99)} ms).`,
    '',
    `Burst: the receiver answered 503 while ${fmt(b.operations)} cash-ins were approved in bulk and completed, until the outbox had queued them`,
    `all (${b.queuedAfterSeconds.toFixed(1)} s; ${fmt(b.refusals)} attempts refused meanwhile: only the first event is tried, on its backoff, the others wait behind it);`,
    "then it answered 200. The first delivery came at the first event's next retry; the drain rate is from the first delivery to the last.",
    '',
    '| scenario | deliveries | first delivery after the receiver is back | drain s | deliveries/s | vs steady rate | checked |',
    '|---|---:|---:|---:|---:|---:|---|',
    `| backlog after an outage | ${fmt(b.operations)} | ${fmt(b.firstAfterMs / 1000, 1)} s | ${b.drainSeconds.toFixed(1)} | ${fmt(b.deliveriesPerSecond, 1)} | ${ratio(b.deliveriesPerSecond, RATE)} | ${checkedNote(b.checked)} |`,
    '',
    `During the drain the system's process used ${ms(b.meter.cpuMs / b.operations)} ms of CPU per delivery (event-loop delay mean ${ms(b.meter.loopDelayMeanMs)} ms, p99 ${ms(b.meter.loopDelayP99Ms)} ms).`,
    `Whole run: ${seconds.toFixed(0)} s.`,
    '',
  ].join('\n');
}

async function main(): Promise<void> {
  const started = performance.now();
  console.log(`bench:webhooks: ${N} completions at ${RATE}/s, a burst of ${N_BURST}, ${N_FLOOR} floor POSTs`);
  const receiver = await startWebhookReceiver();
  let down = false;
  receiver.respond(() => (down ? 503 : 200));
  const system = await startSystemProcess();
  try {
    const setup = await system.request<Setup>({ cmd: 'setup', phones: PHONES, float: '10000000' });
    const { endpointID, secret } = await system.request<{ endpointID: string; secret: string }>({
      cmd: 'endpoint',
      url: receiver.url,
      eventTypes: ['operation.completed'],
    });
    const s = await steady(system, setup, endpointID, secret, receiver.received);
    console.log('steady', s);
    const floor = await postFloor(system, receiver.url, s.sampleBody, receiver.received);
    console.log('POST floor', floor);
    const b = await burst(system, setup, endpointID, secret, receiver.received, (value) => (down = value));
    console.log('burst', b);
    await system.request({ cmd: 'close' }).catch(() => undefined);
    await new Promise((resolve) =>
      system.child.exitCode === null ? system.child.once('exit', resolve) : resolve(null),
    );
    // The same steady phase with the webhooks part in a process of its own, as docker-compose.yml runs it.
    const apartSystem = await startSystemProcess('apart');
    let apart: Steady;
    try {
      const apartSetup = await apartSystem.request<Setup>({ cmd: 'setup', phones: PHONES, float: '10000000' });
      const apartEndpoint = await apartSystem.request<{ endpointID: string; secret: string }>({
        cmd: 'endpoint',
        url: receiver.url,
        eventTypes: ['operation.completed'],
      });
      apart = await steady(apartSystem, apartSetup, apartEndpoint.endpointID, apartEndpoint.secret, receiver.received);
      console.log('steady, webhooks apart', apart);
    } finally {
      await apartSystem.request({ cmd: 'close' }).catch(() => undefined);
      await new Promise((resolve) =>
        apartSystem.child.exitCode === null ? apartSystem.child.once('exit', resolve) : resolve(null),
      );
    }
    const problems = [s.checked, b.checked, apart.checked].flatMap((c) =>
      c.duplicates || c.missing || c.outOfOrder || c.badSignatures || c.wrongEnvelopes ? [checkedNote(c)] : [],
    );
    const text = section(s, floor, b, (performance.now() - started) / 1000, apart);
    writeBenchSection(HEADING, text);
    console.log(text);
    if (problems.length > 0) throw new Error(`deliveries wrong: ${problems.join('; ')}`);
  } finally {
    if (system.child.connected) await system.request({ cmd: 'close' }).catch(() => undefined);
    await new Promise((resolve) =>
      system.child.exitCode === null ? system.child.once('exit', resolve) : resolve(null),
    );
    await receiver.close();
  }
}

await main();

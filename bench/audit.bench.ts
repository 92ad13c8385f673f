/**
 * Audit throughput on the embedded store:
 *   npm run bench:audit                        (writes the "Audit" section of docs/benchmarks.md)
 *   BENCH_EVENTS=100000 npm run bench:audit    (a quick check)
 *   BENCH_ONLY=appends npm run bench:audit     (part 1 only: the decorator's cost on appends)
 *
 * 1. The hash-chain decorator's cost on appends like bench:store's (the raw store beside the decorated one,
 *    alternating, same run), and on the pipeline's speculative chains on one hot stream.
 * 2. A history of BENCH_EVENTS events (default 1,000,000) appended through the decorator with appendMulti,
 *    one call per command as the system makes them (parties, users and keys; issuance; then cash-ins
 *    requested, approved or rejected, claimed and completed with their money movements, lifecycles
 *    interleaved), submitted in waves of calls on distinct streams so that group commit batches them; a
 *    sealer running meanwhile (a seal every 1000 events); the ledger's transactions written beside it,
 *    hash-chained as the embedded ledger chains them.
 * 3. `audit verify` (every check, the ledger reconciliation included) and `events export` over that
 *    history, beside the floor measured in the same run: a plain readAll of the same events in the same
 *    pages. Verify must report no problem.
 */
import { randomUUID } from 'node:crypto';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { chainID, openEmbeddedLedger } from '../src/adapters/ledger/embedded-ledger.ts';
import { openSqliteDatabase } from '../src/adapters/sqlite/sqlite-database.ts';
import { openSqliteEventStore } from '../src/adapters/sqlite/sqlite-event-store.ts';
import { exportEvents, importEvents } from '../src/audit/export-import.ts';
import { withHashChain } from '../src/audit/hash-chain.ts';
import { lastSeal, startSealer } from '../src/audit/sealer.ts';
import { verifyHistory } from '../src/audit/verify.ts';
import type { OperationRequested, WalletRef } from '../src/domain/events.ts';
import { streams } from '../src/domain/streams.ts';
import type { EventStore, NewEvent, StreamAppend } from '../src/ports/event-store.ts';
import type { LedgerLeg } from '../src/ports/ledger.ts';
import { tempDir } from '../test/support/temp-dir.ts';
import { machineNote, writeBenchSection } from './support/report.ts';

const HEADING = '## Audit (npm run bench:audit)';
const TARGET_EVENTS = Number(process.env.BENCH_EVENTS ?? 1_000_000);
const PAGE = 1000;
const DISTRIBUTORS = 500;
const INDIVIDUALS = 20_000;
const LAG = { approve: 40, claim: 80, complete: 120 };
const WAVE = 1000;
const SEAL_EVERY = 1000;
const AIM = 100_000;
const RUNS = Number(process.env.BENCH_RUNS ?? 3);

const dir = tempDir('audit-bench-');
let files = 0;
const freshFile = () => join(dir.path, `store-${files++}.sqlite`);
const rate = (count: number, startedMs: number) => count / ((performance.now() - startedMs) / 1000);
const fmt = (value: number) => Math.round(value).toLocaleString('en-US');
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

// ---- 1. the decorator on appends ------------------------------------------------------------------------------

function storeEvent(seq: number): NewEvent {
  return {
    type: 'WalletCredited',
    data: { walletId: `w-${seq % 1000}`, amount: '1250.50', currency: 'KES', reference: `ref-${seq}`, seq },
    metadata: { correlationId: randomUUID(), causationId: randomUUID(), actor: 'system:bench' },
  };
}

async function withStore<T>(chained: boolean, run: (store: EventStore) => Promise<T>): Promise<T> {
  const raw = openSqliteEventStore({ file: freshFile() });
  const store = chained ? withHashChain(raw) : raw;
  try {
    return await run(store);
  } finally {
    await store.close();
  }
}

/** bench:store's first scenario: 64 callers, each appending one event with `any` as soon as its previous one resolved. */
const singleConcurrent = (chained: boolean, count = 20_000) =>
  withStore(chained, async (store) => {
    let next = 0;
    const started = performance.now();
    await Promise.all(
      Array.from({ length: 64 }, async () => {
        while (next < count) {
          const seq = next++;
          await store.append(`wallet-${seq % 1000}`, [storeEvent(seq)], 'any');
        }
      }),
    );
    return rate(count, started);
  });

/** bench:store's third scenario: 100-event appends awaited one at a time. */
const batches = (chained: boolean, count = 50_000) =>
  withStore(chained, async (store) => {
    const started = performance.now();
    for (let seq = 0; seq < count; seq += 100) {
      await store.append(
        `wallet-${seq / 100}`,
        Array.from({ length: 100 }, (_, i) => storeEvent(seq + i)),
        'any',
      );
    }
    return rate(count, started);
  });

/**
 * The command pipeline's speculative decisions on one hot stream: 64 appends submitted at once, each at the
 * revision the previous one will reach. Raw, they share one group commit; chained, each waits for the one
 * it builds on to commit (see hash-chain.ts for why).
 */
const hotStream = (chained: boolean, rounds = 20) =>
  withStore(chained, async (store) => {
    let revision = -1;
    const started = performance.now();
    for (let round = 0; round < rounds; round++) {
      await Promise.all(
        Array.from({ length: 64 }, (_, i) =>
          store.append('wallet-hot', [storeEvent(i)], revision + i < 0 ? 'no_stream' : revision + i),
        ),
      );
      revision += 64;
    }
    return rate(rounds * 64, started);
  });

interface AppendRow {
  scenario: string;
  raw: number;
  chained: number;
}

async function appendCosts(): Promise<AppendRow[]> {
  await singleConcurrent(true, 2000);
  await singleConcurrent(false, 2000);
  const rows: AppendRow[] = [];
  for (const [scenario, run] of [
    ['single-event appends (`any`), 64 in flight', singleConcurrent],
    ['100-event appends (`any`), awaited one at a time', batches],
    ['speculative chain on one stream, 64 in flight', hotStream],
  ] as const) {
    const raw: number[] = [];
    const chained: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      raw.push(await run(false));
      chained.push(await run(true));
    }
    const row = { scenario, raw: median(raw), chained: median(chained) };
    console.error(`${scenario}: raw ${fmt(row.raw)} ev/s, chained ${fmt(row.chained)} ev/s`);
    rows.push(row);
  }
  return rows;
}

// ---- 2. the history ----------------------------------------------------------------------------------------------

interface Distributor {
  id: string;
  keyID: string;
  maker: string;
  checker: string;
}
const distributors: Distributor[] = Array.from({ length: DISTRIBUTORS }, () => ({
  id: randomUUID(),
  keyID: `key_${randomUUID().replaceAll('-', '').slice(0, 24)}`,
  maker: randomUUID(),
  checker: randomUUID(),
}));
const phone = (i: number) => `+2348${String(100_000_000 + i).slice(0, 9)}`;
const meta = (actor: string, correlationId: string = randomUUID()) => ({ actor, correlationId });
const ISSUANCE: WalletRef = { kind: 'platform', id: 'issuance' };

/** One command's appends: one appendMulti call. */
type Call = StreamAppend[];

class Ledger {
  previous = '0'.repeat(64);
  sequence = 0;
  rows: Array<[number, string, string, string, string, string]> = [];
  submit(operationID: string, legs: LedgerLeg[], createdAt: string): { blockchainID: string; sequenceNumber: number } {
    const tx = { sequenceNumber: ++this.sequence, operationID, legs, createdAt };
    const blockchainID = chainID(this.previous, tx);
    this.rows.push([tx.sequenceNumber, blockchainID, this.previous, operationID, JSON.stringify(legs), createdAt]);
    this.previous = blockchainID;
    return { blockchainID, sequenceNumber: tx.sequenceNumber };
  }
}

function request(data: OperationRequested['data'], actor: string): Call {
  const correlation = meta(actor);
  const calls: Call = [
    {
      stream: streams.operation(data.operationID),
      expectedRevision: 'no_stream',
      events: [{ type: 'OperationRequested', data, metadata: correlation }],
    },
  ];
  if (data.payer.kind !== 'platform') {
    calls.push({
      stream: streams.wallet(data.payer),
      expectedRevision: 'any',
      events: [
        {
          type: 'FundsHeld',
          data: { wallet: data.payer, operationID: data.operationID, amount: data.amount },
          metadata: correlation,
        },
      ],
    });
  }
  return calls;
}

const approve = (data: OperationRequested['data'], by: string, actor: string, at: string): Call => [
  {
    stream: streams.operation(data.operationID),
    expectedRevision: 'any',
    events: [
      {
        type: 'OperationApproved',
        data: { operationID: data.operationID, approvedBy: by, approvedAt: at },
        metadata: meta(actor),
      },
    ],
  },
];

const reject = (data: OperationRequested['data'], by: string, at: string): Call => {
  const correlation = meta(`user:${by}`);
  return [
    {
      stream: streams.operation(data.operationID),
      expectedRevision: 'any',
      events: [
        {
          type: 'OperationRejected',
          data: { operationID: data.operationID, rejectedBy: by, reason: 'not expected', rejectedAt: at },
          metadata: correlation,
        },
      ],
    },
    {
      stream: streams.wallet(data.payer),
      expectedRevision: 'any',
      events: [
        {
          type: 'HoldReleased',
          data: { wallet: data.payer, operationID: data.operationID, amount: data.amount, reason: 'rejected' },
          metadata: correlation,
        },
      ],
    },
  ];
};

const claim = (data: OperationRequested['data'], at: string): Call => [
  {
    stream: streams.operation(data.operationID),
    expectedRevision: 'any',
    events: [
      {
        type: 'OperationExecutionStarted',
        data: { operationID: data.operationID, executorID: 'bench', attempt: 1, leaseUntil: at, startedAt: at },
        metadata: meta('system:executor:bench', data.operationID),
      },
    ],
  },
];

function complete(data: OperationRequested['data'], ledger: Ledger, at: string): Call {
  const { operationID } = data;
  const tx = ledger.submit(
    operationID,
    [{ from: `${data.payer.kind}:${data.payer.id}`, to: `${data.payee.kind}:${data.payee.id}`, amount: data.amount }],
    at,
  );
  const correlation = meta('system:executor:bench', operationID);
  const held = data.payer.kind === 'platform' ? '0.00' : data.amount;
  return [
    {
      stream: streams.operation(operationID),
      expectedRevision: 'any',
      events: [
        {
          type: 'OperationSubmitted',
          data: { operationID, sequenceNumber: tx.sequenceNumber, submittedAt: at },
          metadata: correlation,
        },
        {
          type: 'OperationCompleted',
          data: {
            operationID,
            blockchainID: tx.blockchainID,
            walletOperationID: `wo_${tx.blockchainID.slice(0, 32)}`,
            sequenceNumber: tx.sequenceNumber,
            completedAt: at,
          },
          metadata: correlation,
        },
      ],
    },
    {
      stream: streams.wallet(data.payer),
      expectedRevision: 'any',
      events: [
        {
          type: 'WalletDebited',
          data: { wallet: data.payer, operationID, amount: data.amount, heldAmount: held },
          metadata: correlation,
        },
      ],
    },
    {
      stream: streams.wallet(data.payee),
      expectedRevision: 'any',
      events: [
        {
          type: 'WalletCredited',
          data: { wallet: data.payee, operationID, amount: data.amount },
          metadata: correlation,
        },
      ],
    },
  ];
}

function operation(i: number, type: 'issue' | 'cash-in', at: string): OperationRequested['data'] {
  const distributor = distributors[i % DISTRIBUTORS]!;
  const individual = phone((i * 7919) % INDIVIDUALS);
  const issue = type === 'issue';
  return {
    operationID: `op_${randomUUID().replaceAll('-', '')}`,
    party: issue ? null : { type: 'distributor', id: distributor.id },
    keyID: issue ? null : distributor.keyID,
    operationType: type,
    amount: issue ? '1000000.00' : `${(i % 9) + 1}.${String(i % 100).padStart(2, '0')}`,
    fee: '0.00',
    payer: issue ? ISSUANCE : { kind: 'distributor', id: distributor.id },
    payee: issue ? { kind: 'distributor', id: distributor.id } : { kind: 'individual', id: individual },
    payerName: issue ? 'Platform issuance' : `distributor ${i % DISTRIBUTORS}`,
    payerShortCode: issue ? null : String(1000 + (i % DISTRIBUTORS)),
    counterparty: issue
      ? { kind: 'distributor', id: distributor.id, name: `distributor ${i % DISTRIBUTORS}` }
      : { kind: 'individual', id: individual, name: 'Customer' },
    memo: i % 4 === 0 ? `invoice ${i}` : null,
    cashOutFulfillmentType: null,
    cashOutFulfillmentID: null,
    volumeDay: null,
    createdAt: at,
  };
}

/** Runs calls in order, in waves of calls on distinct streams submitted together (one group commit each). */
class WaveRunner {
  private readonly store: EventStore;
  private wave: Call[] = [];
  private streams = new Set<string>();
  events = 0;
  constructor(store: EventStore) {
    this.store = store;
  }

  async add(call: Call): Promise<void> {
    if (this.wave.length >= WAVE || call.some((append) => this.streams.has(append.stream))) await this.flush();
    this.wave.push(call);
    for (const append of call) this.streams.add(append.stream);
    this.events += call.reduce((sum, append) => sum + append.events.length, 0);
  }

  async flush(): Promise<void> {
    const wave = this.wave;
    this.wave = [];
    this.streams = new Set();
    await Promise.all(wave.map((call) => this.store.appendMulti(call)));
  }
}

async function generate(
  dataDir: string,
  target: number,
): Promise<{ events: number; operations: number; seconds: number; seals: number }> {
  const started = performance.now();
  const raw = openSqliteEventStore({ file: join(dataDir, 'events.sqlite') });
  const store = withHashChain(raw);
  const sealer = startSealer({
    eventStore: store,
    every: SEAL_EVERY,
    onError: (error) => console.error('sealer:', error),
  });
  const ledger = new Ledger();
  const runner = new WaveRunner(store);
  const at = (i: number) => new Date(Date.parse('2026-02-01T00:00:00.000Z') + i * 1000).toISOString();
  const operator = 'operator:bench';

  for (const [n, d] of distributors.entries()) {
    const correlation = meta(operator);
    const party = { type: 'distributor' as const, id: d.id };
    await runner.add([
      {
        stream: streams.distributor(d.id),
        expectedRevision: 'no_stream',
        events: [
          {
            type: 'DistributorOnboarded',
            data: { distributorID: d.id, name: `distributor ${n}`, shortCode: String(1000 + n), onboardedAt: at(0) },
            metadata: correlation,
          },
        ],
      },
      {
        stream: streams.user(d.maker),
        expectedRevision: 'no_stream',
        events: [
          {
            type: 'UserAdded',
            data: {
              userID: d.maker,
              party,
              email: `maker-${n}@bench.example`,
              passwordHash: 'x',
              roles: ['maker'],
              platformAdmin: false,
              addedAt: at(0),
            },
            metadata: correlation,
          },
        ],
      },
      {
        stream: streams.user(d.checker),
        expectedRevision: 'no_stream',
        events: [
          {
            type: 'UserAdded',
            data: {
              userID: d.checker,
              party,
              email: `checker-${n}@bench.example`,
              passwordHash: 'x',
              roles: ['checker'],
              platformAdmin: false,
              addedAt: at(0),
            },
            metadata: correlation,
          },
        ],
      },
      {
        stream: streams.apiKey(d.keyID),
        expectedRevision: 'no_stream',
        events: [
          {
            type: 'ApiKeyRequested',
            data: {
              keyID: d.keyID,
              party,
              label: `till ${n}`,
              permissions: ['Perform Operations'],
              maxTransactionAmount: null,
              maxDailyVolume: null,
              allowedIPs: [],
              expiresInDays: 3650,
              requestedBy: d.maker,
              requestedAt: at(0),
            },
            metadata: meta(`user:${d.maker}`),
          },
          {
            type: 'ApiKeyApproved',
            data: {
              keyID: d.keyID,
              approvedBy: d.checker,
              approvedAt: at(0),
              expiresAt: '2036-01-01T00:00:00.000Z',
              secretHash: 'x'.repeat(64),
            },
            metadata: meta(`user:${d.checker}`),
          },
        ],
      },
    ]);
  }
  for (let n = 0; n < DISTRIBUTORS; n++) {
    const data = operation(n, 'issue', at(0));
    const call = request(data, operator);
    call[0]!.events.push({
      type: 'OperationApproved',
      data: { operationID: data.operationID, approvedBy: operator, approvedAt: at(0) },
      metadata: call[0]!.events[0]!.metadata!,
    });
    await runner.add(call);
    await runner.add(claim(data, at(0)));
    await runner.add(complete(data, ledger, at(0)));
  }
  const live: Array<OperationRequested['data'] | undefined> = [];
  let i = 0;
  for (; runner.events < target; i++) {
    const now = at(i + 1);
    const data = operation(i, 'cash-in', now);
    live[i] = data;
    await runner.add(request(data, `apikey:${data.keyID}`));
    const rejected = (n: number) => n % 50 === 7;
    if (i >= LAG.approve) {
      const n = i - LAG.approve;
      const op = live[n]!;
      const checker = distributors[n % DISTRIBUTORS]!.checker;
      await runner.add(rejected(n) ? reject(op, checker, now) : approve(op, checker, `user:${checker}`, now));
    }
    if (i >= LAG.claim && !rejected(i - LAG.claim)) await runner.add(claim(live[i - LAG.claim]!, now));
    if (i >= LAG.complete) {
      const n = i - LAG.complete;
      if (!rejected(n)) await runner.add(complete(live[n]!, ledger, now));
      live[n] = undefined;
    }
  }
  // Finish the lifecycles still in flight, so that verify finds every approved operation settled.
  for (let n = Math.max(0, i - LAG.complete); n < i; n++) {
    const op = live[n]!;
    const checker = distributors[n % DISTRIBUTORS]!.checker;
    const rejected = n % 50 === 7;
    if (n >= i - LAG.approve)
      await runner.add(rejected ? reject(op, checker, at(i)) : approve(op, checker, `user:${checker}`, at(i)));
    if (rejected) continue;
    if (n >= i - LAG.claim) await runner.add(claim(op, at(i)));
    await runner.add(complete(op, ledger, at(i)));
  }
  await runner.flush();

  // The ledger's side: its own file, written below its port in large transactions (bench:rebuild does the same for events).
  await openEmbeddedLedger({ file: join(dataDir, 'ledger.sqlite') }).close();
  const db = openSqliteDatabase(join(dataDir, 'ledger.sqlite'));
  const insert = db.prepare(
    'INSERT INTO transactions (sequence, blockchain_id, previous_id, operation_id, legs, created_at) VALUES (?, ?, ?, ?, ?, ?)',
  );
  db.transaction(() => ledger.rows.forEach((row) => insert.run(...row)))();
  db.close();

  // Let the sealer seal every full range.
  const sealable = Math.floor(runner.events / SEAL_EVERY);
  let seals: number;
  for (;;) {
    const last = await lastSeal(raw);
    seals = last ? last.revision + 1 : 0;
    if (seals >= sealable) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  await sealer.stop();
  await store.close();
  return { events: runner.events, operations: i + DISTRIBUTORS, seconds: (performance.now() - started) / 1000, seals };
}

// ---- 3. verify and export -------------------------------------------------------------------------------------

async function readFloor(store: EventStore): Promise<number> {
  const started = performance.now();
  const head = await store.headPosition();
  let from = 0;
  let events = 0;
  while (from <= head) {
    const page = await store.readAll({ fromPosition: from, toPosition: head, maxCount: PAGE });
    if (page.length === 0) break;
    events += page.length;
    from = page[page.length - 1]!.position + 1;
  }
  return rate(events, started);
}

async function main(): Promise<void> {
  const benchStarted = performance.now();
  const appends = await appendCosts();
  if (process.env.BENCH_ONLY === 'appends') return;

  const source = join(dir.path, 'source');
  const { mkdirSync } = await import('node:fs');
  mkdirSync(source);
  const history = await generate(source, TARGET_EVENTS);
  console.error(
    `history: ${fmt(history.events)} events (${fmt(history.operations)} operations, ${history.seals} seals) in ${history.seconds.toFixed(1)} s (${fmt(history.events / history.seconds)} events/s through the decorator)`,
  );

  const store = openSqliteEventStore({ file: join(source, 'events.sqlite') });
  const ledger = openEmbeddedLedger({ file: join(source, 'ledger.sqlite') });
  const exportFile = join(dir.path, 'history.jsonl');
  const rows: Array<{ what: string; rate: number; floor: number }> = [];
  let verifyProblems = 0;
  let ledgerTransactions = 0;
  try {
    await readFloor(store); // warm the page cache and the JIT
    const floors: number[] = [];
    const verifies: number[] = [];
    const exports: number[] = [];
    for (let run = 0; run < RUNS; run++) {
      floors.push(await readFloor(store));
      const started = performance.now();
      const report = await verifyHistory({
        eventStore: store,
        ledger,
        ledgerChainID: chainID,
        assetScale: 2,
        pageSize: PAGE,
      });
      verifies.push(rate(report.checked.events, started));
      verifyProblems = report.problemCount;
      ledgerTransactions = report.checked.ledgerTransactions;
      if (!report.ok) console.error(JSON.stringify(report.problems.slice(0, 5), null, 2));
      const exportStarted = performance.now();
      const exported = await exportEvents(store, exportFile, { pageSize: PAGE });
      exports.push(rate(exported.events, exportStarted));
      console.error(
        `run ${run + 1}: readAll ${fmt(floors.at(-1)!)} ev/s, verify ${fmt(verifies.at(-1)!)} ev/s (${report.problemCount} problems), export ${fmt(exports.at(-1)!)} ev/s`,
      );
    }
    rows.push({ what: 'audit verify (all checks, ledger included)', rate: median(verifies), floor: median(floors) });
    rows.push({ what: 'events export (JSON Lines file)', rate: median(exports), floor: median(floors) });
  } finally {
    await store.close();
    await ledger.close();
  }
  const target = openSqliteEventStore({ file: join(dir.path, 'imported.sqlite') });
  const importStarted = performance.now();
  const imported = await importEvents(target, exportFile);
  const importRate = rate(imported.events, importStarted);
  await target.close();
  console.error(`import: ${fmt(importRate)} ev/s`);

  const seconds = (performance.now() - benchStarted) / 1000;
  const section = [
    HEADING,
    '',
    machineNote(),
    '',
    "The hash-chain decorator (src/audit/hash-chain.ts) on appends like bench:store's, each figure the median of",
    `${RUNS} runs alternating the raw embedded store and the same store wrapped in withHashChain, in events/s:`,
    '',
    '| Appends | Raw store | With hash chain | Ratio |',
    '| --- | ---: | ---: | ---: |',
    ...appends.map((r) => `| ${r.scenario} | ${fmt(r.raw)} | ${fmt(r.chained)} | ${(r.chained / r.raw).toFixed(2)} |`),
    '',
    'The last row is the price of safety on a hot stream: an append built on one still in flight waits for it',
    'to commit (one group commit per link instead of one for all), see hash-chain.ts.',
    '',
    `A history of ${fmt(history.events)} events (${fmt(history.operations)} operations over ${DISTRIBUTORS} distributors and ${fmt(INDIVIDUALS)} individuals,`,
    `${fmt(ledgerTransactions)} ledger transactions, ${history.seals} seals of ${SEAL_EVERY} events), appended through the decorator with`,
    `appendMulti, one call per command, in ${history.seconds.toFixed(0)} s (${fmt(history.events / history.seconds)} events/s), a sealer running meanwhile;`,
    `${(statSync(exportFile).size / 1e6).toFixed(0)} MB as JSON Lines. Floor: a plain readAll of the same events in pages of ${fmt(PAGE)}, measured in the same`,
    `run. Medians of ${RUNS} runs. Verify found ${verifyProblems} problem(s).`,
    '',
    '| Pass | events/s | Floor: readAll (events/s) | Ratio |',
    '| --- | ---: | ---: | ---: |',
    ...rows.map((r) => `| ${r.what} | ${fmt(r.rate)} | ${fmt(r.floor)} | ${(r.rate / r.floor).toFixed(2)} |`),
    `| events import into an empty store (its full check first, then the appends) | ${fmt(importRate)} | | |`,
    '',
    `Aim for verify: ${fmt(AIM)} events/s: ${rows[0]!.rate >= AIM ? 'met' : 'NOT met'}. Whole run: ${seconds.toFixed(0)} s.`,
    '',
  ].join('\n');
  console.log(section);
  if (TARGET_EVENTS >= 1_000_000) writeBenchSection(HEADING, section);
  else console.error('(fewer than 1,000,000 events: docs/benchmarks.md left as it is)');
  if (verifyProblems > 0) process.exitCode = 1;
}

try {
  await main();
} finally {
  if (process.env.BENCH_KEEP) console.error(`kept ${dir.path}`);
  else dir.cleanup();
}

/**
 * Execution throughput and latency, approved -> completed, with the in-process executor:
 *   npm run bench:e2e      (writes the "Execution" section of docs/benchmarks.md)
 * Scenarios:
 *  - N_ISSUE treasury issuances (requested and approved at once, issueFloat), appended as fast as they go
 *    while the executor runs;
 *  - N_CASH_IN cash-ins created over HTTP first, then approved in bulk by checkers (decideOperation).
 * Beside the floor measured in the same run: raw embedded-ledger submits of the same transfers, awaited one
 * at a time on a fresh ledger file (what the executor cannot beat: it adds a claim and a completion append
 * around every submit). Latency is from the OperationApproved event's stored createdAt to the
 * OperationCompleted event's, so it includes the time an approval waits in the executor's queue.
 */
import { inParallel } from './support/in-parallel.ts';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { openEmbeddedLedger } from '../src/adapters/ledger/embedded-ledger.ts';
import { actingUser, findUserByEmail, userContext } from '../src/commands/back-office.ts';
import { decideOperation } from '../src/commands/operation-handlers.ts';
import type { OperationApproved, OperationCompleted } from '../src/domain/events.ts';
import { ISSUANCE_ADDRESS, walletAddress, type LedgerLeg } from '../src/ports/ledger.ts';
import { allEvents, assertLedgerMatchesProjections } from '../test/support/invariants.ts';
import { issue, waitUntilSettled } from '../test/support/executor-system.ts';
import { call, startTestSystem, type TestParty, type TestSystem } from '../test/support/system.ts';
import { tempDir } from '../test/support/temp-dir.ts';
import { machineNote, writeBenchSection } from './support/report.ts';

const N_ISSUE = Number(process.env.BENCH_ISSUES ?? 5000);
const N_CASH_IN = Number(process.env.BENCH_CASH_INS ?? 2000);
const N_SINGLE = Number(process.env.BENCH_SINGLE ?? 200);
const PARTIES = 10;
const IN_FLIGHT = 64;
const HEADING = '## Execution (npm run bench:e2e)';

interface Result {
  operations: number;
  seconds: number;
  perSecond: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
}

function percentile(sorted: number[], q: number): number {
  return sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

function summarize(latencies: number[], seconds: number): Result {
  const sorted = [...latencies].sort((a, b) => a - b);
  return { operations: latencies.length, seconds, perSecond: latencies.length / seconds, p50Ms: percentile(sorted, 0.5), p99Ms: percentile(sorted, 0.99), maxMs: sorted.at(-1) ?? NaN };
}


/** Waits until these operations are completed; then approved -> completed from the stored events' times. */
async function measure(sys: TestSystem, operationIDs: string[]): Promise<Result> {
  const wanted = new Set(operationIDs);
  const deadline = Date.now() + 600_000;
  let completed: Array<OperationCompleted & { createdAt: string }> = [];
  for (;;) {
    completed = ((await allEvents(sys.system.stores.eventStore, ['OperationCompleted'])) as unknown as typeof completed).filter((e) => wanted.has(e.data.operationID));
    if (completed.length >= wanted.size) break;
    if (Date.now() > deadline) throw new Error(`only ${completed.length} of ${wanted.size} completed`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const failed = (await allEvents(sys.system.stores.eventStore, ['OperationFailed'])).filter((e) => wanted.has((e.data as { operationID: string }).operationID));
  if (failed.length > 0) throw new Error(`${failed.length} operations failed`);
  const approved = new Map(
    ((await allEvents(sys.system.stores.eventStore, ['OperationApproved'])) as unknown as Array<OperationApproved & { createdAt: string }>)
      .filter((e) => wanted.has(e.data.operationID))
      .map((e) => [e.data.operationID, Date.parse(e.createdAt)]),
  );
  const latencies = completed.map((e) => Date.parse(e.createdAt) - approved.get(e.data.operationID)!);
  const first = Math.min(...approved.values());
  const last = Math.max(...completed.map((e) => Date.parse(e.createdAt)));
  return summarize(latencies, (last - first) / 1000);
}

async function issuances(): Promise<{ burst: Result; oneAtATime: Result }> {
  const sys = await startTestSystem();
  try {
    const distributors = await inParallel(Array.from({ length: PARTIES }), 4, () => sys.party('distributor'));
    const operationIDs = await inParallel(Array.from({ length: N_ISSUE }), IN_FLIGHT, (_, i) => issue(sys, distributors[i % PARTIES]!.ref, '1.00'));
    const burst = await measure(sys, operationIDs);
    // Then one at a time, each awaited until completed: the latency of an approval that finds the executor idle.
    const single: string[] = [];
    for (let i = 0; i < N_SINGLE; i++) {
      const operationID = await issue(sys, distributors[i % PARTIES]!.ref, '1.00');
      await waitUntilSettled(sys, operationID, 30_000);
      single.push(operationID);
    }
    const oneAtATime = await measure(sys, single);
    await assertLedgerMatchesProjections(sys, { timeoutMs: 120_000 });
    return { burst, oneAtATime };
  } finally {
    await sys.close();
  }
}

async function cashIns(): Promise<Result & { createSeconds: number }> {
  const sys = await startTestSystem();
  try {
    const distributors: Array<TestParty & { apiKey: string }> = [];
    for (let i = 0; i < PARTIES; i++) {
      const party = await sys.party('distributor');
      distributors.push({ ...party, apiKey: (await party.key()).apiKey });
    }
    const phones = await inParallel(Array.from({ length: PARTIES }), 4, (_, i) => sys.individual(`+2348125${String(100_000 + i)}`, `Bench ${i}`));
    await measure(sys, await inParallel(distributors, PARTIES, (d) => issue(sys, d.ref, '1000000')));

    const createStarted = performance.now();
    const operationIDs = await inParallel(Array.from({ length: N_CASH_IN }), IN_FLIGHT, async (_, i) => {
      const d = distributors[i % PARTIES]!;
      const r = await call(sys.baseUrl, 'POST', `/api/v1/distributors/${d.ref.id}/operations`, { apiKey: d.apiKey, body: { operationType: 'cash-in', amount: '1.00', phoneTo: phones[i % PARTIES] } });
      if (r.status !== 200) throw new Error(`create failed: ${r.status} ${JSON.stringify(r.body)}`);
      return { operationID: r.body.operationID as string, distributor: d };
    });
    const createSeconds = (performance.now() - createStarted) / 1000;

    const checkers = new Map(await Promise.all(distributors.map(async (d) => [d.ref.id, await findUserByEmail(sys.backOffice, d.checkerEmail)] as const)));
    await inParallel(operationIDs, IN_FLIGHT, async ({ operationID, distributor }) => {
      const checker = checkers.get(distributor.ref.id)!;
      await decideOperation(sys.backOffice, actingUser(checker), operationID, { type: 'approve' }, userContext(checker, randomUUID()));
    });
    const result = await measure(sys, operationIDs.map((o) => o.operationID));
    await assertLedgerMatchesProjections(sys, { timeoutMs: 120_000 });
    return { ...result, createSeconds };
  } finally {
    await sys.close();
  }
}

/** The floor: the same transfers as raw ledger submits, one at a time, on a fresh ledger file. */
async function ledgerFloor(transfers: LedgerLeg[][], funding: LedgerLeg[][] = []): Promise<Result> {
  const dir = tempDir('bench-ledger-');
  const ledger = openEmbeddedLedger({ file: join(dir.path, 'ledger.sqlite') });
  try {
    for (const legs of funding) await ledger.submit({ operationID: `fund_${randomUUID()}`, legs });
    const latencies: number[] = [];
    const started = performance.now();
    for (const legs of transfers) {
      const t = performance.now();
      await ledger.submit({ operationID: `op_${randomUUID().replaceAll('-', '')}`, legs });
      latencies.push(performance.now() - t);
    }
    return summarize(latencies, (performance.now() - started) / 1000);
  } finally {
    await ledger.close();
    dir.cleanup();
  }
}

const fmt = (n: number, digits = 0) => n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });

function row(name: string, r: Result, floor: Result, note = ''): string {
  return `| ${name} | ${fmt(r.operations)} | ${fmt(r.perSecond)} | ${fmt(r.p50Ms, 1)} | ${fmt(r.p99Ms, 1)} | ${fmt(r.maxMs, 1)} | ${((r.perSecond / floor.perSecond) * 100).toFixed(0)}% | ${note} |`;
}

async function main(): Promise<void> {
  const started = performance.now();
  console.log(`bench:e2e: ${N_ISSUE} issuances, ${N_CASH_IN} cash-ins, ${PARTIES} parties`);

  const issueLegs = Array.from({ length: N_ISSUE }, (_, i): LedgerLeg[] => [{ from: ISSUANCE_ADDRESS, to: `distributor:bench-${i % PARTIES}`, amount: '1.00' }]);
  const issueFloor = await ledgerFloor(issueLegs);
  console.log('ledger floor, issuances', issueFloor);
  const issued = await issuances();
  console.log('executor, issuances', issued);

  const fundLegs = Array.from({ length: PARTIES }, (_, i): LedgerLeg[] => [{ from: ISSUANCE_ADDRESS, to: `distributor:bench-${i}`, amount: '1000000.00' }]);
  const cashInLegs = Array.from({ length: N_CASH_IN }, (_, i): LedgerLeg[] => [
    { from: `distributor:bench-${i % PARTIES}`, to: walletAddress({ kind: 'individual', id: `+2348125${String(100_000 + (i % PARTIES))}` }), amount: '1.00' },
  ]);
  const cashInFloor = await ledgerFloor(cashInLegs, fundLegs);
  console.log('ledger floor, cash-ins', cashInFloor);
  const cashedIn = await cashIns();
  console.log('executor, cash-ins', cashedIn);

  const section = [
    HEADING,
    '',
    machineNote(),
    `Approved -> completed with the in-process executor (EXECUTOR_CONCURRENCY 16, default lease and retries), the whole system running in`,
    `the same process (APIs and projections too), ${PARTIES} payers. Latency: OperationApproved's stored createdAt to OperationCompleted's,`,
    'so it includes the time an approval waits in the executor\'s queue during a burst; throughput: operations / (last completion - first approval).',
    'The floor is the embedded ledger alone: the same transfers submitted one at a time on a fresh file (WAL, synchronous=FULL), the',
    'cost every execution pays at least; "vs floor" is the executor\'s throughput as a share of it.',
    '',
    '| scenario | operations | ops/s | p50 ms | p99 ms | max ms | vs floor | note |',
    '|---|---:|---:|---:|---:|---:|---:|---|',
    row('ledger floor: issuance submits', issueFloor, issueFloor, 'per-submit latency'),
    row('executor: treasury issuances (issueFloat, 64 appends in flight)', issued.burst, issueFloor, 'approvals arrive while the executor runs'),
    row('executor: treasury issuances one at a time', issued.oneAtATime, issueFloor, 'each awaited (5 ms poll) before the next: latency with an idle executor; ops/s not a capacity'),
    row('ledger floor: cash-in submits', cashInFloor, cashInFloor, 'per-submit latency'),
    row('executor: cash-ins created over HTTP, then approved in bulk', cashedIn, cashInFloor, `${fmt(N_CASH_IN)} creates took ${cashedIn.createSeconds.toFixed(1)} s before; approvals 64 in flight`),
    '',
    'Each execution reads the operation stream, appends the claim (OperationExecutionStarted) at the revision read, submits to the',
    'ledger (its own synced SQLite transaction), and appends the completion with the wallet movements in one atomic multi-stream',
    'append: two synced event-store commits and one synced ledger commit per operation, against the floor\'s one. Concurrent',
    'executions share event-store commits (group commit); ledger submits are serialized. After each scenario the ledger was checked',
    'against the event store and the read models (test/support/invariants.ts): one transaction per completed operation, balances, chain.',
    `Whole run: ${((performance.now() - started) / 1000).toFixed(0)} s.`,
    '',
  ].join('\n');
  writeBenchSection(HEADING, section);
  console.log(section);
}

await main();

/**
 * Execution throughput and latency, approved -> completed:
 *   npm run bench:e2e      (writes the "Execution" section of docs/benchmarks.md)
 * Scenarios:
 *  - N_ISSUE treasury issuances (requested and approved at once, issueFloat), appended as fast as they go
 *    while the executor runs;
 *  - N_CASH_IN cash-ins created over HTTP first, then approved in bulk by checkers (decideOperation); then
 *    BENCH_STEADY (3,000) more approved open-loop at BENCH_STEADY_RATE (100) a second;
 *  - the cash-ins twice: the whole system in this process (all in one), and the executor apart in a
 *    `wallet-ops serve executor` child process (as docker-compose.yml runs it).
 * Beside the floor measured in the same run: raw embedded-ledger submits of the same transfers, awaited one
 * at a time on a fresh ledger file (what the executor cannot beat: it adds a claim and a completion append
 * around every submit), and the ledger's own rate with LEDGER_IN_FLIGHT submits at once (group commit).
 * BENCH_ONLY=cash-ins,steady-apart,... runs the named scenarios alone and prints them (see only()).
 * Latency is from the OperationApproved event's stored createdAt to the
 * OperationCompleted event's, so it includes the time an approval waits in the executor's queue.
 *
 * Then the same on a real EVM (unless BENCH_EVM=0), LEDGER=evm with 1 confirmation: the development chain
 * (contracts/dev-chain.ts, Hardhat's EDR, automine) in a child process of its own, a fresh WalletLedger per
 * scenario. Beside it, the chain's own floor in the same run: the same cash-in transfers sent straight
 * through the adapter (openEvmLedger().submit), one at a time and BENCH_EVM_IN_FLIGHT at once; the gas per
 * operation type from the receipts; and where a submit's time goes (JSON-RPC calls by method, CPU of this
 * process and of the chain's). Sizes: BENCH_EVM_OPS (burst and pipelined floor, default 300),
 * BENCH_EVM_SEQUENTIAL (default 100), BENCH_EVM_SINGLE (default 30).
 */
// Users' passwords hashed at the test suite's scrypt cost: setting up the parties' makers and checkers is not what
// is measured, and at production's 2^17 it took longer than the executions (no measured path hashes a password).
import '../test/support/fast-passwords.ts';
import { inParallel } from './support/in-parallel.ts';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { join } from 'node:path';
import { openEmbeddedLedger } from '../src/adapters/ledger/embedded-ledger.ts';
import { actingUser, findUserByEmail, userContext } from '../src/commands/back-office.ts';
import { decideOperation } from '../src/commands/operation-handlers.ts';
import type { OperationCompleted } from '../src/domain/events.ts';
import { ISSUANCE_ADDRESS, walletAddress, type LedgerLeg } from '../src/ports/ledger.ts';
import { allEvents, assertLedgerMatchesProjections } from '../test/support/invariants.ts';
import { issue, waitUntilSettled } from '../test/support/executor-system.ts';
import { call, startTestSystem, WITHOUT_EXECUTOR, type TestParty, type TestSystem } from '../test/support/system.ts';
import { spawnWalletOps, stopProcess } from '../test/support/processes.ts';
import { ALL_PARTS } from '../src/wallet-ops.ts';
import { tempDir } from '../test/support/temp-dir.ts';
import { machineNote, writeBenchSection } from './support/report.ts';
import { gasUsed, RpcMeter, startChainProcess, type ChainProcess, type MethodStats } from './support/evm-chain.ts';
import { openEvmLedger } from '../src/adapters/evm/evm-ledger.ts';
import { loadConfig } from '../src/config.ts';

const N_ISSUE = Number(process.env.BENCH_ISSUES ?? 5000);
const N_CASH_IN = Number(process.env.BENCH_CASH_INS ?? 2000);
const N_SINGLE = Number(process.env.BENCH_SINGLE ?? 200);
const PARTIES = 10;
const IN_FLIGHT = 64;
const HEADING = '## Execution (npm run bench:e2e)';
const WITH_EVM = process.env.BENCH_EVM !== '0';
const N_EVM = Number(process.env.BENCH_EVM_OPS ?? 300);
const N_EVM_SEQUENTIAL = Number(process.env.BENCH_EVM_SEQUENTIAL ?? 100);
const N_EVM_SINGLE = Number(process.env.BENCH_EVM_SINGLE ?? 30);
const EVM_IN_FLIGHT = Number(process.env.BENCH_EVM_IN_FLIGHT ?? 16);
const STEADY = { n: Number(process.env.BENCH_STEADY ?? 3000), rate: Number(process.env.BENCH_STEADY_RATE ?? 100) };
/** Submits at once in the ledger's own rate row (the executor's default concurrency). */
const LEDGER_IN_FLIGHT = 16;
/** BENCH_ONLY=cash-ins (comma-separated scenarios): run those alone and print them, e.g. under --cpu-prof; docs untouched. */
const ONLY = (process.env.BENCH_ONLY ?? '').split(',').filter(Boolean);
/** The executor's defaults, which the floor uses too. */
const DEFAULTS = loadConfig({ LOG_LEVEL: 'silent' });

interface Result {
  operations: number;
  seconds: number;
  perSecond: number;
  p50Ms: number;
  p90Ms: number;
  p95Ms: number;
  p99Ms: number;
  maxMs: number;
  /** Where an operation's time went, p50 and p99 ms of each stage (stored times): see Stage. */
  stages?: Record<Stage, { p50: number; p99: number }>;
}

/**
 * The stages of an execution between stored times: the approval's commit, the first claim's commit
 * (OperationExecutionStarted), the ledger transaction's time (taken inside the ledger's commit), the completion's commit.
 */
/** pickup: approved -> claimed; claimToLedger: claimed -> ledger; ledgerToCompleted: ledger -> completed. */
type Stage = 'pickup' | 'claimToLedger' | 'ledgerToCompleted';

function percentile(sorted: number[], q: number): number {
  return sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

function summarize(latencies: number[], seconds: number): Result {
  const sorted = [...latencies].sort((a, b) => a - b);
  return {
    operations: latencies.length,
    seconds,
    perSecond: latencies.length / seconds,
    p50Ms: percentile(sorted, 0.5),
    p90Ms: percentile(sorted, 0.9),
    p95Ms: percentile(sorted, 0.95),
    p99Ms: percentile(sorted, 0.99),
    maxMs: sorted.at(-1) ?? NaN,
  };
}

/**
 * Waits until these operations are completed; then approved -> completed from the stored events' times. Reads the
 * history forwards from `from` (a position before the first approval), only what is new at each poll, so that
 * waiting costs the system under measure next to nothing.
 */
async function measure(sys: Pick<TestSystem, 'system'>, operationIDs: string[], from = 0): Promise<Result> {
  const store = sys.system.stores.eventStore;
  const wanted = new Set(operationIDs);
  const approved = new Map<string, number>();
  const claimed = new Map<string, number>();
  const submitted = new Map<string, number>();
  const completed = new Map<string, number>();
  let failed = 0;
  let cursor = from;
  const deadline = Date.now() + 600_000;
  for (;;) {
    const page = await store.readAll({
      fromPosition: cursor + 1,
      maxCount: 5000,
      filter: {
        eventTypes: [
          'OperationApproved',
          'OperationExecutionStarted',
          'OperationSubmitted',
          'OperationCompleted',
          'OperationFailed',
        ],
      },
    });
    for (const event of page) {
      cursor = event.position;
      const { operationID } = event.data as { operationID: string };
      if (!wanted.has(operationID)) continue;
      if (event.type === 'OperationApproved') approved.set(operationID, Date.parse(event.createdAt));
      else if (event.type === 'OperationExecutionStarted')
        claimed.set(operationID, Math.min(claimed.get(operationID) ?? Infinity, Date.parse(event.createdAt)));
      else if (event.type === 'OperationSubmitted')
        submitted.set(operationID, Date.parse((event.data as { submittedAt: string }).submittedAt));
      else if (event.type === 'OperationCompleted') completed.set(operationID, Date.parse(event.createdAt));
      else failed += 1;
    }
    if (failed > 0) throw new Error(`${failed} operations failed`);
    if (page.length === 5000) continue;
    if (completed.size >= wanted.size) break;
    if (Date.now() > deadline) throw new Error(`only ${completed.size} of ${wanted.size} completed`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const latencies = [...completed].map(([operationID, at]) => at - approved.get(operationID)!);
  const first = Math.min(...approved.values());
  const last = Math.max(...completed.values());
  const stage = (from: Map<string, number>, to: Map<string, number>) => {
    const sorted = [...completed.keys()].map((id) => to.get(id)! - from.get(id)!).sort((a, b) => a - b);
    return { p50: percentile(sorted, 0.5), p99: percentile(sorted, 0.99) };
  };
  return {
    ...summarize(latencies, (last - first) / 1000),
    stages: {
      pickup: stage(approved, claimed),
      claimToLedger: stage(claimed, submitted),
      ledgerToCompleted: stage(submitted, completed),
    },
  };
}

async function issuances(): Promise<{ burst: Result; oneAtATime: Result }> {
  const sys = await startTestSystem();
  try {
    const distributors = await inParallel(Array.from({ length: PARTIES }), 4, () => sys.party('distributor'));
    const operationIDs = await inParallel(Array.from({ length: N_ISSUE }), IN_FLIGHT, (_, i) =>
      issue(sys, distributors[i % PARTIES]!.ref, '1.00'),
    );
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

interface CashInRun extends Result {
  createSeconds: number;
  /** The burst's completions' blockchainIDs (the chain's transaction hashes on the EVM). */
  blockchainIDs: string[];
  /** BENCH_EVM_SINGLE more, each approved once the previous one completed: the latency with an idle executor. */
  oneAtATime?: Result;
  /** CPU per operation of the burst (approvals until the last completion): this process, and the executor's own when apart. */
  cpuMsPerOp: { bench: number; executor?: number };
  steady?: SteadyRun;
}

interface SteadyRun extends Result {
  /** The rate the approvals were sent at, and how late the sender was against its schedule (ms). */
  rate: number;
  sentPerSecond: number;
  sendLateP99Ms: number;
  /** Whether the executor kept up: completions at >= 95% of the rate the approvals were sent at, p99 under a second. */
  keptUp: boolean;
}

/** CPU time (user + system) of a process, ms: this one, or another through /proc (Linux). */
function cpuMs(pid?: number): number {
  if (pid === undefined) {
    const used = process.cpuUsage();
    return (used.user + used.system) / 1000;
  }
  // /proc/<pid>/stat: utime and stime, fields 14 and 15, in clock ticks (100 a second), after the ")" of the name.
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/**
 * N cash-ins created over HTTP, then approved in bulk by checkers, on the ledger `env` selects (the
 * embedded one by default). `around` brackets the burst (approvals until the last completion).
 * `apart`: the executor in a process of its own (`wallet-ops serve executor` on the same data directory, as
 * docker-compose.yml runs it), this process running every other part. `steady`: then that many more
 * cash-ins, created first, approved open-loop at `rate` a second (each sent on schedule, whether or not the
 * earlier ones completed).
 */
async function cashIns(options: {
  n: number;
  env?: Record<string, string>;
  single?: number;
  around?: { start(): void; end(operations: number): void };
  apart?: boolean;
  steady?: { n: number; rate: number };
}): Promise<CashInRun> {
  // BENCH_EXECUTOR_ENV='{"EXECUTOR_CONCURRENCY":"64"}': settings for the executor (A/B runs).
  const env = { ...(JSON.parse(process.env.BENCH_EXECUTOR_ENV ?? '{}') as Record<string, string>), ...options.env };
  const sys = await startTestSystem(env, undefined, options.apart ? WITHOUT_EXECUTOR : ALL_PARTS);
  // BENCH_EXECUTOR_NODE_OPTIONS, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof": options for the executor's process alone.
  const childOptions: Record<string, string> = process.env.BENCH_EXECUTOR_NODE_OPTIONS
    ? { NODE_OPTIONS: process.env.BENCH_EXECUTOR_NODE_OPTIONS }
    : {};
  const executor = options.apart
    ? spawnWalletOps(sys.config.DATA_DIR, ['executor'], { ...env, ...childOptions })
    : undefined;
  try {
    const distributors: Array<TestParty & { apiKey: string }> = [];
    for (let i = 0; i < PARTIES; i++) {
      const party = await sys.party('distributor');
      distributors.push({ ...party, apiKey: (await party.key()).apiKey });
    }
    const phones = await inParallel(Array.from({ length: PARTIES }), 4, (_, i) =>
      sys.individual(`+2348125${String(100_000 + i)}`, `Bench ${i}`),
    );
    await measure(sys, await inParallel(distributors, PARTIES, (d) => issue(sys, d.ref, '1000000')));

    const create = async (i: number) => {
      const d = distributors[i % PARTIES]!;
      const r = await call(sys.baseUrl, 'POST', `/api/v1/distributors/${d.ref.id}/operations`, {
        apiKey: d.apiKey,
        body: { operationType: 'cash-in', amount: '1.00', phoneTo: phones[i % PARTIES] },
      });
      if (r.status !== 200) throw new Error(`create failed: ${r.status} ${JSON.stringify(r.body)}`);
      return { operationID: r.body.operationID as string, distributor: d };
    };
    const createStarted = performance.now();
    const operationIDs = await inParallel(Array.from({ length: options.n }), IN_FLIGHT, (_, i) => create(i));
    const createSeconds = (performance.now() - createStarted) / 1000;

    const checkers = new Map(
      await Promise.all(
        distributors.map(async (d) => [d.ref.id, await findUserByEmail(sys.backOffice, d.checkerEmail)] as const),
      ),
    );
    const approve = async ({ operationID, distributor }: { operationID: string; distributor: TestParty }) => {
      const checker = checkers.get(distributor.ref.id)!;
      await decideOperation(
        sys.backOffice,
        actingUser(checker),
        operationID,
        { type: 'approve' },
        userContext(checker, randomUUID()),
      );
    };
    const from = await sys.system.stores.eventStore.headPosition();
    const cpuBefore = { bench: cpuMs(), executor: executor ? cpuMs(executor.child.pid) : 0 };
    options.around?.start();
    await inParallel(operationIDs, IN_FLIGHT, approve);
    const result = await measure(
      sys,
      operationIDs.map((o) => o.operationID),
      from,
    );
    options.around?.end(operationIDs.length);
    const cpuMsPerOp = {
      bench: (cpuMs() - cpuBefore.bench) / operationIDs.length,
      ...(executor ? { executor: (cpuMs(executor.child.pid) - cpuBefore.executor) / operationIDs.length } : {}),
    };

    let oneAtATime: Result | undefined;
    if (options.single) {
      const single: string[] = [];
      for (let i = 0; i < options.single; i++) {
        const created = await create(i);
        await approve(created);
        await waitUntilSettled(sys, created.operationID, 30_000);
        single.push(created.operationID);
      }
      oneAtATime = await measure(sys, single);
    }

    let steady: SteadyRun | undefined;
    if (options.steady) {
      const { n, rate } = options.steady;
      const planned = await inParallel(Array.from({ length: n }), IN_FLIGHT, (_, i) => create(i));
      // Let the creates' projections and webhooks settle, so that the phase measures the approvals alone.
      await new Promise((resolve) => setTimeout(resolve, 2000));
      const steadyFrom = await sys.system.stores.eventStore.headPosition();
      const late: number[] = [];
      const sent: Array<Promise<void>> = [];
      const started = performance.now();
      for (let i = 0; i < n; i++) {
        const due = started + (i * 1000) / rate;
        const wait = due - performance.now();
        if (wait > 1) await new Promise((resolve) => setTimeout(resolve, wait));
        late.push(Math.max(0, performance.now() - due));
        sent.push(approve(planned[i]!));
      }
      await Promise.all(sent);
      const sentSeconds = (performance.now() - started) / 1000;
      const r = await measure(
        sys,
        planned.map((o) => o.operationID),
        steadyFrom,
      );
      const sortedLate = late.sort((x, y) => x - y);
      const sentPerSecond = n / sentSeconds;
      // Against the rate the approvals were really sent at: a loaded bench process may send a little slower.
      steady = {
        ...r,
        rate,
        sentPerSecond,
        sendLateP99Ms: percentile(sortedLate, 0.99),
        keptUp: r.perSecond >= 0.95 * sentPerSecond && r.p99Ms < 1000,
      };
    }

    const wanted = new Set(operationIDs.map((o) => o.operationID));
    const blockchainIDs = (
      (await allEvents(sys.system.stores.eventStore, ['OperationCompleted'])) as unknown as OperationCompleted[]
    )
      .filter((e) => wanted.has(e.data.operationID))
      .map((e) => e.data.blockchainID);
    await assertLedgerMatchesProjections(sys, { timeoutMs: 120_000 });
    return {
      ...result,
      createSeconds,
      blockchainIDs,
      cpuMsPerOp,
      ...(oneAtATime ? { oneAtATime } : {}),
      ...(steady ? { steady } : {}),
    };
  } finally {
    if (executor) {
      const exit = await stopProcess(executor);
      if (exit.code !== 0) console.error('the executor process exited with', exit, executor.output());
    }
    await sys.close();
  }
}

/**
 * The floor: the same transfers as raw ledger submits, one at a time, on a fresh ledger file. With `inFlight`
 * more than 1, the ledger's own rate with that many submits at once (sharing commits: group commit).
 */
async function ledgerFloor(transfers: LedgerLeg[][], funding: LedgerLeg[][] = [], inFlight = 1): Promise<Result> {
  const dir = tempDir('bench-ledger-');
  const ledger = openEmbeddedLedger({ file: join(dir.path, 'ledger.sqlite') });
  try {
    for (const legs of funding) await ledger.submit({ operationID: `fund_${randomUUID()}`, legs });
    const latencies: number[] = [];
    const started = performance.now();
    await inParallel(transfers, inFlight, async (legs) => {
      const t = performance.now();
      await ledger.submit({ operationID: `op_${randomUUID().replaceAll('-', '')}`, legs });
      latencies.push(performance.now() - t);
    });
    return summarize(latencies, (performance.now() - started) / 1000);
  } finally {
    await ledger.close();
    dir.cleanup();
  }
}

/** What one phase of the EVM runs cost: JSON-RPC calls by method, and CPU here and in the chain's process. */
interface Phase {
  operations: number;
  rpc: Map<string, MethodStats>;
  benchCpuMs: number;
  chainCpuMs: number;
  /** The bench process's event-loop delay meanwhile (ms): how long an answer can sit before it is read. */
  loopDelayMeanMs: number;
  loopDelayP99Ms: number;
}

function phaseMeter(
  meter: RpcMeter,
  chain: ChainProcess,
): { start(): void; end(operations: number): void; result(): Phase } {
  let cpu = process.cpuUsage();
  let chainCpu = 0;
  let phase: Phase | undefined;
  const loop = monitorEventLoopDelay({ resolution: 5 });
  return {
    start() {
      meter.reset();
      cpu = process.cpuUsage();
      chainCpu = chain.cpuMs();
      loop.reset();
      loop.enable();
    },
    end(operations) {
      const used = process.cpuUsage(cpu);
      loop.disable();
      phase = {
        operations,
        rpc: meter.snapshot(),
        benchCpuMs: (used.user + used.system) / 1000,
        chainCpuMs: chain.cpuMs() - chainCpu,
        loopDelayMeanMs: loop.mean / 1e6,
        loopDelayP99Ms: loop.percentile(99) / 1e6,
      };
    },
    result() {
      if (!phase) throw new Error('phase not ended');
      return phase;
    },
  };
}

interface EvmFloor {
  sequential: Result;
  pipelined: Result;
  sequentialPhase: Phase;
  pipelinedPhase: Phase;
  /** Gas used by one call of each kind, on wallets that hold a balance already (and one first credit). */
  gas: Array<{ operation: string; call: string; gas: bigint }>;
}

const newOperationID = () => `op_${randomUUID().replaceAll('-', '')}`;

/**
 * The chain's floor: the same cash-in transfers sent straight through the adapter on a fresh contract, the
 * payers funded first; one at a time, then EVM_IN_FLIGHT at once (the adapter's nonce queue orders them).
 * Then one call of each kind, for its gas.
 */
async function evmFloor(
  chain: ChainProcess,
  meter: RpcMeter,
  payers: string[],
  transfers: LedgerLeg[][],
): Promise<EvmFloor> {
  const ledger = openEvmLedger({
    rpcUrl: chain.url,
    chainId: chain.chainId,
    operatorKey: chain.operatorKey,
    contract: await chain.deploy(),
    scale: DEFAULTS.ASSET_SCALE,
    confirmations: 1,
    receiptTimeoutMs: DEFAULTS.EVM_RECEIPT_TIMEOUT_MS,
    pollingIntervalMs: DEFAULTS.EVM_POLL_INTERVAL_MS,
  });
  try {
    for (const payer of payers)
      await ledger.submit({
        operationID: newOperationID(),
        legs: [{ from: ISSUANCE_ADDRESS, to: payer, amount: '1000000.00' }],
      });
    const run = async (legs: LedgerLeg[][], inFlight: number) => {
      const phase = phaseMeter(meter, chain);
      const latencies: number[] = [];
      phase.start();
      const started = performance.now();
      await inParallel(legs, inFlight, async (transfer) => {
        const t = performance.now();
        await ledger.submit({ operationID: newOperationID(), legs: transfer });
        latencies.push(performance.now() - t);
      });
      const seconds = (performance.now() - started) / 1000;
      phase.end(legs.length);
      return { result: summarize(latencies, seconds), phase: phase.result() };
    };
    const sequential = await run(transfers.slice(0, N_EVM_SEQUENTIAL), 1);
    const pipelined = await run(transfers, EVM_IN_FLIGHT);

    const [payer] = payers;
    const payee = transfers[0]![0]!.to;
    const probes: Array<{ operation: string; call: string; legs: LedgerLeg[] }> = [
      { operation: 'issuance', call: 'issue', legs: [{ from: ISSUANCE_ADDRESS, to: payer!, amount: '10.00' }] },
      {
        operation: 'transfer without fee (cash-in)',
        call: 'transfer',
        legs: [{ from: payer!, to: payee, amount: '1.00' }],
      },
      {
        operation: 'transfer with fee (e.g. pay-merchant)',
        call: 'transfer',
        legs: [
          { from: payer!, to: payee, amount: '1.00' },
          { from: payer!, to: 'platform:fees', amount: '0.02' },
        ],
      },
      {
        operation: 'transfer with fee, again (fee wallet holds a balance)',
        call: 'transfer',
        legs: [
          { from: payer!, to: payee, amount: '1.00' },
          { from: payer!, to: 'platform:fees', amount: '0.02' },
        ],
      },
      { operation: 'redemption', call: 'redeem', legs: [{ from: payer!, to: ISSUANCE_ADDRESS, amount: '1.00' }] },
      {
        operation: 'transfer to a wallet never credited (first credit)',
        call: 'transfer',
        legs: [{ from: payer!, to: 'individual:+2348125999999', amount: '1.00' }],
      },
    ];
    const hashes: string[] = [];
    for (const probe of probes)
      hashes.push((await ledger.submit({ operationID: newOperationID(), legs: probe.legs })).blockchainID);
    const gas = await gasUsed(chain, hashes);
    return {
      sequential: sequential.result,
      pipelined: pipelined.result,
      sequentialPhase: sequential.phase,
      pipelinedPhase: pipelined.phase,
      gas: probes.map((probe, i) => ({ operation: probe.operation, call: probe.call, gas: gas[i]! })),
    };
  } finally {
    await ledger.close();
  }
}

interface EvmRun {
  floor: EvmFloor;
  executor: CashInRun;
  executorPhase: Phase;
  /** Gas of the executor's burst transactions (all cash-ins: transfers without fee). */
  executorGas: { mean: number; min: bigint; max: bigint };
  startSeconds: number;
  seconds: number;
}

async function evm(): Promise<EvmRun> {
  const started = performance.now();
  const chain = await startChainProcess();
  const startSeconds = (performance.now() - started) / 1000;
  const meter = new RpcMeter();
  meter.install(chain.url);
  try {
    // The same shape as the executor's cash-ins: a distributor's uuid pays an individual's phone, 1.00, no fee.
    const payers = Array.from({ length: PARTIES }, () => `distributor:${randomUUID()}`);
    const transfers = Array.from({ length: N_EVM }, (_, i): LedgerLeg[] => [
      {
        from: payers[i % PARTIES]!,
        to: walletAddress({ kind: 'individual', id: `+2348125${String(100_000 + (i % PARTIES))}` }),
        amount: '1.00',
      },
    ]);
    const floor = await evmFloor(chain, meter, payers, transfers);
    console.log('EVM floor, one at a time', floor.sequential);
    console.log(`EVM floor, ${EVM_IN_FLIGHT} in flight`, floor.pipelined);

    const phase = phaseMeter(meter, chain);
    const executor = await cashIns({
      n: N_EVM,
      single: N_EVM_SINGLE,
      around: phase,
      env: {
        LEDGER: 'evm',
        EVM_RPC_URL: chain.url,
        EVM_CHAIN_ID: String(chain.chainId),
        EVM_OPERATOR_KEY_FILE: chain.operatorKeyFile,
        EVM_LEDGER_ADDRESS: await chain.deploy(),
        EVM_CONFIRMATIONS: '1',
      },
    });
    const { blockchainIDs: _ids, ...shown } = executor;
    console.log('executor on the EVM, cash-ins', shown);
    const gas = await gasUsed(chain, executor.blockchainIDs);
    const executorGas = {
      mean: Number(gas.reduce((sum, g) => sum + g, 0n)) / gas.length,
      min: gas.reduce((a, b) => (b < a ? b : a)),
      max: gas.reduce((a, b) => (b > a ? b : a)),
    };
    return {
      floor,
      executor,
      executorPhase: phase.result(),
      executorGas,
      startSeconds,
      seconds: (performance.now() - started) / 1000,
    };
  } finally {
    meter.uninstall();
    await chain.close();
  }
}

/** What each JSON-RPC method is for in a submit (evm-ledger.ts and the viem actions it calls). */
const RPC_PURPOSE: Record<string, string> = {
  eth_estimateGas: "the adapter's estimate (a revert is answered without spending gas)",
  eth_getTransactionCount:
    "the nonce queue's pending count: at the first send and after a send that failed (or, before `prepare: false`, viem preparing the estimate)",
  eth_fillTransaction: 'the same preparation, first asked of the node once (EDR does not have it)',
  eth_getBlockByNumber: "the block's timestamp for createdAt; the adapter's fee cache (base fee, every 2 s)",
  eth_maxPriorityFeePerGas: "the adapter's fee cache (every 2 s)",
  eth_sendRawTransaction: 'the send, signed in process, inside the nonce queue (automine: mined before it answers)',
  eth_getTransactionReceipt: 'waitForTransactionReceipt: there at the first ask, so no polling at EVM_POLL_INTERVAL_MS',
  eth_call: 'contract reads: findByOperationID (executed)',
  eth_getLogs: 'findByOperationID: the Movement events',
  eth_chainId: 'the chain id check, once per ledger',
};

const fmt = (n: number, digits = 0) =>
  n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });

function row(name: string, r: Result, floor: Result, note = ''): string {
  return `| ${name} | ${fmt(r.operations)} | ${fmt(r.perSecond)} | ${fmt(r.p50Ms, 1)} | ${fmt(r.p99Ms, 1)} | ${fmt(r.maxMs, 1)} | ${((r.perSecond / floor.perSecond) * 100).toFixed(0)}% | ${note} |`;
}

const pct = (part: number, whole: number) => `${((part / whole) * 100).toFixed(0)}%`;

function evmRow(name: string, r: Result, floor: Result, embedded: Result | undefined, note: string): string {
  return `| ${name} | ${fmt(r.operations)} | ${fmt(r.perSecond, 1)} | ${fmt(r.p50Ms, 1)} | ${fmt(r.p95Ms, 1)} | ${fmt(r.maxMs, 1)} | ${pct(r.perSecond, floor.perSecond)} | ${embedded ? pct(r.perSecond, embedded.perSecond) : ''} | ${note} |`;
}

/** The EVM part of the section: throughput and latency, gas, and where a submit's time goes. */
function evmSection(run: EvmRun, embedded: Result): string[] {
  const { floor, executor, executorPhase } = run;
  const phases = [floor.sequentialPhase, floor.pipelinedPhase, executorPhase];
  const methods = [...new Set(phases.flatMap((p) => [...p.rpc.keys()]))].sort(
    (a, b) =>
      (floor.sequentialPhase.rpc.get(b)?.calls ?? 0) - (floor.sequentialPhase.rpc.get(a)?.calls ?? 0) ||
      a.localeCompare(b),
  );
  const perOp = (p: Phase, method: string) => fmt((p.rpc.get(method)?.calls ?? 0) / p.operations, 2);
  const meanMs = (p: Phase, method: string) => {
    const s = p.rpc.get(method);
    return s ? fmt(s.totalMs / s.calls, 1) : '';
  };
  const loopDelay = (p: Phase) => `${fmt(p.loopDelayMeanMs, 1)} / ${fmt(p.loopDelayP99Ms, 1)}`;
  const sendMs = (p: Phase) => {
    const send = p.rpc.get('eth_sendRawTransaction');
    return send ? send.totalMs / send.calls : NaN;
  };
  const totalCalls = (p: Phase) => [...p.rpc.values()].reduce((sum, s) => sum + s.calls, 0) / p.operations;
  const rpcMsPerOp = (p: Phase) => [...p.rpc.values()].reduce((sum, s) => sum + s.totalMs, 0) / p.operations;
  return [
    '',
    '### On an EVM chain (LEDGER=evm, 1 confirmation)',
    '',
    `The development chain (contracts/dev-chain.ts: Hardhat's EDR, automine, so every transaction is mined in a block of its own before`,
    '`eth_sendRawTransaction` answers, and 1 confirmation means mined) in a child process of its own, reached over JSON-RPC on 127.0.0.1;',
    `a fresh WalletLedger for each scenario; started in ${run.startSeconds.toFixed(1)} s. The executor runs in the bench process with the whole system, as above,`,
    `with LEDGER=evm and the defaults (EXECUTOR_CONCURRENCY ${DEFAULTS.EXECUTOR_CONCURRENCY}, EVM_POLL_INTERVAL_MS ${DEFAULTS.EVM_POLL_INTERVAL_MS}). The chain floor is the same cash-in`,
    'transfers sent straight through the adapter (openEvmLedger().submit: estimate; sign and send through the nonce queue; receipt),',
    `one at a time and ${EVM_IN_FLIGHT} at once; "vs chain floor" is a throughput as a share of the ${EVM_IN_FLIGHT}-in-flight floor, "vs embedded" as a share of`,
    "the embedded executor's cash-ins above. Latency as above (approved -> completed); for the floor, per submit.",
    '',
    `| scenario | operations | ops/s | p50 ms | p95 ms | max ms | vs chain floor | vs embedded | note |`,
    '|---|---:|---:|---:|---:|---:|---:|---:|---|',
    evmRow(
      'chain floor: adapter submits one at a time',
      floor.sequential,
      floor.pipelined,
      undefined,
      'per-submit latency',
    ),
    evmRow(
      `chain floor: adapter submits, ${EVM_IN_FLIGHT} in flight`,
      floor.pipelined,
      floor.pipelined,
      undefined,
      'per-submit latency, with the wait in the nonce queue',
    ),
    evmRow(
      'executor on the EVM: cash-ins created over HTTP, then approved in bulk',
      executor,
      floor.pipelined,
      embedded,
      `${fmt(executor.operations)} creates took ${executor.createSeconds.toFixed(1)} s before; approvals 64 in flight`,
    ),
    ...(executor.oneAtATime
      ? [
          evmRow(
            'executor on the EVM: cash-ins one at a time',
            executor.oneAtATime,
            floor.pipelined,
            undefined,
            'each approved once the previous completed (5 ms poll): latency with an idle executor; ops/s not a capacity',
          ),
        ]
      : []),
    '',
    "Gas used per operation type (the receipts' gasUsed; wallet names and operation ids as the system makes them; wallets that hold a",
    'balance already unless said):',
    '',
    '| operation | contract call | gas used |',
    '|---|---|---:|',
    ...floor.gas.map((g) => `| ${g.operation} | ${g.call} | ${fmt(Number(g.gas))} |`),
    `| the executor's ${fmt(executor.blockchainIDs.length)} cash-ins above | transfer | mean ${fmt(run.executorGas.mean)} (${fmt(Number(run.executorGas.min))} to ${fmt(Number(run.executorGas.max))}) |`,
    '',
    "Where a submit's time goes: the JSON-RPC requests per operation by method, and the mean time each took from request to answer",
    "(with the node's queueing when requests overlap), one at a time, in flight and under the executor; then the CPU per operation of the",
    "bench process (the executor and the system; viem encodes, signs and decodes) and of the chain's process.",
    '',
    `| JSON-RPC method | calls/op | ms each, one at a time | ms each, ${EVM_IN_FLIGHT} in flight | calls/op, executor | ms each, executor | what for |`,
    '|---|---:|---:|---:|---:|---:|---|',
    ...methods.map(
      (m) =>
        `| ${m} | ${perOp(floor.sequentialPhase, m)} | ${meanMs(floor.sequentialPhase, m)} | ${meanMs(floor.pipelinedPhase, m)} | ${perOp(executorPhase, m)} | ${meanMs(executorPhase, m)} | ${RPC_PURPOSE[m] ?? ''} |`,
    ),
    `| all requests | ${fmt(totalCalls(floor.sequentialPhase), 2)} | ${fmt(rpcMsPerOp(floor.sequentialPhase), 1)} per op | ${fmt(rpcMsPerOp(floor.pipelinedPhase), 1)} per op | ${fmt(totalCalls(executorPhase), 2)} | ${fmt(rpcMsPerOp(executorPhase), 1)} per op | summed request times (overlapping when in flight) |`,
    `| CPU ms/op, bench process | | ${fmt(floor.sequentialPhase.benchCpuMs / floor.sequentialPhase.operations, 1)} | ${fmt(floor.pipelinedPhase.benchCpuMs / floor.pipelinedPhase.operations, 1)} | | ${fmt(executorPhase.benchCpuMs / executorPhase.operations, 1)} | |`,
    `| event-loop delay of the bench process, mean / p99 ms | | ${loopDelay(floor.sequentialPhase)} | ${loopDelay(floor.pipelinedPhase)} | | ${loopDelay(executorPhase)} | how long an answer may wait to be read |`,
    `| CPU ms/op, chain process | | ${fmt(floor.sequentialPhase.chainCpuMs / floor.sequentialPhase.operations, 1)} | ${fmt(floor.pipelinedPhase.chainCpuMs / floor.pipelinedPhase.operations, 1)} | | ${fmt(executorPhase.chainCpuMs / executorPhase.operations, 1)} | |`,
    '',
    `The nonce queue lets one send out at a time, and a send lasts its eth_sendRawTransaction round trip (the block is mined inside it`,
    `here), so 1000 / that time in ms bounds the throughput of one operator account whatever the concurrency: ${fmt(1000 / sendMs(floor.pipelinedPhase), 1)}/s`,
    `with ${EVM_IN_FLIGHT} in flight (measured ${fmt(floor.pipelined.perSecond, 1)}/s), ${fmt(1000 / sendMs(executorPhase), 1)}/s under the executor (measured ${fmt(executor.perSecond, 1)}/s). Under the executor every`,
    `request takes longer because its answer waits for the bench process's event loop, which also runs the executor's synchronous SQLite`,
    `commits, the projections and the APIs: a mean delay of ${fmt(executorPhase.loopDelayMeanMs, 1)} ms there against ${fmt(floor.pipelinedPhase.loopDelayMeanMs, 1)} ms for the floor.`,
    ...((executorPhase.rpc.get('eth_getTransactionCount')?.calls ?? 0) / executorPhase.operations > 0.5
      ? [
          'eth_getTransactionCount and one each of eth_getBlockByNumber and eth_maxPriorityFeePerGas per operation come from viem preparing a',
          'whole transaction for the estimate (a local account); estimating with `prepare: false` sends eth_estimateGas alone and still sees',
          'reverts with their reason.',
        ]
      : []),
    '',
  ];
}

/** The scenarios named in BENCH_ONLY, printed, for profiling and quick A/B runs. */
async function only(): Promise<void> {
  for (const name of ONLY) {
    // The approvals' window, in seconds since the process started: the part of a --cpu-prof to look at.
    const around = {
      start: () => console.log(`approvals from ${(performance.now() / 1000).toFixed(1)} s`),
      end: () => console.log(`last completion by ${(performance.now() / 1000).toFixed(1)} s`),
    };
    const shown = ({ blockchainIDs: _ids, ...run }: CashInRun) => run;
    if (name === 'cash-ins') console.log('executor, cash-ins', shown(await cashIns({ n: N_CASH_IN, around })));
    else if (name === 'cash-ins-apart')
      console.log('executor apart, cash-ins', shown(await cashIns({ n: N_CASH_IN, around, apart: true })));
    else if (name === 'steady') console.log('executor, steady', shown(await cashIns({ n: 10, steady: STEADY })).steady);
    else if (name === 'steady-apart')
      console.log('executor apart, steady', shown(await cashIns({ n: 10, steady: STEADY, apart: true })).steady);
    else if (name === 'cash-in-floor')
      console.log('ledger floor, cash-ins', await ledgerFloor(cashInTransfers(N_CASH_IN), fundingTransfers()));
    else if (name === 'cash-in-floor-in-flight')
      console.log(
        `ledger, cash-ins ${LEDGER_IN_FLIGHT} in flight`,
        await ledgerFloor(cashInTransfers(N_CASH_IN), fundingTransfers(), LEDGER_IN_FLIGHT),
      );
    else if (name === 'issuances') console.log('executor, issuances', await issuances());
    else throw new Error(`unknown scenario ${name}`);
  }
}

const fundingTransfers = () =>
  Array.from({ length: PARTIES }, (_, i): LedgerLeg[] => [
    { from: ISSUANCE_ADDRESS, to: `distributor:bench-${i}`, amount: '1000000.00' },
  ]);
const cashInTransfers = (n: number) =>
  Array.from({ length: n }, (_, i): LedgerLeg[] => [
    {
      from: `distributor:bench-${i % PARTIES}`,
      to: walletAddress({ kind: 'individual', id: `+2348125${String(100_000 + (i % PARTIES))}` }),
      amount: '1.00',
    },
  ]);

function steadyRow(name: string, r: SteadyRun, note: string): string {
  return `| ${name} | ${fmt(r.operations)} | ${fmt(r.perSecond)} | ${fmt(r.p50Ms, 1)} | ${fmt(r.p90Ms, 1)} | ${fmt(r.p99Ms, 1)} | ${fmt(r.maxMs, 1)} | ${r.keptUp ? 'yes' : 'NO'} | ${note}; sent at ${fmt(r.sentPerSecond, 1)}/s, p99 ${fmt(r.sendLateP99Ms, 1)} ms late |`;
}

const cpuNote = (r: Pick<CashInRun, 'cpuMsPerOp'>) =>
  `CPU ${fmt(r.cpuMsPerOp.bench, 1)} ms/op here${r.cpuMsPerOp.executor === undefined ? '' : `, ${fmt(r.cpuMsPerOp.executor, 1)} ms/op in the executor's process`}`;

async function main(): Promise<void> {
  if (ONLY.length > 0) return only();
  const started = performance.now();
  console.log(`bench:e2e: ${N_ISSUE} issuances, ${N_CASH_IN} cash-ins, ${PARTIES} parties`);

  const issueLegs = Array.from({ length: N_ISSUE }, (_, i): LedgerLeg[] => [
    { from: ISSUANCE_ADDRESS, to: `distributor:bench-${i % PARTIES}`, amount: '1.00' },
  ]);
  const issueFloor = await ledgerFloor(issueLegs);
  console.log('ledger floor, issuances', issueFloor);
  const issued = await issuances();
  console.log('executor, issuances', issued);

  const cashInFloor = await ledgerFloor(cashInTransfers(N_CASH_IN), fundingTransfers());
  console.log('ledger floor, cash-ins', cashInFloor);
  const cashInInFlight = await ledgerFloor(cashInTransfers(N_CASH_IN), fundingTransfers(), LEDGER_IN_FLIGHT);
  console.log(`ledger, cash-ins ${LEDGER_IN_FLIGHT} in flight`, cashInInFlight);
  const { blockchainIDs: _embeddedIDs, ...cashedIn } = await cashIns({ n: N_CASH_IN, steady: STEADY });
  console.log('executor, cash-ins', cashedIn);
  const { blockchainIDs: _apartIDs, ...apart } = await cashIns({ n: N_CASH_IN, steady: STEADY, apart: true });
  console.log('executor apart, cash-ins', apart);
  const embeddedSeconds = (performance.now() - started) / 1000;
  const onChain = WITH_EVM ? await evm() : undefined;
  const ratio = (r: Result, floor: Result) => `${((r.perSecond / floor.perSecond) * 100).toFixed(0)}%`;

  const section = [
    HEADING,
    '',
    machineNote(),
    `Approved -> completed with the executor (EXECUTOR_CONCURRENCY ${DEFAULTS.EXECUTOR_CONCURRENCY}, default lease and retries), ${PARTIES} payers, in two topologies: *all in one*, the`,
    'whole system in the bench process (APIs, projections, webhooks and the executor share one event loop, so every synchronous',
    'SQLite commit of a projection also stalls the executor); *apart*, the executor in a process of its own (`wallet-ops serve executor`',
    'on the same data directory, as docker-compose.yml runs it) and every other part in the bench process.',
    "Latency: OperationApproved's stored createdAt to OperationCompleted's, so it includes the time an approval waits in the executor's",
    'queue during a burst; throughput: operations / (last completion - first approval).',
    'The floor is the embedded ledger alone: the same transfers submitted one at a time on a fresh file (WAL, synchronous=FULL), the',
    'cost every execution pays at least; "vs floor" is a throughput as a share of it, measured in the same run.',
    '',
    '| scenario | operations | ops/s | p50 ms | p99 ms | max ms | vs floor | note |',
    '|---|---:|---:|---:|---:|---:|---:|---|',
    row('ledger floor: issuance submits', issueFloor, issueFloor, 'per-submit latency'),
    row(
      'executor: treasury issuances (issueFloat, 64 appends in flight)',
      issued.burst,
      issueFloor,
      'all in one; approvals arrive while the executor runs',
    ),
    row(
      'executor: treasury issuances one at a time',
      issued.oneAtATime,
      issueFloor,
      'all in one; each awaited (5 ms poll) before the next: latency with an idle executor; ops/s not a capacity',
    ),
    row('ledger floor: cash-in submits', cashInFloor, cashInFloor, 'per-submit latency'),
    row(
      `ledger: cash-in submits, ${LEDGER_IN_FLIGHT} in flight`,
      cashInInFlight,
      cashInFloor,
      'per-submit latency; concurrent submits share one commit (group commit)',
    ),
    row(
      'executor: cash-ins created over HTTP, then approved in bulk',
      cashedIn,
      cashInFloor,
      `all in one; ${fmt(N_CASH_IN)} creates took ${cashedIn.createSeconds.toFixed(1)} s before; approvals 64 in flight; ${cpuNote(cashedIn)}`,
    ),
    row(
      'executor apart: cash-ins created over HTTP, then approved in bulk',
      apart,
      cashInFloor,
      `apart; ${fmt(N_CASH_IN)} creates took ${apart.createSeconds.toFixed(1)} s before; approvals 64 in flight; ${cpuNote(apart)}`,
    ),
    '',
    `As shares of the ledger with ${LEDGER_IN_FLIGHT} submits in flight (${fmt(cashInInFlight.perSecond)}/s): executor all in one ${ratio(cashedIn, cashInInFlight)}, apart ${ratio(apart, cashInInFlight)}.`,
    '',
    `Steady load: ${fmt(STEADY.n)} cash-ins created over HTTP first, then approved open-loop at ${STEADY.rate}/s (each approval sent on its schedule, whether`,
    'or not the earlier ones have completed), on the systems above after their burst; latency approved -> completed. Kept up: completions',
    'at >= 95% of the rate the approvals were sent at, and p99 under a second.',
    '',
    '| scenario | operations | ops/s | p50 ms | p90 ms | p99 ms | max ms | kept up | note |',
    '|---|---:|---:|---:|---:|---:|---:|:---:|---|',
    steadyRow(`executor: ${STEADY.rate} approvals/s, all in one`, cashedIn.steady!, 'all in one'),
    steadyRow(`executor apart: ${STEADY.rate} approvals/s`, apart.steady!, 'apart'),
    '',
    'Each execution reads the operation stream, appends the claim (OperationExecutionStarted) at the revision read, submits to the',
    'ledger, and appends the completion with the wallet movements in one atomic multi-stream append: two synced event-store commits and',
    "one synced ledger commit per operation, against the floor's one. Concurrent executions share event-store commits and ledger",
    'commits (group commit: one transaction and one fsync for the requests of one event-loop turn, each in its own savepoint). After each',
    'scenario the ledger was checked against the event store and the read models (test/support/invariants.ts): one transaction per',
    'completed operation, balances, chain.',
    ...(onChain ? evmSection(onChain, cashedIn) : []),
    `Whole run: ${((performance.now() - started) / 1000).toFixed(0)} s${onChain ? ` (embedded ${embeddedSeconds.toFixed(0)} s, EVM ${onChain.seconds.toFixed(0)} s)` : ''}.`,
    '',
  ].join('\n');
  writeBenchSection(HEADING, section);
  console.log(section);
}

await main();

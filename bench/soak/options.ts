import { Command, InvalidArgumentError } from 'commander';

/** Everything a soak run can be told; `npm run soak -- --help` lists the flags. */
export interface SoakOptions {
  minutes: number;
  distributors: number;
  merchants: number;
  individuals: number;
  keysPerParty: number;
  /** Concurrent HTTP clients creating operations (and reading now and then). */
  clients: number;
  /** Concurrent `operation approve|reject` CLI runs. */
  checkers: number;
  rejectShare: number;
  /** Acknowledged creates waiting for a checker before the clients only read. */
  maxBacklog: number;
  revocations: number;
  /** Seconds between `individual pay` CLI runs (0: none). */
  individualPayEvery: number;
  killMinSeconds: number;
  killMaxSeconds: number;
  faults: boolean;
  eventStoreErrorRate: number;
  readStoreErrorRate: number;
  ledgerErrorRate: number;
  eventStoreLatencyMs: number;
  readStoreLatencyMs: number;
  ledgerLatencyMs: number;
  hangRate: number;
  hangMs: number;
  leaseMs: number;
  sweepIntervalMs: number;
  unhealthyAfterMs: number;
  drainCapSeconds: number;
  port: number;
  keep: boolean;
  doc: boolean;
  /** embedded: SQLite files in the data directory; postgres: both stores on an embedded PostgreSQL server. */
  store: 'embedded' | 'postgres';
  /** PostgreSQL faults (`--store postgres`): how long the server is stopped once under load (0: never). */
  pgOutageSeconds: number;
  /** How many times every wallet-ops connection is terminated (pg_terminate_backend). */
  pgTerminations: number;
  /** POSTGRES_STATEMENT_TIMEOUT_MS of every process. */
  pgStatementTimeoutMs: number;
  /** How long an exclusive lock on the events table is held once (0: never); past the statement timeout. */
  pgLockSeconds: number;
}

const number =
  (min: number, max = Infinity) =>
  (value: string): number => {
    const n = Number(value);
    if (!Number.isFinite(n) || n < min || n > max) throw new InvalidArgumentError(`a number in [${min}, ${max}]`);
    return n;
  };
const whole =
  (min: number, max = Infinity) =>
  (value: string): number => {
    const n = number(min, max)(value);
    if (!Number.isInteger(n)) throw new InvalidArgumentError('a whole number');
    return n;
  };
const rate = number(0, 1);

export function parseOptions(argv: string[]): SoakOptions {
  const program = new Command('soak')
    .description(
      'Drives the real wallet-ops (one API process, two executors, in child processes on a temporary data directory) with ' +
        'fault injection and SIGKILLs for N minutes, drains, then checks that nothing acknowledged was lost, everything approved ' +
        'settled exactly once, balances match the ledger, revoked keys are refused and `audit verify` passes. Exit 1 on any failure.',
    )
    .option('--minutes <n>', 'length of the load phase', number(0.05), 10)
    .option('--distributors <n>', 'distributors onboarded', whole(1, 50), 3)
    .option('--merchants <n>', 'merchants onboarded (2 or more for pay-merchant)', whole(2, 50), 3)
    .option('--individuals <n>', 'individuals registered', whole(1, 200), 6)
    .option(
      '--keys-per-party <n>',
      'API keys per distributor and merchant (revocations need 2 or more)',
      whole(1, 10),
      2,
    )
    .option('--clients <n>', 'concurrent HTTP clients', whole(1, 64), 4)
    .option('--checkers <n>', 'concurrent checker CLI runs (operation approve|reject)', whole(1, 8), 2)
    .option('--reject-share <share>', 'share of decisions that are rejections', rate, 0.15)
    .option('--max-backlog <n>', 'acknowledged creates awaiting a decision before the clients only read', whole(1), 40)
    .option('--revocations <n>', 'API keys revoked mid-run', whole(0), 3)
    .option('--individual-pay-every <seconds>', 'seconds between `individual pay` runs (0: none)', number(0), 5)
    .option('--kill-min-seconds <s>', 'shortest pause between two kills', number(0.5), 3)
    .option('--kill-max-seconds <s>', 'longest pause between two kills', number(0.5), 10)
    .option('--no-faults', 'no fault injection (FAULT_* unset)')
    .option('--event-store-error-rate <share>', 'FAULT_EVENT_STORE_ERROR_RATE', rate, 0.02)
    .option('--read-store-error-rate <share>', 'FAULT_READ_STORE_ERROR_RATE', rate, 0.02)
    .option('--ledger-error-rate <share>', 'FAULT_LEDGER_ERROR_RATE', rate, 0.05)
    .option('--event-store-latency-ms <ms>', 'FAULT_EVENT_STORE_LATENCY_MS', whole(0, 60_000), 5)
    .option('--read-store-latency-ms <ms>', 'FAULT_READ_STORE_LATENCY_MS', whole(0, 60_000), 5)
    .option('--ledger-latency-ms <ms>', 'FAULT_LEDGER_LATENCY_MS', whole(0, 60_000), 10)
    .option('--hang-rate <share>', 'FAULT_*_HANG_RATE of all three stores', rate, 0)
    .option('--hang-ms <ms>', 'FAULT_HANG_MS', whole(1, 600_000), 3000)
    .option('--lease-ms <ms>', 'EXECUTOR_LEASE_MS', whole(100), 2000)
    .option('--sweep-interval-ms <ms>', 'EXECUTOR_SWEEP_INTERVAL_MS', whole(100), 2000)
    .option(
      '--unhealthy-after-ms <ms>',
      'CONSUMER_UNHEALTHY_AFTER_MS (default 20000; 5000 with --store postgres, under the outage)',
      whole(1000),
    )
    .option(
      '--drain-cap-seconds <s>',
      'how long the executors get to settle every approved operation after the load',
      number(1),
      180,
    )
    .option(
      '--port <port>',
      'port of the API process (0: a free one); the executors answer /health on the next free ones',
      whole(0, 65535),
      0,
    )
    .option('--keep', 'keep the data directory (it is always kept when a check fails)', false)
    .option('--no-doc', 'do not write the "Soak" section of docs/benchmarks.md')
    .option(
      '--store <store>',
      'embedded (SQLite files) or postgres (an embedded PostgreSQL server: two API processes, two executors, projections and webhooks apart, and the faults below)',
      (value: string) => {
        if (value !== 'embedded' && value !== 'postgres') throw new InvalidArgumentError('embedded or postgres');
        return value;
      },
      'embedded',
    )
    .option(
      '--pg-outage-seconds <s>',
      'with --store postgres: the server stopped this long once under load (0: never)',
      number(0, 300),
      10,
    )
    .option(
      '--pg-terminations <n>',
      'with --store postgres: times every wallet-ops connection is terminated (pg_terminate_backend)',
      whole(0, 100),
      3,
    )
    .option(
      '--pg-statement-timeout-ms <ms>',
      'with --store postgres: POSTGRES_STATEMENT_TIMEOUT_MS',
      whole(100, 600_000),
      3000,
    )
    .option(
      '--pg-lock-seconds <s>',
      'with --store postgres: an exclusive lock on the events table held this long once (0: never; past the statement timeout)',
      number(0, 300),
      8,
    );
  program.parse(argv, { from: 'user' });
  const options = program.opts<SoakOptions>();
  if (options.killMaxSeconds < options.killMinSeconds)
    program.error('--kill-max-seconds must be >= --kill-min-seconds');
  options.unhealthyAfterMs ??= options.store === 'postgres' ? 5000 : 20_000;
  if (
    options.store === 'postgres' &&
    options.pgLockSeconds > 0 &&
    options.pgLockSeconds * 1000 <= options.pgStatementTimeoutMs
  ) {
    program.error(
      '--pg-lock-seconds must outlast --pg-statement-timeout-ms: the lock is there to make a statement time out',
    );
  }
  return options;
}

/** The FAULT_* environment of the children, as the options describe it. */
export function faultEnv(options: SoakOptions): Record<string, string> {
  if (!options.faults) return {};
  return {
    FAULT_EVENT_STORE_ERROR_RATE: String(options.eventStoreErrorRate),
    FAULT_READ_STORE_ERROR_RATE: String(options.readStoreErrorRate),
    FAULT_LEDGER_ERROR_RATE: String(options.ledgerErrorRate),
    FAULT_EVENT_STORE_LATENCY_MS: String(options.eventStoreLatencyMs),
    FAULT_READ_STORE_LATENCY_MS: String(options.readStoreLatencyMs),
    FAULT_LEDGER_LATENCY_MS: String(options.ledgerLatencyMs),
    FAULT_EVENT_STORE_HANG_RATE: String(options.hangRate),
    FAULT_READ_STORE_HANG_RATE: String(options.hangRate),
    FAULT_LEDGER_HANG_RATE: String(options.hangRate),
    FAULT_HANG_MS: String(options.hangMs),
  };
}

/** One line naming the parameters, for the report. */
export function describeParameters(options: SoakOptions): string {
  const faults = options.faults
    ? `faults: event store ${options.eventStoreErrorRate} errors + 0..${options.eventStoreLatencyMs} ms, read store ${options.readStoreErrorRate} + 0..${options.readStoreLatencyMs} ms, ` +
      `ledger ${options.ledgerErrorRate} + 0..${options.ledgerLatencyMs} ms${options.hangRate > 0 ? `, hangs ${options.hangRate} x ${options.hangMs} ms` : ''}`
    : 'no fault injection';
  return (
    `--minutes ${options.minutes}; ${options.distributors} distributors, ${options.merchants} merchants, ${options.individuals} individuals, ` +
    `${options.keysPerParty} keys each; ${options.clients} HTTP clients, ${options.checkers} checker CLIs (${Math.round(options.rejectShare * 100)}% rejections), ` +
    `${options.revocations} revocations; kills every ${options.killMinSeconds}-${options.killMaxSeconds} s; ${faults}; ` +
    `EXECUTOR_LEASE_MS ${options.leaseMs}, EXECUTOR_SWEEP_INTERVAL_MS ${options.sweepIntervalMs}, CONSUMER_UNHEALTHY_AFTER_MS ${options.unhealthyAfterMs}` +
    (options.store === 'postgres'
      ? `; PostgreSQL: stopped ${options.pgOutageSeconds} s once, every connection terminated ${options.pgTerminations} times, events table locked ${options.pgLockSeconds} s once, POSTGRES_STATEMENT_TIMEOUT_MS ${options.pgStatementTimeoutMs}`
      : '')
  );
}

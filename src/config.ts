import { z } from 'zod';
import { feeScheduleSchema } from './domain/fees.ts';
import { parseAllowedIps } from './domain/ip-allowlist.ts';
import { isValidTimeZone } from './domain/volume-day.ts';
import { LOWEST_PRODUCTION_HASH_COST, LOWEST_TEST_HASH_COST, setPasswordHashCost } from './domain/passwords.ts';
import { DEFAULT_ROTATION_OVERLAP_HOURS, MAX_ROTATION_OVERLAP_HOURS } from './domain/secret-rotation.ts';

/** An empty variable (`KURRENTDB_URL=` in a shell or a compose file) counts as unset. */
const unsetWhenEmpty = (value: unknown) => (value === '' ? undefined : value);

/** More proxies than this in front of one service is a mistake, not a deployment. */
const MAX_PROXY_HOPS = 5;

/** A normalized range (parseAllowedIps) wider than /8 (IPv4) or /32 (IPv6): no proxy fleet needs that much trust. */
function tooWideToTrust(range: string): boolean {
  const [address = '', bits] = range.split('/');
  return bits !== undefined && Number(bits) < (address.includes(':') ? 32 : 8);
}

/** A whole number in [min, max] (no upper bound when max is undefined); `int` with its default. */
function whole(min: number, max?: number) {
  const bounded = z.coerce.number().int().min(min);
  return max === undefined ? bounded : bounded.max(max);
}
const int = (min: number, max: number | undefined, fallback: number) => whole(min, max).default(fallback);
/** One of `values`, with its default. */
const choice = <const T extends readonly [string, ...string[]]>(values: T, fallback: T[number]) =>
  z.enum(values).default(fallback);
/** A `true` or `false` switch. */
const flag = (fallback: 'true' | 'false') =>
  z
    .enum(['true', 'false'])
    .default(fallback)
    .transform((v) => v === 'true');
/** An optional setting, unset when empty. */
const unset = <T extends z.ZodType>(inner: T) => z.preprocess(unsetWhenEmpty, inner.optional());
/** Refuses a value inside a transform, with the message the failed start prints. */
function invalid(ctx: z.RefinementCtx, message: string): never {
  ctx.addIssue({ code: 'custom', message });
  return z.NEVER;
}
/** A fault-injection share of calls, 0..1, off by default. */
const faultRate = (doc: string) => z.coerce.number().min(0).max(1).default(0).describe(doc);
/** A fault-injection latency bound in milliseconds, off by default. */
const faultLatency = (doc: string) => int(0, 60_000, 0).describe(doc);

/**
 * All configuration, from the environment, validated once at start. Each key has a doc and a default;
 * a bad value stops the process with a message naming the variable. The README's table mirrors this.
 */
const schema = z.object({
  DATA_DIR: z
    .string()
    .min(1)
    .default('./data')
    .describe(
      'Directory of the embedded stores (event store, read models), owner-only: created or narrowed to 0700; one ' +
        'owned by another user is refused.',
    ),
  PORT: int(0, 65535, 3000).describe('HTTP port of the API.'),
  HOST: z.string().min(1).default('127.0.0.1').describe('Address the HTTP server binds to (0.0.0.0 in containers).'),
  HTTP_KEEP_ALIVE_TIMEOUT_MS: int(1000, 3_600_000, 65_000).describe(
    'How long an idle keep-alive connection stays open. Longer than the idle timeout of the load balancer in ' +
      'front (60 s on most), so that the balancer, never wallet-ops, closes an idle connection: otherwise it may ' +
      'send a request on a connection wallet-ops is closing (a 502 for the client).',
  ),
  HTTP_HEADERS_TIMEOUT_MS: int(1000, 3_600_000, 10_000).describe(
    "How long a client may take to send a request's headers, counted from the request's first byte (from the " +
      'connection for its first request): a slower one gets 408 and is disconnected. An idle keep-alive ' +
      'connection waiting for its next request is not timed by it (HTTP_KEEP_ALIVE_TIMEOUT_MS is).',
  ),
  HTTP_REQUEST_TIMEOUT_MS: int(1000, 3_600_000, 120_000).describe(
    'How long a client may take to send a whole request (headers and body); a slower one gets 408. At least ' +
      'HTTP_HEADERS_TIMEOUT_MS.',
  ),
  HTTP_MAX_CONNECTIONS: int(0, 1_000_000, 10_000).describe(
    'Open connections one process accepts in all; a connection above it is closed at once. 0: no cap. Keep it ' +
      "below the process's open-file limit (`ulimit -n`) less what the stores use.",
  ),
  HTTP_MAX_CONNECTIONS_PER_ADDRESS: unset(whole(0, 1_000_000)).describe(
    'Open connections accepted from one peer address (IPv6: its /64); one above it is closed at once. 0: no ' +
      'cap. Default 256, but 0 when TRUST_PROXY is a hop count (every connection may come from the proxy); ' +
      'addresses TRUST_PROXY lists are never capped by it.',
  ),
  LOG_LEVEL: choice(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], 'info').describe('pino log level.'),
  ASSET_SCALE: int(0, 8, 2).describe('Decimal places of the currency; amounts with more are refused.'),
  ASSET_CODE: z
    .string()
    .regex(/^[A-Za-z0-9]{1,12}$/, 'letters and digits, 1 to 12')
    .default('NGN')
    .describe('The currency as the console names it beside amounts (e.g. NGN); display only.'),
  TRUST_PROXY: z
    .string()
    .default('false')
    .transform((value, ctx): false | number | string[] => {
      if (value === 'false' || value === '') return false;
      // Trusting every hop lets any client write its own address first in X-Forwarded-For and be believed.
      if (value.trim().toLowerCase() === 'true')
        return invalid(
          ctx,
          'true would trust every X-Forwarded-For hop, so any client could choose its own address and pass ' +
            'API-key allow-lists and the per-address limits; give the number of proxies in front of wallet-ops ' +
            '(a hop count such as 1) or their addresses/CIDR ranges',
        );
      if (/^\d+$/.test(value)) {
        const hops = Number(value);
        if (hops <= MAX_PROXY_HOPS) return hops;
        return invalid(
          ctx,
          `a hop count above ${MAX_PROXY_HOPS} is refused: no deployment has that many proxies in front, and ` +
            'with more hops trusted than there are proxies any client could choose its own address; give the ' +
            'number of proxies in front of wallet-ops (1 behind one load balancer)',
        );
      }
      let ranges: string[];
      try {
        ranges = parseAllowedIps('TRUST_PROXY', value);
      } catch {
        return invalid(
          ctx,
          'use false, a hop count (the number of proxies in front of wallet-ops), or a comma-separated list of ' +
            "the proxies' addresses or CIDR ranges",
        );
      }
      // 0.0.0.0/0 or ::/0 is `true` spelt otherwise (and crashes express's compile); any very wide range nearly so.
      const wide = ranges.find(tooWideToTrust);
      if (wide)
        return invalid(
          ctx,
          `"${wide}" is wider than /8 (IPv4) or /32 (IPv6): it would trust nearly every address, so any client ` +
            `could choose its own address; list the proxies' own addresses or narrow ranges`,
        );
      return ranges;
    })
    .describe(
      'Whom to believe in X-Forwarded-For: false (default: nobody), a hop count (the number of proxies in front, ' +
        "at most 5), or the proxies' addresses/CIDRs (none wider than /8 for IPv4 or /32 for IPv6). true is " +
        'refused.',
    ),
  API_KEY_RATE_LIMIT: int(0, 100_000, 20).describe(
    'Requests per second one API key may make, sustained, in each API process (token bucket, in memory); 0 ' +
      'turns the limit off.',
  ),
  API_KEY_RATE_BURST: int(1, 1_000_000, 40).describe(
    'Requests one API key may make at once after a quiet spell: the size of its token bucket.',
  ),
  AUTH_FAILURE_LIMIT: int(0, 100_000, 30).describe(
    'Failed authentications per client address (IPv6: per /64) per minute, in each API process, before further ' +
      'failures are answered 429; 0 turns the limit off.',
  ),
  VOLUME_TIME_ZONE: z
    .string()
    .default('UTC')
    .refine(isValidTimeZone, 'an IANA time zone such as UTC or Africa/Lagos')
    .describe("Time zone whose calendar day bounds a key's max daily volume."),
  FEE_SCHEDULE: z
    .string()
    .default('{}')
    .transform((value, ctx) => {
      try {
        return feeScheduleSchema.parse(JSON.parse(value));
      } catch {
        return invalid(
          ctx,
          'JSON such as {"pay-merchant":{"flat":"0.50","percent":"1.5"}} for cash-out, pay-merchant, pay-individual',
        );
      }
    })
    .describe(
      'Fees of merchant operations per type: JSON {"<type>": {"flat": "0.00", "percent": "0"}}; the percentage ' +
        "is rounded up to the asset's unit; default none.",
    ),
  CASH_OUT_CONSENT: choice(['none', 'individual-code'], 'none').describe(
    "Whether a distributor's cash-out-fulfillment needs the individual's consent: none (the contract: any " +
      "registered individual's wallet may be debited) or individual-code (the request must carry " +
      'authorizationCode, a one-time code the individual got for 10 minutes, hashed under SECRETS_KEY; ' +
      '`wallet-ops individual cash-out-code` stands in for the wallet app).',
  ),
  LEDGER: choice(['embedded', 'evm'], 'embedded').describe(
    'Ledger the executor settles on: embedded (a hash-chained SQLite log under DATA_DIR) or evm (a ' +
      'WalletLedger contract on an EVM chain, EVM_*).',
  ),
  EVM_RPC_URL: unset(
    z.string().regex(/^https?:\/\/\S+$/, 'an http(s) JSON-RPC URL such as http://127.0.0.1:8545'),
  ).describe('JSON-RPC endpoint of the EVM node (LEDGER=evm).'),
  EVM_CHAIN_ID: unset(whole(1, 2 ** 53 - 1)).describe(
    'Chain id the node must report before wallet-ops signs anything for it (LEDGER=evm); 31337 for the ' +
      'development chain.',
  ),
  EVM_OPERATOR_KEY_FILE: unset(z.string().min(1)).describe(
    "File holding the operator account's private key (0x + 64 hex), the only account the contract obeys " +
      '(LEDGER=evm). Never logged, never in an event.',
  ),
  EVM_LEDGER_ADDRESS: unset(
    z.string().regex(/^0x[0-9a-fA-F]{40}$/, 'a contract address: 0x and 40 hex digits'),
  ).describe('Address of the WalletLedger contract (LEDGER=evm), as `wallet-ops ledger deploy` prints it.'),
  EVM_CONFIRMATIONS: int(1, 256, 1).describe(
    'Blocks a ledger transaction must be deep before its operation completes (LEDGER=evm).',
  ),
  EVM_RECEIPT_TIMEOUT_MS: int(100, 3_600_000, 60_000).describe(
    'How long one submit waits for its receipt and confirmations before the attempt counts as transient and is ' +
      'retried (LEDGER=evm).',
  ),
  EVM_POLL_INTERVAL_MS: int(10, 60_000, 250).describe('How often receipts and new blocks are polled (LEDGER=evm).'),
  EVENT_STORE_INTEGRITY_CHECK: choice(['quick', 'full', 'off'], 'quick').describe(
    "Embedded event store: SQLite's check of events.sqlite at each start of the server, which refuses a " +
      'damaged file: quick (PRAGMA quick_check, about 3 s a GB), full (integrity_check, indexes too, about 7 ' +
      'times as long) or off.',
  ),
  STORE_BUSY_BUDGET_MS: int(10, 600_000, 10_000).describe(
    'How long one call on an embedded store (events, read models) waits for another process’s write lock (a ' +
      'backup, an operator’s transaction) before it fails as unavailable and is retried by its caller ' +
      '(EVENT_STORE=embedded, READ_STORE=embedded).',
  ),
  LEDGER_BUSY_BUDGET_MS: int(10, 600_000, 10_000).describe(
    'How long one call on the embedded ledger waits for another process’s write lock (an executor holding it) ' +
      'before it counts as unavailable and is retried later (LEDGER=embedded).',
  ),
  LEDGER_LATENCY_MS: faultLatency(
    'Ledger fault injection (any ledger): milliseconds added to each transaction, like a chain’s confirmation time.',
  ),
  LEDGER_TRANSIENT_FAILURE_RATE: faultRate(
    'Ledger fault injection (any ledger): share of submits that fail transiently before reaching the ledger ' +
      '(retried).',
  ),
  LEDGER_REJECTION_RATE: faultRate(
    'Ledger fault injection (any ledger): share of submits refused for good before reaching the ledger (the ' +
      'operation fails).',
  ),
  LEDGER_CRASH_AFTER_ACCEPT: flag('false').describe(
    'Ledger fault injection (any ledger): kill the process right after the ledger accepts a transaction (crash ' +
      'tests).',
  ),
  LEDGER_STOP_WHILE_HOLDING: flag('false').describe(
    'Ledger fault injection (any ledger): the process stops itself (SIGSTOP) the first time a transfer holds ' +
      'the ledger (the embedded ledger’s write lock held, a chain’s transaction signed and unsent), until a ' +
      'SIGCONT (paused-executor tests).',
  ),
  EXECUTOR_ID: z
    .string()
    .regex(/^[A-Za-z0-9._:-]{1,64}$/)
    .optional()
    .describe(
      'Names this executor in its claims; a restarted executor with the same id recovers its own claims at once. ' +
        'Default: random per process.',
    ),
  CLOCK_SKEW_WARN_MS: int(100, 3_600_000, 5_000).describe(
    "A warning (and the wallet_ops_clock_skew_seconds gauge) when this process's clock differs from the " +
      "store's (PostgreSQL's) by more than this, checked at start and every 5 minutes.",
  ),
  CONSUMER_RETRY_BASE_MS: int(1, 60_000, 100).describe(
    'First wait before a failed consumer of the history (projections, executor, webhooks, key followers) ' +
      'resubscribes from its checkpoint; the wait doubles (with jitter) while failures go on.',
  ),
  CONSUMER_RETRY_MAX_MS: int(1, 600_000, 10_000).describe('Longest wait before a failed consumer resubscribes.'),
  EXECUTOR_LEASE_MS: int(100, 600_000, 10_000).describe(
    'How long an executor’s claim keeps other executors off an operation.',
  ),
  EXECUTOR_MAX_ATTEMPTS: int(1, 50, 6).describe(
    'Ledger attempts per operation before it fails (transient errors back off exponentially).',
  ),
  EXECUTOR_RETRY_BASE_MS: int(1, 60_000, 100).describe(
    'First wait before an operation’s failed attempt is tried again; the wait doubles (with jitter) as ' +
      'failures go on.',
  ),
  EXECUTOR_RETRY_MAX_MS: int(1, 600_000, 5_000).describe('Longest wait between two attempts at one operation.'),
  EXECUTOR_CONCURRENCY: int(1, 256, 16).describe(
    'Operations one executor works on at once (waiting out another executor’s claim or a retry’s backoff does ' +
      'not count).',
  ),
  EXECUTOR_SWEEP_INTERVAL_MS: int(100, 3_600_000, 30_000).describe(
    'How often the executor’s reconciliation sweep looks for approved operations that no executor holds and ' +
      'carries them out.',
  ),
  KEY_EXPIRY_SWEEP_INTERVAL_MS: int(100, 3_600_000, 60_000).describe(
    'How often the key-revocation consumer (with the executor) rejects the pending operations of API keys that ' +
      'have expired, releasing their holds.',
  ),
  READ_YOUR_WRITES_TIMEOUT_MS: int(0, 60_000, 2000).describe(
    'Read-your-writes: a read of a read model (a list, an item, a balance) waits until the model holds the latest ' +
      'write this process made for the party (where the process runs the projections), this many ms at most; ' +
      'the create itself is answered at its commit. 0: never wait.',
  ),
  READ_MAX_LAG_EVENTS: int(0, 1_000_000, 1000).describe(
    'A read model with more of its events than this still to apply is not served: the read API answers 503 ' +
      'with Retry-After (as does a model with no checkpoint while events exist), and /ready fails.',
  ),
  CONSUMER_UNHEALTHY_AFTER_MS: int(1000, undefined, 60_000).describe(
    'How long a background consumer (projection, executor, API-key directory, sealer) may be unable to run ' +
      'before /health fails so that an orchestrator restarts the process.',
  ),
  FOLLOWERS_THREAD: flag('true').describe(
    'A process that serves an API and follows the history too (`npm start`) runs the projections, the sealer, ' +
      'the executor, key revocations and the webhooks on a worker thread of its own (src/followers-thread.ts), ' +
      'so that they do not share the event loop with the requests. false: every part on the one event loop.',
  ),
  // Metrics (src/metrics, docs/operations.md "Metrics"): Prometheus text format at GET /metrics, without an API key.
  METRICS_ENABLED: flag('true').describe(
    'Serve Prometheus metrics at GET /metrics (no API key: never expose it publicly). false: no /metrics and ' +
      'no metrics kept.',
  ),
  METRICS_PORT: unset(whole(0, 65535)).describe(
    'Serve /metrics on this port instead of the API port (then the API port has no /metrics). Default: unset, ' +
      'on the API port.',
  ),
  METRICS_HOST: unset(z.string().min(1)).describe(
    'Address the METRICS_PORT server binds to, e.g. an internal interface. Default: HOST.',
  ),
  // Tracing (docs/operations.md, Tracing): the OpenTelemetry SDK reads these itself; they are checked here so that a
  // typo stops the start rather than silently turning tracing off, and they decide whether the SDK is loaded at all.
  OTEL_SDK_DISABLED: z
    .preprocess(
      (v) => (typeof v === 'string' ? unsetWhenEmpty(v.toLowerCase()) : v),
      z.enum(['true', 'false']).default('false'),
    )
    .transform((v) => v === 'true')
    .describe('true: no tracing whatever the other OTEL_ variables say.'),
  OTEL_TRACES_EXPORTER: unset(
    z
      .string()
      .regex(
        /^(otlp|zipkin|console|none)(,(otlp|zipkin|console|none))*$/,
        'a comma-separated list of otlp, zipkin, console or none',
      ),
  ).describe(
    'Where spans go: otlp (OTEL_EXPORTER_OTLP_*), zipkin, console; none: tracing off. Setting it (other than ' +
      'none) turns tracing on.',
  ),
  OTEL_EXPORTER_OTLP_ENDPOINT: unset(z.url({ protocol: /^https?$/ })).describe(
    'The OTLP collector, e.g. http://jaeger:4318 (http/protobuf). Setting it turns tracing on.',
  ),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: unset(z.url({ protocol: /^https?$/ })).describe(
    'The OTLP traces URL itself, e.g. http://jaeger:4318/v1/traces. Setting it turns tracing on.',
  ),
  OTEL_SERVICE_NAME: z
    .preprocess(unsetWhenEmpty, z.string().min(1).max(200).default('wallet-ops'))
    .describe('The service name spans carry: one per process role is clearest (wallet-ops-api, wallet-ops-executor).'),
  EVENT_STORE: unset(z.enum(['embedded', 'kurrentdb', 'postgres'])).describe(
    'Event store: embedded (SQLite under DATA_DIR), kurrentdb (KURRENTDB_URL) or postgres (POSTGRES_URL). ' +
      'Default: the store whose URL is set (both set: refused, choose one), else embedded.',
  ),
  EVENT_STORE_COMMITS: choice(['thread', 'event-loop'], 'event-loop').describe(
    'Embedded event store: where appends are committed (statements and fsync): on the event loop (event-loop), ' +
      'or on a thread of their own taking over from the second batch (thread), which pays where a core is free ' +
      '(not on a 2-core machine shared with its load; see docs/benchmarks.md).',
  ),
  KURRENTDB_URL: unset(
    z
      .string()
      .regex(
        /^(kurrentdb|kurrent|kdb|esdb)(\+discover)?:\/\/\S+$/,
        'a KurrentDB connection string such as kurrentdb://host:2113?tls=false',
      ),
  ).describe(
    'KurrentDB connection string, e.g. kurrentdb://kurrentdb:2113?tls=false; selects the KurrentDB event store ' +
      'unless EVENT_STORE says otherwise.',
  ),
  READ_STORE: unset(z.enum(['embedded', 'mongodb', 'postgres'])).describe(
    'Read-model store: embedded (SQLite under DATA_DIR), mongodb (MONGODB_URL) or postgres (POSTGRES_URL). ' +
      'Default: the store whose URL is set (both set: refused, choose one), else embedded.',
  ),
  MONGODB_URL: unset(
    z
      .string()
      .regex(
        /^mongodb(\+srv)?:\/\/\S+$/,
        'a MongoDB connection string such as mongodb://mongodb:27017/?replicaSet=rs0',
      ),
  ).describe(
    'MongoDB connection string (a replica set: the read store commits in transactions); selects the MongoDB ' +
      'read store unless READ_STORE says otherwise.',
  ),
  MONGODB_DATABASE: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,63}$/, 'a MongoDB database name: letters, digits, _ and -')
    .default('wallet_ops')
    .describe('MongoDB database holding the read models and their checkpoints.'),
  POSTGRES_URL: unset(
    z
      .string()
      .regex(
        /^postgres(ql)?:\/\/\S+$/,
        'a PostgreSQL connection string such as ' +
          'postgres://wallet_ops:PASSWORD@db:5432/wallet_ops?sslmode=verify-full',
      ),
  ).describe(
    'PostgreSQL connection string (libpq URL; TLS with sslmode=verify-full); selects PostgreSQL for both ' +
      'stores unless EVENT_STORE / READ_STORE say otherwise. Its password is never logged.',
  ),
  POSTGRES_READ_URL: unset(
    z
      .string()
      .regex(
        /^postgres(ql)?:\/\/[^\s,]+(\s*,\s*postgres(ql)?:\/\/[^\s,]+)*$/,
        'PostgreSQL connection strings of hot standbys, comma-separated',
      ),
  ).describe(
    'Read replicas (READ_STORE=postgres): hot standbys of POSTGRES_URL, comma-separated (each process takes ' +
      "one). The read API and the console read the projections' models there once the standby has replayed as " +
      "far as the primary's model (waiting up to READ_YOUR_WRITES_TIMEOUT_MS), else from the primary; nothing " +
      'is written there and no consumer follows it (docs/operations.md, "Read replicas").',
  ),
  POSTGRES_POOL_SIZE: int(1, 1000, 10).describe(
    'PostgreSQL: most connections each store of a process opens (plus, while the event store has subscribers, ' +
      '2 for their page reads, a pool apart, and one LISTEN connection).',
  ),
  POSTGRES_STATEMENT_TIMEOUT_MS: int(100, 600_000, 10_000).describe(
    'PostgreSQL: the server cancels a statement running longer, and a call waits this long for a connection; ' +
      'either is reported as the store unavailable (retried).',
  ),
  CREATE_DEADLINE_MS: unset(whole(100, 600_000)).describe(
    'A create is answered within this many ms, whatever it waits on (the store, a lock, group commit, ' +
      'conflicts with other writers): past it, 503 with Retry-After (saying when the outcome is unknown). ' +
      "Default: the event store's bound on one call (POSTGRES_STATEMENT_TIMEOUT_MS, STORE_BUSY_BUDGET_MS " +
      'embedded, 10 s KurrentDB) plus 5 s: 15 s.',
  ),
  LOGIN_ATTEMPTS_PER_EMAIL: int(1, 1000, 5).describe(
    'Console logins tried for one email from one client address, counted before the password is checked, ' +
      'before that email is locked from that address for LOGIN_LOCKOUT_MS; counted from every address, the ' +
      'attempts past it are slowed (LOGIN_DELAY_MAX_MS), never locked.',
  ),
  LOGIN_DELAY_MAX_MS: int(1000, 3_600_000, 60_000).describe(
    'The longest wait between two console logins on one email from one address once the email has had more ' +
      'than LOGIN_ATTEMPTS_PER_EMAIL attempts from all addresses (1 s, doubling with each attempt): what an ' +
      'owner waits at most, from an address of their own, while others guess.',
  ),
  LOGIN_ATTEMPTS_PER_ADDRESS: int(1, 100_000, 20).describe(
    'Failed console logins from one client address (IPv6: per /64) before every login from it is locked for ' +
      'LOGIN_LOCKOUT_MS.',
  ),
  CONSOLE_WAITING_POLL_MS: int(1000, 600_000, 15_000).describe(
    'How often an open, visible console page asks for the counts of decisions waiting for its user (the ' +
      'navigation badges).',
  ),
  LOGIN_LOCKOUT_MS: int(1000, 7 * 24 * 3_600_000, 15 * 60_000).describe(
    'How long console login attempts are counted, and how long a lockout lasts from the attempt that reached a ' +
      'limit.',
  ),
  SECRETS_KEY: unset(
    z.string().transform((value, ctx) => {
      const text = value.trim();
      const bytes = /^[0-9a-fA-F]{64}$/.test(text)
        ? Buffer.from(text, 'hex')
        : /^[A-Za-z0-9+/_-]{43}=?$/.test(text)
          ? Buffer.from(text, 'base64')
          : null;
      if (bytes?.length === 32) return bytes;
      return invalid(ctx, '32 random bytes as 64 hex digits or in base64, e.g. from `openssl rand -base64 32`');
    }),
  ).describe(
    'Key (32 bytes, base64 or hex) that seals secrets at rest (API-key secrets waiting for their maker, ' +
      'temporary password halves, webhook signing secrets) and keys the cash-out code hashes. Required with ' +
      'server stores; embedded default: the key file SECRETS_KEY_FILE.',
  ),
  SECRETS_KEY_FILE: unset(z.string().min(1)).describe(
    'Embedded stores without SECRETS_KEY: the key file, generated once (0600, in an owner-only directory), ' +
      'never inside DATA_DIR, so that a copy of DATA_DIR opens nothing. Default: <DATA_DIR>.secrets/secrets.key ' +
      'beside DATA_DIR; a key left at DATA_DIR/secrets.key by an older version is moved there at start.',
  ),
  CONSOLE_CONFIRM_ABOVE: z
    .string()
    .regex(/^(\d{1,18}(\.\d+)?|never)$/, 'a decimal amount such as 10000.00, or never')
    .default('10000')
    .transform((value) => (value === 'never' ? null : value))
    .describe(
      'In the console, approving an operation whose amount is above this asks the checker to confirm once more ' +
        '(also in a bulk approval). `never`: no second question.',
    ),
  WEBHOOK_ALLOW_INSECURE_LOCALHOST: flag('false').describe(
    'Development and tests only: webhook endpoints may be http://127.0.0.1, http://localhost or http://[::1]. ' +
      'Never in production: endpoints must be https.',
  ),
  WEBHOOK_ALLOWED_PRIVATE_RANGES: z
    .preprocess(unsetWhenEmpty, z.string().optional())
    .transform((value, ctx) => {
      if (value === undefined) return [];
      try {
        return parseAllowedIps(
          'WEBHOOK_ALLOWED_PRIVATE_RANGES',
          value
            .split(',')
            .map((part) => part.trim())
            .filter(Boolean),
        );
      } catch (error) {
        return invalid(ctx, (error as Error).message);
      }
    })
    .describe(
      'Comma-separated addresses or CIDR ranges that webhook deliveries may reach although they are not public ' +
        '(e.g. a partner over a VPN). Default: none; deliveries go to public addresses only.',
    ),
  API_KEY_ENVIRONMENT: choice(['live', 'test'], 'live').describe(
    'Which deployment this is, for the prefix of the API keys it issues: `wo_live_…` or `wo_test_…` (a ' +
      'sandbox), so that people and secret scanners tell them apart. Keys issued before the prefix keep working; ' +
      'the demo seeds test keys, and `--demo` defaults this to test.',
  ),
  SECRET_ROTATION_OVERLAP_HOURS: z.coerce
    .number()
    .min(0)
    .max(MAX_ROTATION_OVERLAP_HOURS)
    .default(DEFAULT_ROTATION_OVERLAP_HOURS)
    .describe(
      'After a checker approves an API key’s or webhook endpoint’s secret rotation, the previous secret keeps ' +
        'working (is accepted, deliveries are signed with both) for this many hours, 0 to 168, so clients switch ' +
        'without an outage.',
    ),
  WEBHOOK_TIMEOUT_MS: int(100, 60_000, 10_000).describe(
    'One webhook delivery attempt (connect, send, response) gives up after this long.',
  ),
  WEBHOOK_RETRY_BASE_MS: int(1, 3_600_000, 5_000).describe(
    'First retry delay of a failed webhook delivery; the delay doubles as failures go on.',
  ),
  WEBHOOK_RETRY_MAX_MS: int(1, 86_400_000, 3_600_000).describe(
    'Longest delay between two attempts of one webhook delivery.',
  ),
  WEBHOOK_DISABLE_AFTER_MS: int(1, undefined, 86_400_000).describe(
    'A webhook delivery still failing this long after its first failure is given up and its endpoint disabled ' +
      '(default a day).',
  ),
  WEBHOOK_CONCURRENCY: int(1, 1024, 32).describe(
    'Webhook endpoints one process delivers to at once (each endpoint gets one delivery at a time, in event order).',
  ),
  WEBHOOK_POLL_INTERVAL_MS: int(10, 60_000, 1_000).describe(
    'How often the webhook dispatcher looks for deliveries that another process queued (its own wake it at once).',
  ),
  WEBHOOK_LEASE_MS: int(1_000, 3_600_000, 60_000).describe(
    'How long a process holds an endpoint’s delivery queue; the queue of a process that died waits this long. ' +
      'At least 4x WEBHOOK_TIMEOUT_MS.',
  ),
  // Fault injection (src/faults): every store, embedded or server, can be made slow, hanging or failing. Tests and soak
  // runs only.
  FAULT_EVENT_STORE_ERROR_RATE: faultRate(
    'Fault injection: share of event store calls that fail transiently (appends half before, half after writing; ' +
      'subscriptions break).',
  ),
  FAULT_EVENT_STORE_LATENCY_MS: faultLatency(
    'Fault injection: random delay in [0, N] ms before each event store call (a tenth of it per subscription event).',
  ),
  FAULT_EVENT_STORE_HANG_RATE: faultRate(
    'Fault injection: share of event store calls that hang FAULT_HANG_MS, then fail.',
  ),
  FAULT_READ_STORE_ERROR_RATE: faultRate(
    'Fault injection: share of read store calls that fail transiently (commits and promotes half before, half ' +
      'after writing).',
  ),
  FAULT_READ_STORE_LATENCY_MS: faultLatency('Fault injection: random delay in [0, N] ms before each read store call.'),
  FAULT_READ_STORE_HANG_RATE: faultRate(
    'Fault injection: share of read store calls that hang FAULT_HANG_MS, then fail.',
  ),
  FAULT_LEDGER_ERROR_RATE: faultRate(
    'Fault injection: share of ledger calls that fail transiently (submits half before, half after the ledger ' +
      'executed them).',
  ),
  FAULT_LEDGER_LATENCY_MS: faultLatency('Fault injection: random delay in [0, N] ms before each ledger call.'),
  FAULT_LEDGER_HANG_RATE: faultRate('Fault injection: share of ledger calls that hang FAULT_HANG_MS, then fail.'),
  PASSWORD_HASH_COST: z.coerce
    .number()
    .int()
    .min(LOWEST_TEST_HASH_COST)
    .max(20)
    .optional()
    .describe(
      'log2 of scrypt’s N for new password hashes; default 17 (N = 2^17, 128 MiB, OWASP’s cost), at least ' +
        `${LOWEST_PRODUCTION_HASH_COST}. Lower only for test runs (NODE_ENV=test).`,
    ),
  NODE_ENV: z
    .string()
    .optional()
    .describe(
      `\`test\` (set by the test runner): PASSWORD_HASH_COST may go below ${LOWEST_PRODUCTION_HASH_COST}. The ` +
        `image sets \`production\`.`,
    ),
  FAULT_FOLLOWERS_THREAD_CRASH_AFTER_MS: int(0, 600_000, 0).describe(
    'Fault injection: the first followers thread (FOLLOWERS_THREAD) throws an uncaught error this many ms after ' +
      'it is up, and is restarted. 0: never.',
  ),
  FAULT_FOLLOWERS_THREAD_BLOCK_AFTER_MS: int(0, 600_000, 0).describe(
    'Fault injection: the first followers thread (FOLLOWERS_THREAD) blocks its event loop for FAULT_HANG_MS this ' +
      'many ms after it is up. 0: never.',
  ),
  FAULT_HANG_MS: int(1, 600_000, 30_000).describe('Fault injection: how long a hung call waits before it fails.'),
});

type Settings = z.infer<typeof schema>;

/** Each store's server choices and the variable naming each one's URL. */
const EVENT_SERVERS = { kurrentdb: 'KURRENTDB_URL', postgres: 'POSTGRES_URL' } as const;
const READ_SERVERS = { mongodb: 'MONGODB_URL', postgres: 'POSTGRES_URL' } as const;

/**
 * The store an explicit choice names, else the one whose URL is set, else the embedded one; undefined when the
 * URLs of two servers are set and nothing chooses between them (refused, see below).
 */
function chosenStore<Server extends string>(
  explicit: Server | 'embedded' | undefined,
  servers: Record<Server, keyof Settings>,
  config: Settings,
): Server | 'embedded' | undefined {
  if (explicit) return explicit;
  const named = (Object.keys(servers) as Server[]).filter((server) => config[servers[server]]);
  return named.length === 0 ? 'embedded' : named.length === 1 ? named[0] : undefined;
}

/** How long one call on the event store may take before it fails: the bound a create's deadline adds its margin to. */
function eventStoreCallBoundMs(store: 'embedded' | keyof typeof EVENT_SERVERS, config: Settings): number {
  if (store === 'postgres') return config.POSTGRES_STATEMENT_TIMEOUT_MS;
  if (store === 'embedded') return config.STORE_BUSY_BUDGET_MS;
  return 10_000; // KurrentDB: the client's deadline of an append and of a read (docs/operations.md)
}

/** The longest retry wait of each backoff, and the first wait it may not be shorter than. */
const RETRY_BOUNDS = [
  ['EXECUTOR_RETRY_MAX_MS', 'EXECUTOR_RETRY_BASE_MS'],
  ['CONSUMER_RETRY_MAX_MS', 'CONSUMER_RETRY_BASE_MS'],
  ['WEBHOOK_RETRY_MAX_MS', 'WEBHOOK_RETRY_BASE_MS'],
] as const;

/** The stores follow the URLs unless chosen explicitly; a chosen store without its URL is a configuration error. */
const configSchema = schema
  .superRefine((config, ctx) => {
    const refuse = (path: keyof Settings, message: string) => ctx.addIssue({ code: 'custom', path: [path], message });
    const storeChoices = [
      {
        variable: 'EVENT_STORE',
        store: chosenStore(config.EVENT_STORE, EVENT_SERVERS, config),
        servers: EVENT_SERVERS,
      },
      { variable: 'READ_STORE', store: chosenStore(config.READ_STORE, READ_SERVERS, config), servers: READ_SERVERS },
    ] as const;
    for (const { variable, store, servers } of storeChoices) {
      const urls = servers as Record<string, keyof Settings>;
      if (store === undefined) {
        const set = Object.values(urls).filter((url) => config[url]);
        refuse(
          variable,
          `${set.join(' and ')} are both set: choose the store with ${variable} (${Object.keys(urls).join(' or ')})`,
        );
      } else if (store !== 'embedded' && !config[urls[store]!]) {
        refuse(urls[store]!, `required when ${variable} is ${store}`);
      }
    }
    // Server stores are shared by processes on several machines: each needs the same key, so none can make its own.
    const servers = storeChoices.some(({ store }) => store !== 'embedded');
    // Node refuses a headers timeout longer than the request timeout when it creates the server: say it here, by name.
    if (config.HTTP_HEADERS_TIMEOUT_MS > config.HTTP_REQUEST_TIMEOUT_MS) {
      refuse(
        'HTTP_REQUEST_TIMEOUT_MS',
        `must be at least HTTP_HEADERS_TIMEOUT_MS (${config.HTTP_HEADERS_TIMEOUT_MS} ms)`,
      );
    }
    if (config.METRICS_PORT !== undefined && !config.METRICS_ENABLED) {
      refuse('METRICS_PORT', 'set, but METRICS_ENABLED is false: unset one of them');
    }
    if (config.METRICS_PORT !== undefined && config.METRICS_PORT !== 0 && config.METRICS_PORT === config.PORT) {
      refuse('METRICS_PORT', 'the same as PORT: leave METRICS_PORT unset to serve /metrics on the API port');
    }
    if (config.WEBHOOK_LEASE_MS < 4 * config.WEBHOOK_TIMEOUT_MS) {
      refuse(
        'WEBHOOK_LEASE_MS',
        `must be at least 4x WEBHOOK_TIMEOUT_MS (${4 * config.WEBHOOK_TIMEOUT_MS} ms): a queue's lease must ` +
          'outlast the attempts made under it',
      );
    }
    for (const [longest, first] of RETRY_BOUNDS) {
      if (config[longest] < config[first]) refuse(longest, `must be at least ${first}`);
    }
    // A test run hashes hundreds of users and logins: there, and only there, a hash may cost less than a deployment's.
    if (
      config.PASSWORD_HASH_COST !== undefined &&
      config.PASSWORD_HASH_COST < LOWEST_PRODUCTION_HASH_COST &&
      config.NODE_ENV !== 'test'
    ) {
      refuse(
        'PASSWORD_HASH_COST',
        `at least ${LOWEST_PRODUCTION_HASH_COST} (16 MiB a hash); lower only in a test run (NODE_ENV=test)`,
      );
    }
    if (config.POSTGRES_READ_URL && chosenStore(config.READ_STORE, READ_SERVERS, config) !== 'postgres') {
      refuse('POSTGRES_READ_URL', 'read replicas need READ_STORE=postgres (the standbys of its primary)');
    }
    if (servers && !config.SECRETS_KEY) {
      refuse(
        'SECRETS_KEY',
        'required when a store is a server (KurrentDB, MongoDB or PostgreSQL): the same 32 random bytes for ' +
          'every process, e.g. from `openssl rand -base64 32`',
      );
    }
  })
  .transform((config) => ({
    ...config,
    // Never undefined here: superRefine refused the configurations where no store is chosen.
    EVENT_STORE: chosenStore(config.EVENT_STORE, EVENT_SERVERS, config)!,
    READ_STORE: chosenStore(config.READ_STORE, READ_SERVERS, config)!,
    // One call on the event store may take its whole bound and still answer: the margin is for the rest of the create.
    CREATE_DEADLINE_MS:
      config.CREATE_DEADLINE_MS ??
      eventStoreCallBoundMs(chosenStore(config.EVENT_STORE, EVENT_SERVERS, config)!, config) + 5_000,
    // Behind proxies counted by hops, any peer may be the proxy, which carries every client: no per-address cap unless
    // asked.
    HTTP_MAX_CONNECTIONS_PER_ADDRESS:
      config.HTTP_MAX_CONNECTIONS_PER_ADDRESS ??
      (typeof config.TRUST_PROXY === 'number' && config.TRUST_PROXY > 0 ? 0 : 256),
  }));

export type Config = z.infer<typeof configSchema>;

/**
 * Tracing is on when an exporter (other than none) or an OTLP endpoint is set, and OTEL_SDK_DISABLED is not
 * true. Off, the OpenTelemetry packages are not even loaded: tracing costs nothing until it is asked for.
 */
export function tracingEnabled(
  config: Pick<
    Config,
    'OTEL_SDK_DISABLED' | 'OTEL_TRACES_EXPORTER' | 'OTEL_EXPORTER_OTLP_ENDPOINT' | 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'
  >,
): boolean {
  if (config.OTEL_SDK_DISABLED) return false;
  if (config.OTEL_TRACES_EXPORTER !== undefined) return config.OTEL_TRACES_EXPORTER.split(',')[0] !== 'none';
  return config.OTEL_EXPORTER_OTLP_ENDPOINT !== undefined || config.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT !== undefined;
}

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const result = configSchema.safeParse(env);
  if (result.success) {
    // The one process-wide setting that is not passed around: the cost of the password hashes it makes.
    if (result.data.PASSWORD_HASH_COST !== undefined) setPasswordHashCost(result.data.PASSWORD_HASH_COST);
    return result.data;
  }
  const problems = result.error.issues.map(
    (issue) =>
      `${issue.path.join('.')}: ${issue.message} (got ${
        String(issue.path[0]) === 'SECRETS_KEY'
          ? env.SECRETS_KEY
            ? 'a value not shown'
            : 'none'
          : redact(JSON.stringify(env[String(issue.path[0])]))
      })`,
  );
  throw new ConfigError(`invalid configuration: ${problems.join('; ')}`);
}

/** A connection string's password stays out of error messages and logs. */
function redact(text: string | undefined): string | undefined {
  return text?.replace(/(\/\/[^:/@\s]*:)[^@/\s]*@/g, '$1***@').replace(/(password=)[^&\s"]*/gi, '$1***');
}

/** Variable, default and doc of every setting, for the README and `--help`. */
export const configDocs = Object.entries(schema.shape).map(([name, field]) => ({
  name,
  description: field.description ?? '',
}));

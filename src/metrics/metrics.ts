import { AggregatorRegistry, Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { BoundedSnapshot } from './bounded-snapshot.ts';

/**
 * The process's Prometheus metrics (docs/operations.md, "Metrics", lists them with their labels).
 *
 * Each built system (buildWalletOps) has its own registry, so that several systems in one process (the tests
 * start many) never register a family twice nor mix their counts. Process metrics (CPU, memory, event loop,
 * GC) describe the process, not a system: they live in one registry per process, created at the first
 * system's scrape, and are appended to every system's scrape. Registering them per system would install one
 * event-loop monitor and one GC observer per system, none of which can be removed again.
 *
 * Nothing here reads a store on the request path: counters and histograms are updated by small hooks at the
 * call sites (the HTTP middleware, the port decorators, the executor's observer), and what must be read from
 * the stores (consumer lag, rebuild progress) is read at scrape time, bounded by `collectTimeoutMs`.
 */

/** Seconds: from well under a millisecond (an embedded read) to the 10 s a busy store may take to give up. */
const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** Appends per group-commit transaction: at most 1000 (sqlite-group-commit.ts, MAX_BATCH_REQUESTS). */
const BATCH_BUCKETS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1000];

/** Default bound of a scrape-time collection: well inside Prometheus's default scrape timeout of 10 s. */
export const DEFAULT_COLLECT_TIMEOUT_MS = 2000;

/** A registry's families as data (`getMetricsAsJSON`), which can cross to another thread. */
export type MetricFamilies = Awaited<ReturnType<Registry['getMetricsAsJSON']>>;

/** A consumer's state and lag as `consumerReports` (src/health.ts) gives it; structural, so no import of health. */
export interface ConsumerLag {
  name: string;
  state: string;
  lagEvents: number | null;
  lagSeconds: number | null;
}

/** A rebuild that has started and not been promoted yet (src/projections/rebuild.ts, rebuildsInProgress). */
export interface RebuildLag {
  projection: string;
  position: number;
  head: number;
}

/** A PostgreSQL pool's connections (src/adapters/postgres/postgres-pool.ts PoolStats; structural, no import). */
export interface PoolCounts {
  total: number;
  idle: number;
  waiting: number;
  max: number;
}

let processRegistry: Registry | undefined;

/** The one registry of process metrics (prom-client's collectDefaultMetrics), created on first use. */
function processMetrics(): Registry {
  if (!processRegistry) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry });
  }
  return processRegistry;
}

export class WalletOpsMetrics {
  readonly registry = new Registry();
  private readonly collectTimeoutMs: number;
  /** The scrape-time collections (watchConsumers, watchRebuilds). */
  private readonly snapshots: Array<BoundedSnapshot<unknown>> = [];

  readonly httpDuration: Histogram<'method' | 'route' | 'status'>;
  readonly creates: Counter<'party_type' | 'outcome' | 'problem_type'>;
  readonly createConflictRetries: Counter;
  readonly replicaReads: Counter<'source'>;
  readonly httpConnectionsRefused: Counter<'reason'>;
  readonly appendDuration: Histogram<'method' | 'outcome'>;
  readonly groupCommitBatchSize: Histogram;
  readonly ledgerDuration: Histogram<'method' | 'outcome'>;
  readonly ledgerErrors: Counter<'method' | 'kind'>;
  readonly executorClaims: Counter<'attempt'>;
  readonly executorCompletions: Counter;
  readonly executorFailures: Counter<'reason'>;
  readonly webhookAttempts: Counter<'outcome'>;
  readonly webhookDeliveryLag: Histogram;
  private readonly collectFailures: Counter<'collector' | 'reason'>;

  constructor(options: { collectTimeoutMs?: number } = {}) {
    this.collectTimeoutMs = options.collectTimeoutMs ?? DEFAULT_COLLECT_TIMEOUT_MS;
    const registers = [this.registry];
    this.httpDuration = new Histogram({
      name: 'wallet_ops_http_request_duration_seconds',
      help:
        'HTTP requests answered, by method, route pattern (never the raw URL) and status: time from arrival to ' +
        'the last byte written. Scrapes of /metrics are not counted.',
      labelNames: ['method', 'route', 'status'],
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.creates = new Counter({
      name: 'wallet_ops_creates_total',
      help:
        'Create-operation requests of authenticated, authorized API keys, by party type and outcome (created, ' +
        'replayed, refused, error) and, unless created, the problem type answered.',
      labelNames: ['party_type', 'outcome', 'problem_type'],
      registers,
    });
    this.createConflictRetries = new Counter({
      name: 'wallet_ops_create_conflict_retries_total',
      help:
        'Create-operation decisions taken again because another writer changed a stream they read (optimistic ' +
        'concurrency).',
      registers,
    });
    this.replicaReads = new Counter({
      name: 'wallet_ops_replica_reads_total',
      help:
        'Reads of the read models with a read replica (POSTGRES_READ_URL), by the server that answered: ' +
        'replica, or primary (the replica behind or failing).',
      labelNames: ['source'],
      registers,
    });
    this.httpConnectionsRefused = new Counter({
      name: 'wallet_ops_http_connections_refused_total',
      help:
        'Connections closed as soon as they were accepted, by the cap they were over: total ' +
        '(HTTP_MAX_CONNECTIONS) or per-address (HTTP_MAX_CONNECTIONS_PER_ADDRESS).',
      labelNames: ['reason'],
      registers,
    });
    this.appendDuration = new Histogram({
      name: 'wallet_ops_event_store_append_duration_seconds',
      help:
        'Event store appends, by method (append, appendMulti) and outcome (ok, conflict, error): time until ' +
        'durable, at the EventStore port.',
      labelNames: ['method', 'outcome'],
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.groupCommitBatchSize = new Histogram({
      name: 'wallet_ops_event_store_group_commit_batch_size',
      help: "Appends written per transaction (one fsync) by the embedded event store's group commit.",
      buckets: BATCH_BUCKETS,
      registers,
    });
    this.ledgerDuration = new Histogram({
      name: 'wallet_ops_ledger_request_duration_seconds',
      help: 'Ledger calls, by method and outcome (ok, error), at the Ledger port.',
      labelNames: ['method', 'outcome'],
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.ledgerErrors = new Counter({
      name: 'wallet_ops_ledger_errors_total',
      help:
        'Ledger calls that failed, by method and kind: rejected (final), unavailable (retried), duplicate ' +
        '(already executed: recovered), voided (the operation was voided: it never executes), other.',
      labelNames: ['method', 'kind'],
      registers,
    });
    this.executorClaims = new Counter({
      name: 'wallet_ops_executor_claims_total',
      help:
        'Operations claimed by this executor, by attempt: first, or retry (after a transient failure, a restart ' +
        'or an expired lease).',
      labelNames: ['attempt'],
      registers,
    });
    this.executorCompletions = new Counter({
      name: 'wallet_ops_executor_completions_total',
      help: 'Operations this executor recorded as completed (their ledger transaction made or found).',
      registers,
    });
    this.executorFailures = new Counter({
      name: 'wallet_ops_executor_failures_total',
      help:
        'Operations this executor recorded as failed, each once its void committed on the ledger, by reason: ' +
        'rejected (by the ledger), gave_up (out of attempts) or voided (a submit met the void of another ' +
        'executor).',
      labelNames: ['reason'],
      registers,
    });
    this.webhookAttempts = new Counter({
      name: 'wallet_ops_webhook_attempts_total',
      help:
        'Webhook delivery attempts this process made, by outcome: delivered (2xx), retry (failed, tried again ' +
        'later), gave_up (failed for the whole retry window: the endpoint is disabled).',
      labelNames: ['outcome'],
      registers,
    });
    this.webhookDeliveryLag = new Histogram({
      name: 'wallet_ops_webhook_delivery_lag_seconds',
      help:
        "Webhook deliveries that succeeded: time from the event (its commit) to the receiver's 2xx, retries " +
        'included.',
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800, 3600, 21600, 86400],
      registers,
    });
    const snapshots = this.snapshots;
    this.collectFailures = new Counter({
      name: 'wallet_ops_metrics_collect_failures_total',
      help:
        'Scrape-time collections that timed out or failed (their families are left out of that scrape), by ' +
        'collector and reason.',
      labelNames: ['collector', 'reason'],
      registers,
      // Rendered after this scrape's collections have ended (joining them: one read each per scrape), so that a
      // scrape that lacks a family also counts why.
      async collect() {
        await Promise.all(snapshots.map((snapshot) => snapshot.get()));
      },
    });
  }

  /** The scrape: this system's families (with those of its other threads), then the process's. */
  async scrape(): Promise<string> {
    const [own, process] = await Promise.all([
      this.elsewhere.length === 0 ? this.registry.metrics() : this.merged(),
      processMetrics().metrics(),
    ]);
    return `${own}\n${process}`;
  }

  /** Families of another thread of this process (a followers thread), bounded like any scrape-time read. */
  private readonly elsewhere: Array<BoundedSnapshot<MetricFamilies>> = [];

  /**
   * Adds another thread's families to each scrape (src/followers-thread.ts): a family both threads keep is one
   * family, its samples summed by labels (prom-client's AggregatorRegistry), so that a counter or a pool's
   * connections count the whole process.
   */
  scrapeAlso(collector: string, families: () => Promise<MetricFamilies>): void {
    this.elsewhere.push(this.bounded(collector, families));
  }

  private async merged(): Promise<string> {
    const [own, ...others] = await Promise.all([
      this.registry.getMetricsAsJSON(),
      ...this.elsewhere.map((snapshot) => snapshot.get()),
    ]);
    const families = [own, ...others.filter((other) => other !== undefined)];
    return AggregatorRegistry.aggregate(families).metrics();
  }

  readonly contentType = Registry.PROMETHEUS_CONTENT_TYPE;

  /** This process's clock minus the store's, in seconds (src/shared/clock-skew.ts); absent on KurrentDB. */
  readonly clockSkew = new Gauge({
    name: 'wallet_ops_clock_skew_seconds',
    help:
      "This process's clock minus the store's (PostgreSQL, or the kernel's file stamps on the embedded store), " +
      'in seconds, as last measured; positive when this clock runs ahead.',
    registers: [this.registry],
  });

  private readonly pools = new Set<{ name: string; counts: () => PoolCounts }>();
  private postgresFamilies: Histogram<'pool' | 'outcome'> | undefined;

  /**
   * The PostgreSQL pools' observer (postgres-pool.ts PoolObserver): every statement's round trip, and each open
   * pool's connections read at scrape time (in memory). Families are registered at the first pool, so that a
   * process on the embedded stores shows none.
   */
  readonly postgres = {
    opened: (name: string, counts: () => PoolCounts) => {
      this.registerPostgres();
      const pool = { name, counts };
      this.pools.add(pool);
      return { closed: () => void this.pools.delete(pool) };
    },
    statement: (pool: string, seconds: number, ok: boolean) => {
      this.registerPostgres().observe({ pool, outcome: ok ? 'ok' : 'error' }, seconds);
    },
  };

  private registerPostgres(): Histogram<'pool' | 'outcome'> {
    if (this.postgresFamilies) return this.postgresFamilies;
    const registers = [this.registry];
    const pools = this.pools;
    /** Each pool's counts summed by name (two stores may share an application name). */
    const byName = () => {
      const sums = new Map<string, PoolCounts>();
      for (const { name, counts } of pools) {
        const now = counts();
        const sum = sums.get(name) ?? { total: 0, idle: 0, waiting: 0, max: 0 };
        sums.set(name, {
          total: sum.total + now.total,
          idle: sum.idle + now.idle,
          waiting: sum.waiting + now.waiting,
          max: sum.max + now.max,
        });
      }
      return sums;
    };
    new Gauge({
      name: 'wallet_ops_postgres_pool_connections',
      help:
        'Connections a PostgreSQL pool of this process holds open, by pool (its application_name in ' +
        'pg_stat_activity) and state: busy (checked out: a statement or transaction running) or idle.',
      labelNames: ['pool', 'state'],
      registers,
      collect() {
        this.reset();
        for (const [pool, counts] of byName()) {
          this.set({ pool, state: 'busy' }, counts.total - counts.idle);
          this.set({ pool, state: 'idle' }, counts.idle);
        }
      },
    });
    new Gauge({
      name: 'wallet_ops_postgres_pool_max_connections',
      help:
        'The most connections a PostgreSQL pool opens (POSTGRES_POOL_SIZE): busy connections at this value mean ' +
        'a saturated pool.',
      labelNames: ['pool'],
      registers,
      collect() {
        this.reset();
        for (const [pool, counts] of byName()) this.set({ pool }, counts.max);
      },
    });
    new Gauge({
      name: 'wallet_ops_postgres_pool_waiting',
      help:
        'Calls waiting for a connection of a PostgreSQL pool (all its connections busy); they fail after ' +
        'POSTGRES_STATEMENT_TIMEOUT_MS.',
      labelNames: ['pool'],
      registers,
      collect() {
        this.reset();
        for (const [pool, counts] of byName()) this.set({ pool }, counts.waiting);
      },
    });
    this.postgresFamilies = new Histogram({
      name: 'wallet_ops_postgres_statement_duration_seconds',
      help:
        'PostgreSQL statements (each statement of a transaction too), by pool and outcome (ok, or error: ' +
        'refused, timed out or connection lost): round trip from this process.',
      labelNames: ['pool', 'outcome'],
      buckets: LATENCY_BUCKETS,
      registers,
    });
    return this.postgresFamilies;
  }

  /** Operations assigned to the executor and not settled yet, read at scrape time (it is in memory). */
  watchExecutorQueue(depth: () => number): void {
    new Gauge({
      name: 'wallet_ops_executor_queue_depth',
      help:
        'Approved operations this executor holds and has not settled yet (running, or waiting for a retry or ' +
        "another executor's lease).",
      registers: [this.registry],
      collect() {
        this.set(depth());
      },
    });
  }

  /**
   * Every supervised consumer's lag, computed at scrape time as /ready does (src/health.ts consumerReports).
   * One computation per scrape serves both gauges; a consumer whose lag cannot be read is left out.
   */
  watchConsumers(reports: () => Promise<ConsumerLag[]>): void {
    const snapshot = this.bounded('consumers', reports);
    const registers = [this.registry];
    const lagEvents = new Gauge({
      name: 'wallet_ops_consumer_lag_events',
      help:
        'Events a consumer (projection:<name>, executor, key-revocations, api-key-directory, user-directory, ' +
        'sealer) has still to apply, counted up to 1000.',
      labelNames: ['consumer'],
      registers,
      async collect() {
        const current = await snapshot.get();
        this.reset();
        for (const report of current ?? [])
          if (report.lagEvents !== null) this.set({ consumer: report.name }, report.lagEvents);
      },
    });
    const lagSeconds = new Gauge({
      name: 'wallet_ops_consumer_lag_seconds',
      help: 'Age in seconds of the oldest event a consumer has still to apply; 0 when caught up.',
      labelNames: ['consumer'],
      registers,
      async collect() {
        const current = await snapshot.get();
        this.reset();
        for (const report of current ?? [])
          if (report.lagSeconds !== null) this.set({ consumer: report.name }, report.lagSeconds);
      },
    });
    const up = new Gauge({
      name: 'wallet_ops_consumer_up',
      help: '1 while a consumer runs, 0 while it is retrying after a failure.',
      labelNames: ['consumer'],
      registers,
      async collect() {
        const current = await snapshot.get();
        this.reset();
        for (const report of current ?? []) this.set({ consumer: report.name }, report.state === 'running' ? 1 : 0);
      },
    });
    void [lagEvents, lagSeconds, up];
  }

  /**
   * Rebuilds under way, read at scrape time from the read store's shadow checkpoints, so that a rebuild run
   * by the CLI (another process) shows in the server's metrics. Every projection named gets a 0 or a 1.
   */
  watchRebuilds(projections: readonly string[], inProgress: () => Promise<RebuildLag[]>): void {
    const snapshot = this.bounded('rebuilds', inProgress);
    const registers = [this.registry];
    new Gauge({
      name: 'wallet_ops_rebuild_in_progress',
      help:
        '1 while a rebuild of the projection has started and not been promoted (a 1 that stays: an interrupted ' +
        'rebuild; run it again).',
      labelNames: ['projection'],
      registers,
      async collect() {
        const current = await snapshot.get();
        this.reset();
        if (!current) return;
        for (const projection of projections)
          this.set({ projection }, current.some((r) => r.projection === projection) ? 1 : 0);
      },
    });
    new Gauge({
      name: 'wallet_ops_rebuild_progress_ratio',
      help: 'How far a rebuild under way has replayed the history: its position over the head of the store (0 to 1).',
      labelNames: ['projection'],
      registers,
      async collect() {
        const current = await snapshot.get();
        this.reset();
        for (const r of current ?? [])
          this.set({ projection: r.projection }, r.head > 0 ? Math.min(1, r.position / r.head) : 1);
      },
    });
  }

  /** A scrape-time source shared by the gauges of one family group, bounded and counted when it fails. */
  private bounded<T>(collector: string, load: () => Promise<T>): BoundedSnapshot<T> {
    const snapshot = new BoundedSnapshot(load, this.collectTimeoutMs, (reason) =>
      this.collectFailures.inc({ collector, reason }),
    );
    this.snapshots.push(snapshot);
    return snapshot;
  }
}

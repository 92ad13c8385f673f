import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openSqliteEventStore } from '../../src/adapters/sqlite/sqlite-event-store.ts';
import { runDecision } from '../../src/commands/pipeline.ts';
import { withEventStoreMetrics, withLedgerMetrics, WalletOpsMetrics } from '../../src/metrics/index.ts';
import type { EventStore } from '../../src/ports/event-store.ts';
import {
  LedgerDuplicateError,
  LedgerRejectedError,
  LedgerUnavailableError,
  LedgerVoidedError,
  type Ledger,
  type LedgerTransaction,
} from '../../src/ports/ledger.ts';
import { parsePrometheusText, sampleValue } from '../support/prometheus-text.ts';
import { tempDir } from '../support/temp-dir.ts';
import { openPostgresPool } from '../../src/adapters/postgres/postgres-pool.ts';
import { freshPostgresDatabase } from '../support/postgres-server.ts';

const scrape = async (metrics: WalletOpsMetrics) => parsePrometheusText(await metrics.scrape());

describe('metrics registry', () => {
  it('given two systems in one process, when one counts, then the other does not, and both scrapes carry the process metrics', async () => {
    const a = new WalletOpsMetrics();
    const b = new WalletOpsMetrics();
    a.createConflictRetries.inc(3);
    const [fromA, fromB] = [await scrape(a), await scrape(b)];
    expect(sampleValue(fromA, 'wallet_ops_create_conflict_retries_total')).toBe(3);
    expect(sampleValue(fromB, 'wallet_ops_create_conflict_retries_total')).toBe(0);
    for (const families of [fromA, fromB]) {
      expect(sampleValue(families, 'process_cpu_user_seconds_total')).toBeGreaterThanOrEqual(0);
      expect(sampleValue(families, 'nodejs_heap_size_used_bytes')).toBeGreaterThan(0);
    }
  });
});

describe("another thread's families (the followers thread)", () => {
  it("given a family both threads keep, when scraped, then it is one family with the samples summed by labels, and the other thread's own families are there", async () => {
    const main = new WalletOpsMetrics({ collectTimeoutMs: 200 });
    const followers = new WalletOpsMetrics();
    main.ledgerErrors.inc({ method: 'submit', kind: 'transient' }, 1);
    followers.ledgerErrors.inc({ method: 'submit', kind: 'transient' }, 2);
    followers.ledgerErrors.inc({ method: 'lookup', kind: 'transient' }, 5);
    followers.watchExecutorQueue(() => 3);
    main.scrapeAlso('followers-thread', () => followers.registry.getMetricsAsJSON());

    const text = await main.scrape();
    const families = parsePrometheusText(text);
    expect(text.match(/^# TYPE wallet_ops_ledger_errors_total counter$/gm)).toHaveLength(1);
    expect(sampleValue(families, 'wallet_ops_ledger_errors_total', { method: 'submit', kind: 'transient' })).toBe(3);
    expect(sampleValue(families, 'wallet_ops_ledger_errors_total', { method: 'lookup', kind: 'transient' })).toBe(5);
    expect(sampleValue(families, 'wallet_ops_executor_queue_depth')).toBe(3);
    expect(sampleValue(families, 'process_cpu_user_seconds_total')).toBeGreaterThanOrEqual(0);
  });

  it("given a thread that does not answer, when scraped, then the scrape answers after the bound with this thread's families and counts a timeout", async () => {
    const main = new WalletOpsMetrics({ collectTimeoutMs: 50 });
    main.createConflictRetries.inc(2);
    main.scrapeAlso('followers-thread', () => new Promise(() => {}));
    const families = await scrape(main);
    expect(sampleValue(families, 'wallet_ops_create_conflict_retries_total')).toBe(2);
    expect(
      sampleValue(families, 'wallet_ops_metrics_collect_failures_total', {
        collector: 'followers-thread',
        reason: 'timeout',
      }),
    ).toBe(1);
  });
});

describe('scrape-time collections are bounded', () => {
  it('given a consumer report that never comes, when scraped twice, then each scrape answers after the bound without the lag families, counts one timeout, and the store is asked once', async () => {
    const metrics = new WalletOpsMetrics({ collectTimeoutMs: 50 });
    let asked = 0;
    metrics.watchConsumers(() => {
      asked += 1;
      return new Promise(() => {}); // a hung store
    });
    metrics.watchExecutorQueue(() => 4);

    const first = await scrape(metrics);
    expect(first.get('wallet_ops_consumer_lag_events')?.samples).toEqual([]);
    expect(first.get('wallet_ops_consumer_lag_seconds')?.samples).toEqual([]);
    expect(first.get('wallet_ops_consumer_up')?.samples).toEqual([]);
    // What needs no store is still there.
    expect(sampleValue(first, 'wallet_ops_executor_queue_depth')).toBe(4);
    // One failure for the three gauges that shared the read.
    expect(
      sampleValue(first, 'wallet_ops_metrics_collect_failures_total', { collector: 'consumers', reason: 'timeout' }),
    ).toBe(1);

    const second = await scrape(metrics);
    expect(
      sampleValue(second, 'wallet_ops_metrics_collect_failures_total', { collector: 'consumers', reason: 'timeout' }),
    ).toBe(2);
    expect(asked).toBe(1);
  });

  it('given a consumer report that fails, when scraped, then the lag families are left out and the error is counted; the next scrape reads again', async () => {
    const metrics = new WalletOpsMetrics({ collectTimeoutMs: 1000 });
    let calls = 0;
    metrics.watchConsumers(async () => {
      calls += 1;
      if (calls === 1) throw new Error('store down');
      return [
        { name: 'projection:balances', state: 'running', lagEvents: 7, lagSeconds: 1.5 },
        { name: 'executor', state: 'retrying', lagEvents: null, lagSeconds: null },
      ];
    });
    const failed = await scrape(metrics);
    expect(failed.get('wallet_ops_consumer_lag_events')?.samples).toEqual([]);
    expect(
      sampleValue(failed, 'wallet_ops_metrics_collect_failures_total', { collector: 'consumers', reason: 'error' }),
    ).toBe(1);

    const read = await scrape(metrics);
    expect(sampleValue(read, 'wallet_ops_consumer_lag_events', { consumer: 'projection:balances' })).toBe(7);
    expect(sampleValue(read, 'wallet_ops_consumer_lag_seconds', { consumer: 'projection:balances' })).toBe(1.5);
    // A lag that could not be read is left out rather than reported as 0.
    expect(sampleValue(read, 'wallet_ops_consumer_lag_events', { consumer: 'executor' })).toBeUndefined();
    expect(sampleValue(read, 'wallet_ops_consumer_up', { consumer: 'executor' })).toBe(0);
    expect(sampleValue(read, 'wallet_ops_consumer_up', { consumer: 'projection:balances' })).toBe(1);
    expect(calls).toBe(2);
  });
});

describe('port decorators', () => {
  const dirs: Array<{ cleanup: () => void }> = [];
  const stores: EventStore[] = [];
  afterEach(async () => {
    await Promise.all(stores.splice(0).map((store) => store.close()));
    dirs.splice(0).forEach((dir) => dir.cleanup());
  });
  const embeddedStore = (onGroupCommit?: (requests: number) => void) => {
    const dir = tempDir('metrics-');
    dirs.push(dir);
    const store = openSqliteEventStore({
      file: join(dir.path, 'events.sqlite'),
      ...(onGroupCommit ? { onGroupCommit } : {}),
    });
    stores.push(store);
    return store;
  };

  it('given appends, when one conflicts, then each is timed with its outcome: ok or conflict', async () => {
    const metrics = new WalletOpsMetrics();
    const store = withEventStoreMetrics(embeddedStore(), metrics);
    await store.append('s-1', [{ type: 'T', data: {} }], 'no_stream');
    await expect(store.append('s-1', [{ type: 'T', data: {} }], 'no_stream')).rejects.toThrow(/expected revision/);
    await store.appendMulti([{ stream: 's-2', events: [{ type: 'T', data: {} }], expectedRevision: 'any' }]);
    const families = await scrape(metrics);
    expect(
      sampleValue(families, 'wallet_ops_event_store_append_duration_seconds_count', {
        method: 'append',
        outcome: 'ok',
      }),
    ).toBe(1);
    expect(
      sampleValue(families, 'wallet_ops_event_store_append_duration_seconds_count', {
        method: 'append',
        outcome: 'conflict',
      }),
    ).toBe(1);
    expect(
      sampleValue(families, 'wallet_ops_event_store_append_duration_seconds_count', {
        method: 'appendMulti',
        outcome: 'ok',
      }),
    ).toBe(1);
  });

  it('given five appends submitted in one turn of the event loop, when committed, then the group commit reports one batch of five', async () => {
    const batches: number[] = [];
    const store = embeddedStore((requests) => batches.push(requests));
    await Promise.all([1, 2, 3, 4, 5].map((i) => store.append(`s-${i}`, [{ type: 'T', data: { i } }], 'no_stream')));
    expect(batches).toEqual([5]);
    await store.append('s-6', [{ type: 'T', data: {} }], 'no_stream');
    expect(batches).toEqual([5, 1]);
  });

  it('given a ledger that fails in each way, when called, then every call is timed and each error counted by its kind', async () => {
    const tx: LedgerTransaction = {
      blockchainID: 'b'.repeat(64),
      sequenceNumber: 1,
      operationID: 'op_1',
      legs: [],
      createdAt: new Date(0).toISOString(),
    };
    const failures = [
      new LedgerRejectedError('insufficient funds'),
      new LedgerUnavailableError('timeout'),
      new LedgerDuplicateError(tx),
      new Error('bug'),
    ];
    const raw: Ledger = {
      submit: async () => {
        const failure = failures.shift();
        if (failure) throw failure;
        return tx;
      },
      void: async (operationID) => {
        const failure = failures.shift();
        if (failure) throw failure;
        return { kind: 'voided', operationID, voidedAt: new Date(0).toISOString() };
      },
      fateOf: async () => ({ kind: 'none' }),
      findByOperationID: async () => null,
      balance: async () => '0.00',
      transactions: async () => [],
      close: async () => {},
    };
    const metrics = new WalletOpsMetrics();
    const ledger = withLedgerMetrics(raw, metrics);
    for (let i = 0; i < 4; i++) await expect(ledger.submit({ operationID: 'op_1', legs: [] })).rejects.toThrow();
    expect(await ledger.submit({ operationID: 'op_1', legs: [] })).toBe(tx);
    expect(await ledger.findByOperationID('op_1')).toBeNull();
    failures.push(new LedgerVoidedError('op_1', new Date(0).toISOString()));
    await expect(ledger.submit({ operationID: 'op_1', legs: [] })).rejects.toThrow();
    expect(await ledger.void('op_1')).toMatchObject({ kind: 'voided' });
    expect(await ledger.fateOf('op_1')).toEqual({ kind: 'none' });

    const families = await scrape(metrics);
    for (const kind of ['rejected', 'unavailable', 'duplicate', 'other'])
      expect(sampleValue(families, 'wallet_ops_ledger_errors_total', { method: 'submit', kind }), kind).toBe(1);
    expect(
      sampleValue(families, 'wallet_ops_ledger_request_duration_seconds_count', { method: 'submit', outcome: 'error' }),
    ).toBe(5);
    expect(
      sampleValue(families, 'wallet_ops_ledger_request_duration_seconds_count', { method: 'submit', outcome: 'ok' }),
    ).toBe(1);
    expect(
      sampleValue(families, 'wallet_ops_ledger_request_duration_seconds_count', {
        method: 'findByOperationID',
        outcome: 'ok',
      }),
    ).toBe(1);
    expect(sampleValue(families, 'wallet_ops_ledger_errors_total', { method: 'submit', kind: 'voided' })).toBe(1);
    expect(
      sampleValue(families, 'wallet_ops_ledger_request_duration_seconds_count', { method: 'void', outcome: 'ok' }),
    ).toBe(1);
    expect(
      sampleValue(families, 'wallet_ops_ledger_request_duration_seconds_count', { method: 'fateOf', outcome: 'ok' }),
    ).toBe(1);
  });

  it("given another writer changes a stream between a decision's read and its append, when decided, then it is decided again and the retry reported once", async () => {
    const store = embeddedStore();
    const evolve = (n: number) => n + 1;
    let decisions = 0;
    const retries: string[] = [];
    const result = await runDecision(
      { store },
      {
        read: { counter: { stream: 'counter-1', evolve, initialState: () => 0 } },
        decide: ({ counter }) => {
          decisions += 1;
          // The first time, another writer gets there between this read and this append.
          if (decisions === 1) void store.append('counter-1', [{ type: 'Other', data: {} }], 'any');
          return {
            writes: [{ stream: 'counter-1', events: [{ type: 'Counted', data: { seen: counter } }] }],
            result: counter,
          };
        },
        context: { actor: 'operator:test', correlationId: 'test' },
        onConflictRetry: (conflict) => retries.push(conflict.stream),
      },
    );
    expect(decisions).toBe(2);
    expect(retries).toEqual(['counter-1']);
    expect(result).toBe(1);
  });
});

describe('PostgreSQL pools', () => {
  it("given a pool opened with the metrics as its observer, when statements succeed and fail and a connection is held, then the scrape shows each pool's busy, idle, waiting and max connections and times every statement by outcome; a closed pool leaves", async () => {
    const metrics = new WalletOpsMetrics();
    expect((await scrape(metrics)).has('wallet_ops_postgres_pool_connections')).toBe(false);
    const pool = openPostgresPool({
      url: await freshPostgresDatabase(),
      poolSize: 2,
      statementTimeoutMs: 5_000,
      applicationName: 'metrics test',
      observer: metrics.postgres,
    });
    let ended = false;
    try {
      await pool.query('SELECT 1');
      await expect(pool.query('SELECT * FROM no_such_table')).rejects.toThrow();
      const held = await pool.connect();
      await held.query('BEGIN');
      await held.query('SELECT 2');
      const second = await pool.connect();
      const waiting = pool.connect(); // none left: waits
      const families = await scrape(metrics);
      const pool_ = { pool: 'metrics test' };
      expect(sampleValue(families, 'wallet_ops_postgres_pool_max_connections', pool_)).toBe(2);
      expect(sampleValue(families, 'wallet_ops_postgres_pool_waiting', pool_)).toBe(1);
      expect(sampleValue(families, 'wallet_ops_postgres_pool_connections', { ...pool_, state: 'busy' })).toBe(2);
      expect(sampleValue(families, 'wallet_ops_postgres_pool_connections', { ...pool_, state: 'idle' })).toBe(0);
      expect(
        sampleValue(families, 'wallet_ops_postgres_statement_duration_seconds_count', { ...pool_, outcome: 'ok' }),
      ).toBe(3);
      expect(
        sampleValue(families, 'wallet_ops_postgres_statement_duration_seconds_count', { ...pool_, outcome: 'error' }),
      ).toBe(1);
      held.release();
      second.release();
      (await waiting).release();
      await pool.end();
      ended = true;
      expect(sampleValue(await scrape(metrics), 'wallet_ops_postgres_pool_max_connections', pool_)).toBeUndefined();
    } finally {
      if (!ended) await pool.end();
    }
  });
});

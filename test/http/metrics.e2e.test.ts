/**
 * /metrics end to end: the whole system on embedded stores, real traffic over HTTP (creates that succeed, one
 * refused by a rule, reads, an approval the executor carries out on the ledger), then a scrape parsed as the
 * Prometheus text format, with every family of docs/operations.md ("Metrics") found with the values the
 * traffic implies. Also: a rebuild under way shows in the server's scrape, METRICS_ENABLED=false serves none,
 * and METRICS_PORT serves the scrape on its own port and not on the API port.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allProjections } from '../../src/projections/index.ts';
import { rebuildProjection } from '../../src/projections/rebuild.ts';
import type { ReadStore } from '../../src/ports/read-store.ts';
import { loadConfig } from '../../src/config.ts';
import { approve, issue, waitUntilSettled } from '../support/executor-system.ts';
import { freePort, within } from '../support/processes.ts';
import { parsePrometheusText, sampleValue, type Family } from '../support/prometheus-text.ts';
import { call, startTestSystem, waitFor, type TestParty, type TestSystem } from '../support/system.ts';
import { tempDir } from '../support/temp-dir.ts';

const OPERATIONS_ROUTE = '/api/v1/distributors/:distributorID/operations';
const BALANCE_ROUTE = '/api/v1/distributors/:distributorID/balance';

async function scrape(baseUrl: string): Promise<{ families: Map<string, Family>; contentType: string | null }> {
  const response = await fetch(`${baseUrl}/metrics`);
  expect(response.status).toBe(200);
  return { families: parsePrometheusText(await response.text()), contentType: response.headers.get('content-type') };
}

const value = (families: Map<string, Family>, name: string, labels: Record<string, string> = {}) =>
  sampleValue(families, name, labels);

describe('GET /metrics after traffic', () => {
  let sys: TestSystem;
  let distributor: TestParty;
  let apiKey: string;
  const created: string[] = [];
  const phone = '+2348125000001';

  beforeAll(async () => {
    sys = await startTestSystem();
    distributor = await sys.party('distributor');
    ({ apiKey } = await distributor.key({ maxTransactionAmount: '100' }));
    await sys.individual(phone, 'Ada Obi');
    // Float through the ledger: issued, approved at once, carried out by the executor (claim 1, completion 1).
    await waitUntilSettled(sys, await issue(sys, distributor.ref, '1000'));

    const path = `/api/v1/distributors/${distributor.ref.id}/operations`;
    for (const amount of ['10', '20']) {
      const r = await call(sys.baseUrl, 'POST', path, {
        apiKey,
        body: { operationType: 'cash-in', amount, phoneTo: phone },
      });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      created.push(r.body.operationID as string);
    }
    // An idempotent create, then its repeat: created once, replayed once.
    for (let i = 0; i < 2; i++) {
      const r = await call(sys.baseUrl, 'POST', path, {
        apiKey,
        body: { operationType: 'cash-in', amount: '5', phoneTo: phone },
        headers: { 'idempotency-key': 'metrics-test-1' },
      });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.headers.get('idempotent-replayed')).toBe(i === 0 ? null : 'true');
    }
    const refused = await call(sys.baseUrl, 'POST', path, {
      apiKey,
      body: { operationType: 'cash-in', amount: '500', phoneTo: phone },
    });
    expect(refused.status).toBe(403);
    expect(refused.body.type).toBe('/problems/transaction-limit-exceeded');
    const invalid = await call(sys.baseUrl, 'POST', path, {
      apiKey,
      body: { operationType: 'cash-in', amount: 'ten', phoneTo: phone },
    });
    expect(invalid.status).toBe(400);
    for (let i = 0; i < 3; i++)
      expect(
        (await call(sys.baseUrl, 'GET', `/api/v1/distributors/${distributor.ref.id}/balance`, { apiKey })).status,
      ).toBe(200);
    // The checker approves one of them; the executor carries it out (claim 2, completion 2).
    await approve(sys, distributor, created[0]!);
    expect((await waitUntilSettled(sys, created[0]!)).status).toBe('completed');
  }, 60_000);
  afterAll(async () => sys?.close());

  it('when scraped, then the answer is the Prometheus text format, every sample in a declared family', async () => {
    const { families, contentType } = await scrape(sys.baseUrl);
    expect(contentType).toBe('text/plain; version=0.0.4; charset=utf-8');
    expect(families.size).toBeGreaterThan(20);
  });

  it('then creates are counted by outcome and problem type, exactly as many as were made, with no conflict retry', async () => {
    const { families } = await scrape(sys.baseUrl);
    expect(families.get('wallet_ops_creates_total')?.type).toBe('counter');
    expect(
      value(families, 'wallet_ops_creates_total', { party_type: 'distributor', outcome: 'created', problem_type: '' }),
    ).toBe(3);
    expect(
      value(families, 'wallet_ops_creates_total', { party_type: 'distributor', outcome: 'replayed', problem_type: '' }),
    ).toBe(1);
    expect(
      value(families, 'wallet_ops_creates_total', {
        party_type: 'distributor',
        outcome: 'refused',
        problem_type: '/problems/transaction-limit-exceeded',
      }),
    ).toBe(1);
    expect(
      value(families, 'wallet_ops_creates_total', {
        party_type: 'distributor',
        outcome: 'refused',
        problem_type: '/problems/input-validation-problems',
      }),
    ).toBe(1);
    expect(families.get('wallet_ops_creates_total')!.samples.reduce((sum, s) => sum + s.value, 0)).toBe(6);
    expect(value(families, 'wallet_ops_create_conflict_retries_total')).toBe(0);
  });

  it('then HTTP requests are counted and timed by method, route pattern and status, and no route label holds an id', async () => {
    const { families } = await scrape(sys.baseUrl);
    const http = families.get('wallet_ops_http_request_duration_seconds')!;
    expect(http.type).toBe('histogram');
    expect(
      value(families, 'wallet_ops_http_request_duration_seconds_count', {
        method: 'POST',
        route: OPERATIONS_ROUTE,
        status: '200',
      }),
    ).toBe(4);
    expect(
      value(families, 'wallet_ops_http_request_duration_seconds_count', {
        method: 'POST',
        route: OPERATIONS_ROUTE,
        status: '403',
      }),
    ).toBe(1);
    expect(
      value(families, 'wallet_ops_http_request_duration_seconds_count', {
        method: 'POST',
        route: OPERATIONS_ROUTE,
        status: '400',
      }),
    ).toBe(1);
    expect(
      value(families, 'wallet_ops_http_request_duration_seconds_count', {
        method: 'GET',
        route: BALANCE_ROUTE,
        status: '200',
      }),
    ).toBe(3);
    expect(
      value(families, 'wallet_ops_http_request_duration_seconds_sum', {
        method: 'GET',
        route: BALANCE_ROUTE,
        status: '200',
      }),
    ).toBeGreaterThan(0);
    const routes = new Set(http.samples.map((s) => s.labels.route!));
    for (const route of routes) {
      expect(route).not.toContain(distributor.ref.id);
      expect(route).not.toMatch(/[0-9a-f]{8}-[0-9a-f]{4}|op_[0-9a-f]{8}/);
      expect(route === 'unmatched' || route.startsWith('/'), route).toBe(true);
    }
    // The scrapes themselves are not counted (the test has scraped several times by now).
    expect([...routes].filter((route) => route.includes('metrics'))).toEqual([]);
  });

  it('when a URL matches no route, then it is counted as "unmatched", not under its raw path; a console page under its mount path and pattern', async () => {
    expect((await call(sys.baseUrl, 'GET', `/no/such/${distributor.ref.id}`)).status).toBe(404);
    expect((await fetch(`${sys.baseUrl}/console/login`)).status).toBe(200);
    // Answered by the console's own fallback, inside its router: counted under the mount path, not the URL.
    expect(
      (await fetch(`${sys.baseUrl}/console/operations/op_${'0'.repeat(32)}/nowhere`, { redirect: 'manual' })).status,
    ).toBeGreaterThanOrEqual(300);
    const { families } = await scrape(sys.baseUrl);
    expect(
      value(families, 'wallet_ops_http_request_duration_seconds_count', {
        method: 'GET',
        route: 'unmatched',
        status: '404',
      }),
    ).toBeGreaterThanOrEqual(1);
    expect(
      value(families, 'wallet_ops_http_request_duration_seconds_count', {
        method: 'GET',
        route: '/console/login',
        status: '200',
      }),
    ).toBe(1);
    const consoleRoutes = families
      .get('wallet_ops_http_request_duration_seconds')!
      .samples.map((s) => s.labels.route!)
      .filter((route) => route.startsWith('/console'));
    expect(consoleRoutes.filter((route) => route.includes('op_'))).toEqual([]);
    expect(consoleRoutes).toContain('/console/*');
  });

  it("then event-store appends are timed and the group commit's batch sizes observed", async () => {
    const { families } = await scrape(sys.baseUrl);
    expect(families.get('wallet_ops_event_store_append_duration_seconds')?.type).toBe('histogram');
    // Every create is one appendMulti (the operation, the hold, ...).
    expect(
      value(families, 'wallet_ops_event_store_append_duration_seconds_count', { method: 'appendMulti', outcome: 'ok' }),
    ).toBeGreaterThanOrEqual(2);
    const batches = value(families, 'wallet_ops_event_store_group_commit_batch_size_count')!;
    expect(batches).toBeGreaterThan(0);
    // Each batch holds at least one append.
    expect(value(families, 'wallet_ops_event_store_group_commit_batch_size_sum')).toBeGreaterThanOrEqual(batches);
  });

  it("then the executor's claims, completions, queue and ledger calls are counted: two operations carried out, nothing failed, nothing queued", async () => {
    // The counter moves just after the outcome is appended: wait for it rather than race it.
    await waitFor(
      async () => value((await scrape(sys.baseUrl)).families, 'wallet_ops_executor_completions_total') === 2,
    );
    const { families } = await scrape(sys.baseUrl);
    expect(value(families, 'wallet_ops_executor_claims_total', { attempt: 'first' })).toBe(2);
    expect(value(families, 'wallet_ops_executor_claims_total', { attempt: 'retry' })).toBeUndefined();
    expect(families.get('wallet_ops_executor_failures_total')?.samples).toEqual([]);
    expect(value(families, 'wallet_ops_executor_queue_depth')).toBe(0);
    expect(
      value(families, 'wallet_ops_ledger_request_duration_seconds_count', { method: 'submit', outcome: 'ok' }),
    ).toBe(2);
    expect(families.get('wallet_ops_ledger_errors_total')?.type).toBe('counter');
    expect(families.get('wallet_ops_ledger_errors_total')?.samples).toEqual([]);
  });

  it('then every consumer of the process reports its lag in events and seconds (>= 0) and that it runs', async () => {
    const { families } = await scrape(sys.baseUrl);
    const names = sys.system.consumers.map(({ consumer }) => consumer.name);
    expect(names).toEqual(expect.arrayContaining(['projection:balances', 'executor']));
    for (const consumer of names) {
      expect(value(families, 'wallet_ops_consumer_lag_events', { consumer }), consumer).toBeGreaterThanOrEqual(0);
      expect(value(families, 'wallet_ops_consumer_lag_seconds', { consumer }), consumer).toBeGreaterThanOrEqual(0);
      expect(value(families, 'wallet_ops_consumer_up', { consumer }), consumer).toBe(1);
    }
    expect(families.get('wallet_ops_metrics_collect_failures_total')?.samples).toEqual([]);
  });

  it('then no rebuild is under way, for every projection', async () => {
    const { families } = await scrape(sys.baseUrl);
    for (const projection of allProjections(2).map((p) => p.name))
      expect(value(families, 'wallet_ops_rebuild_in_progress', { projection }), projection).toBe(0);
    expect(families.get('wallet_ops_rebuild_progress_ratio')?.samples).toEqual([]);
  });

  it('then the process metrics of prom-client are there', async () => {
    const { families } = await scrape(sys.baseUrl);
    expect(value(families, 'process_cpu_user_seconds_total')).toBeGreaterThan(0);
    expect(
      value(families, 'process_resident_memory_bytes') ?? value(families, 'nodejs_heap_size_used_bytes'),
    ).toBeGreaterThan(0);
    expect(families.has('nodejs_eventloop_lag_seconds')).toBe(true);
    expect(families.has('nodejs_gc_duration_seconds')).toBe(true);
  });

  it('given a rebuild in another caller, when scraped before its promote, then it shows under way; after, no longer', async () => {
    let reachedPromote!: () => void;
    const atPromote = new Promise<void>((resolve) => (reachedPromote = resolve));
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    // The rebuild's read store waits at promote until the test has scraped (the rebuild is otherwise too quick to see).
    const readStore = new Proxy(sys.system.stores.readStore, {
      get(target, property, receiver) {
        if (property === 'promote') {
          return async (...args: Parameters<ReadStore['promote']>) => {
            reachedPromote();
            await released;
            return target.promote(...args);
          };
        }
        const member = Reflect.get(target, property, receiver);
        return typeof member === 'function' ? member.bind(target) : member;
      },
    });
    const balances = allProjections(2).find((p) => p.name === 'balances')!;
    const rebuilding = rebuildProjection({ eventStore: sys.system.stores.eventStore, readStore }, balances);
    await atPromote;

    const during = (await scrape(sys.baseUrl)).families;
    expect(value(during, 'wallet_ops_rebuild_in_progress', { projection: 'balances' })).toBe(1);
    expect(value(during, 'wallet_ops_rebuild_in_progress', { projection: 'merchant-payments' })).toBe(0);
    const ratio = value(during, 'wallet_ops_rebuild_progress_ratio', { projection: 'balances' })!;
    expect(ratio).toBeGreaterThan(0);
    expect(ratio).toBeLessThanOrEqual(1);

    release();
    await rebuilding;
    const after = (await scrape(sys.baseUrl)).families;
    expect(value(after, 'wallet_ops_rebuild_in_progress', { projection: 'balances' })).toBe(0);
    expect(after.get('wallet_ops_rebuild_progress_ratio')?.samples).toEqual([]);
  });
});

describe('METRICS_ENABLED=false', () => {
  it('when /metrics is asked for, then it is not served (404) and the system has no metrics', async () => {
    const sys = await startTestSystem({ METRICS_ENABLED: 'false' });
    try {
      expect((await fetch(`${sys.baseUrl}/metrics`)).status).toBe(404);
      expect(sys.system.metrics).toBeUndefined();
    } finally {
      await sys.close();
    }
  });
});

describe('metrics configuration', () => {
  it('when METRICS_PORT is the API port, or set while metrics are off, then the configuration is refused, naming it', () => {
    expect(() => loadConfig({ PORT: '3000', METRICS_PORT: '3000' })).toThrow(/METRICS_PORT: the same as PORT/);
    expect(() => loadConfig({ METRICS_PORT: '9464', METRICS_ENABLED: 'false' })).toThrow(
      /METRICS_PORT: set, but METRICS_ENABLED is false/,
    );
    expect(loadConfig({ METRICS_PORT: '9464' })).toMatchObject({ METRICS_PORT: 9464, METRICS_ENABLED: true });
    expect(loadConfig({}).METRICS_PORT).toBeUndefined();
  });
});

describe('METRICS_PORT: the scrape on a port of its own', () => {
  const MAIN = fileURLToPath(new URL('../../src/main.ts', import.meta.url));
  const ROOT = fileURLToPath(new URL('../../', import.meta.url));
  const dir = tempDir('metrics-port-');
  afterAll(() => dir.cleanup());

  it('given METRICS_PORT, when the server runs (npm start), then /metrics answers there and not on the API port, and the metrics port serves nothing else', async () => {
    const [port, metricsPort] = [await freePort(), await freePort()];
    const child = spawn(process.execPath, [MAIN], {
      cwd: ROOT,
      env: {
        ...process.env,
        DATA_DIR: dir.path,
        PORT: String(port),
        METRICS_PORT: String(metricsPort),
        HOST: '127.0.0.1',
        LOG_LEVEL: 'info',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    try {
      await within(
        new Promise<void>((resolve, reject) => {
          const seen = (chunk: Buffer) => {
            output += chunk.toString();
            if (output.includes('wallet-ops started')) resolve();
          };
          child.stdout.on('data', seen);
          child.stderr.on('data', seen);
          void exited.then((code) => reject(new Error(`exited ${code}: ${output}`)));
        }),
        30_000,
        'wallet-ops start',
      );
      expect(output).toContain(`"metricsPort":${metricsPort}`);

      const scraped = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
      expect(scraped.status).toBe(200);
      const families = parsePrometheusText(await scraped.text());
      expect(families.has('wallet_ops_http_request_duration_seconds')).toBe(true);
      expect(families.has('process_cpu_user_seconds_total')).toBe(true);

      expect((await fetch(`http://127.0.0.1:${port}/health`)).status).toBe(200);
      expect((await fetch(`http://127.0.0.1:${port}/metrics`)).status).toBe(404);
      expect((await fetch(`http://127.0.0.1:${metricsPort}/health`)).status).toBe(404);
      // The API's own requests are still counted, in the scrape served on the other port.
      const after = parsePrometheusText(await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text());
      expect(
        sampleValue(after, 'wallet_ops_http_request_duration_seconds_count', {
          method: 'GET',
          route: '/health',
          status: '200',
        }),
      ).toBe(1);
    } finally {
      child.kill('SIGTERM');
      expect(await within(exited, 15_000, 'wallet-ops shutdown')).toBe(0);
    }
  }, 60_000);
});

/**
 * The `monitoring` profile of docker-compose.yml without a Docker engine: Prometheus scrapes every wallet-ops
 * server of the file where it serves /metrics, Grafana is provisioned with that Prometheus and the dashboard,
 * and every query of the dashboard names metrics that wallet-ops (or prom-client's process metrics) exports,
 * so that a renamed metric breaks this test rather than a panel.
 */
import { ALL_PARTS } from '../../src/wallet-ops.ts';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { WalletOpsMetrics } from '../../src/metrics/index.ts';
import { parsePrometheusText } from '../support/prometheus-text.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

interface Service {
  build?: unknown;
  image?: string;
  command?: string[];
  environment?: Record<string, string | null>;
  profiles?: string[];
  volumes?: string[];
  depends_on?: Record<string, unknown>;
}
const compose = parse(readFileSync(`${ROOT}/docker-compose.yml`, 'utf8'), { merge: true }) as {
  services: Record<string, Service>;
};
const servers = Object.entries(compose.services).filter(
  ([, service]) => service.build !== undefined && service.command?.[2] === 'serve',
);
/** A service's environment as compose interpolates it: SECRETS_KEY from the host, `${NAME:-default}` as its default. */
const environmentOf = (service: Service) =>
  Object.fromEntries(
    Object.entries(service.environment ?? {}).map(([key, value]) => [
      key,
      key === 'SECRETS_KEY' ? '00'.repeat(32) : String(value ?? '').replace(/^\$\{\w+:-([^}]*)\}$/, '$1'),
    ]),
  );

/** Bind mounts of a service: host path (relative to the repository) to container path. */
const bindMounts = (service: Service) =>
  (service.volumes ?? [])
    .filter((volume) => volume.startsWith('./'))
    .map((volume) => {
      const [host, container] = volume.split(':');
      return { host: host!, container: container! };
    });

describe('monitoring profile', () => {
  const prometheus = compose.services.prometheus!;
  const grafana = compose.services.grafana!;

  it('then Prometheus and Grafana run only in the monitoring profile, and every file they mount exists', () => {
    for (const [name, service] of [
      ['prometheus', prometheus],
      ['grafana', grafana],
    ] as const) {
      expect(service.profiles, name).toEqual(['monitoring']);
      const mounts = bindMounts(service);
      expect(mounts.length, name).toBeGreaterThan(0);
      for (const mount of mounts)
        expect(existsSync(`${ROOT}/${mount.host}`), `${name} mounts ${mount.host}`).toBe(true);
    }
  });

  it('when Prometheus reads its configuration, then it scrapes each wallet-ops server at its METRICS_PORT, /metrics', () => {
    const mount = bindMounts(prometheus).find((m) => m.container === '/etc/prometheus/prometheus.yml')!;
    const config = parse(readFileSync(`${ROOT}/${mount.host}`, 'utf8')) as {
      scrape_configs: Array<{
        job_name: string;
        metrics_path?: string;
        static_configs: Array<{ targets: string[]; labels?: Record<string, string> }>;
      }>;
    };
    const job = config.scrape_configs.find((c) => c.job_name === 'wallet-ops')!;
    expect(job.metrics_path ?? '/metrics').toBe('/metrics');
    const targets = job.static_configs.flatMap((c) => c.targets.map((target) => ({ target, part: c.labels?.part })));
    expect(servers.length).toBe(ALL_PARTS.length);
    for (const [name, service] of servers) {
      const port = loadConfig(environmentOf(service)).METRICS_PORT;
      expect(targets, name).toContainEqual({ target: `${name}:${port}`, part: name });
    }
    expect(targets.length).toBe(servers.length);
  });

  it('when Grafana starts, then it is provisioned with that Prometheus (by the uid the dashboard names) and loads the dashboard', () => {
    const mounts = bindMounts(grafana);
    const provisioning = mounts.find((m) => m.container === '/etc/grafana/provisioning')!;
    const datasources = parse(readFileSync(`${ROOT}/${provisioning.host}/datasources/prometheus.yml`, 'utf8')) as {
      datasources: Array<{ uid: string; type: string; url: string }>;
    };
    const source = datasources.datasources[0]!;
    expect(source).toMatchObject({ type: 'prometheus', url: 'http://prometheus:9090' });
    const providers = parse(readFileSync(`${ROOT}/${provisioning.host}/dashboards/wallet-ops.yml`, 'utf8')) as {
      providers: Array<{ options: { path: string } }>;
    };
    const dashboardMount = mounts.find((m) => m.host.endsWith('wallet-ops-dashboard.json'))!;
    expect(dashboardMount.container.startsWith(`${providers.providers[0]!.options.path}/`)).toBe(true);

    const dashboard = JSON.parse(readFileSync(`${ROOT}/${dashboardMount.host}`, 'utf8')) as {
      panels: Array<{ type: string; datasource?: { uid: string }; targets?: Array<{ expr: string }> }>;
    };
    const charts = dashboard.panels.filter((panel) => panel.type !== 'row');
    expect(charts.length).toBeGreaterThanOrEqual(10);
    for (const panel of charts) expect(panel.datasource?.uid).toBe(source.uid);
    expect(Object.keys(grafana.depends_on ?? {})).toContain('prometheus');
  });

  it("when the dashboard's queries are read, then every metric they name is one wallet-ops exports, and each family of the issue is charted", async () => {
    const metrics = new WalletOpsMetrics();
    metrics.watchExecutorQueue(() => 0);
    metrics.watchConsumers(async () => []);
    metrics.watchRebuilds([], async () => []);
    // The PostgreSQL families exist once a pool opens.
    metrics.postgres.opened('wallet-ops events', () => ({ total: 0, idle: 0, waiting: 0, max: 1 }));
    const families = parsePrometheusText(await metrics.scrape());
    const exported = new Set<string>();
    for (const family of families.values()) {
      exported.add(family.name);
      if (family.type === 'histogram')
        for (const suffix of ['_bucket', '_sum', '_count']) exported.add(`${family.name}${suffix}`);
    }

    const dashboard = JSON.parse(readFileSync(`${ROOT}/deploy/grafana/wallet-ops-dashboard.json`, 'utf8')) as {
      panels: Array<{ targets?: Array<{ expr: string }> }>;
    };
    const queries = dashboard.panels.flatMap((panel) => panel.targets ?? []).map((target) => target.expr);
    const named = new Set(
      queries.flatMap((expr) => [...expr.matchAll(/\b((?:wallet_ops|process|nodejs)_[a-z0-9_]+)/g)].map((m) => m[1]!)),
    );
    expect([...named].filter((name) => !exported.has(name))).toEqual([]);
    for (const family of [
      'wallet_ops_creates_total',
      'wallet_ops_http_request_duration_seconds_bucket',
      'wallet_ops_consumer_lag_events',
      'wallet_ops_consumer_lag_seconds',
      'wallet_ops_executor_completions_total',
      'wallet_ops_executor_failures_total',
      'wallet_ops_ledger_request_duration_seconds_bucket',
      'wallet_ops_event_store_append_duration_seconds_bucket',
      'wallet_ops_event_store_group_commit_batch_size_bucket',
      'wallet_ops_rebuild_progress_ratio',
      'wallet_ops_postgres_pool_connections',
      'wallet_ops_postgres_pool_max_connections',
      'wallet_ops_postgres_pool_waiting',
      'wallet_ops_postgres_statement_duration_seconds_bucket',
      'wallet_ops_postgres_statement_duration_seconds_count',
    ])
      expect(named, family).toContain(family);
  });
});

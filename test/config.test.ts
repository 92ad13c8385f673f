import { randomBytes } from 'node:crypto';
import express from 'express';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, tracingEnabled } from '../src/config.ts';
import { hashPassword, setPasswordHashCost } from '../src/domain/passwords.ts';
import { TEST_HASH_COST } from './support/fast-passwords.ts';

/** The configuration keys of the console's login throttle and of the secrets key (the rest: store-selection, faults). */
const KEY = randomBytes(32);

function refusal(env: Record<string, string>): string {
  try {
    loadConfig(env);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  throw new Error('the configuration was accepted');
}

describe('SECRETS_KEY', () => {
  it('given 32 bytes in base64, base64url or hex, when loaded, then it is those bytes', () => {
    expect(loadConfig({ SECRETS_KEY: KEY.toString('base64') }).SECRETS_KEY).toEqual(KEY);
    expect(loadConfig({ SECRETS_KEY: KEY.toString('base64url') }).SECRETS_KEY).toEqual(KEY);
    expect(loadConfig({ SECRETS_KEY: KEY.toString('hex') }).SECRETS_KEY).toEqual(KEY);
  });

  it('given no SECRETS_KEY with the embedded stores, when loaded, then it is unset (the data directory keeps a key)', () => {
    expect(loadConfig({}).SECRETS_KEY).toBeUndefined();
    expect(loadConfig({ SECRETS_KEY: '' }).SECRETS_KEY).toBeUndefined();
  });

  it('given a value that is not 32 bytes, when loaded, then it is refused without repeating the value', () => {
    for (const value of [
      randomBytes(16).toString('base64'),
      randomBytes(33).toString('hex'),
      'correct horse battery staple correct horse b',
      `${KEY.toString('hex').slice(0, 63)}g`,
    ]) {
      const message = refusal({ SECRETS_KEY: value });
      expect(message).toMatch(/SECRETS_KEY: 32 random bytes/);
      expect(message).not.toContain(value);
    }
  });

  it('given a server store without SECRETS_KEY, when loaded, then it is refused and says why; with it, it loads', () => {
    expect(refusal({ MONGODB_URL: 'mongodb://mongodb:27017/?replicaSet=rs0' })).toMatch(
      /SECRETS_KEY: required when a store is a server/,
    );
    expect(refusal({ KURRENTDB_URL: 'kurrentdb://kurrentdb:2113?tls=false', READ_STORE: 'embedded' })).toMatch(
      /SECRETS_KEY: required/,
    );
    expect(
      loadConfig({ MONGODB_URL: 'mongodb://mongodb:27017/?replicaSet=rs0', SECRETS_KEY: KEY.toString('base64') })
        .SECRETS_KEY,
    ).toEqual(KEY);
  });

  it('given PostgreSQL for either store without SECRETS_KEY, when loaded, then it is refused as for the other server stores', () => {
    const POSTGRES_URL = 'postgres://wallet:pw@db:5432/wallet_ops';
    expect(refusal({ POSTGRES_URL })).toMatch(/SECRETS_KEY: required when a store is a server/);
    expect(refusal({ POSTGRES_URL, EVENT_STORE: 'embedded' })).toMatch(/SECRETS_KEY: required/);
    expect(refusal({ POSTGRES_URL, READ_STORE: 'embedded' })).toMatch(/SECRETS_KEY: required/);
    expect(loadConfig({ POSTGRES_URL, EVENT_STORE: 'embedded', READ_STORE: 'embedded' }).SECRETS_KEY).toBeUndefined();
  });
});

describe('POSTGRES_READ_URL', () => {
  const base = { POSTGRES_URL: 'postgres://wallet:pw@db1:5432/wallet_ops', SECRETS_KEY: KEY.toString('base64') };

  it('given one standby or a comma-separated list with the PostgreSQL read store, when loaded, then it is kept as given', () => {
    const one = 'postgres://wallet:pw@db2:5432/wallet_ops';
    expect(loadConfig({ ...base, POSTGRES_READ_URL: one }).POSTGRES_READ_URL).toBe(one);
    const two = 'postgres://wallet:pw@db2:5432/wallet_ops, postgresql://wallet:pw@db3:5432/wallet_ops';
    expect(loadConfig({ ...base, POSTGRES_READ_URL: two }).POSTGRES_READ_URL).toBe(two);
  });

  it('given read replicas without the PostgreSQL read store, or not a URL, when loaded, then it is refused and says why', () => {
    const embeddedReads = refusal({ ...base, READ_STORE: 'embedded', POSTGRES_READ_URL: 'postgres://db2/wallet_ops' });
    expect(embeddedReads).toMatch(/POSTGRES_READ_URL: read replicas need READ_STORE=postgres/);
    expect(refusal({ ...base, POSTGRES_READ_URL: 'db2:5432' })).toMatch(/POSTGRES_READ_URL/);
    expect(refusal({ ...base, POSTGRES_READ_URL: 'postgres://db2/w,' })).toMatch(/POSTGRES_READ_URL/);
  });
});

describe('TRUST_PROXY', () => {
  /** Express compiles the setting when it is set: what throws here would crash the start with a stack trace. */
  const expressTakes = (value: false | number | string[]) => express().set('trust proxy', value);

  it.each(['6', '10', '99', '1000', '4294967296'])(
    'given a hop count above 5 (%s), when loaded, then it is refused naming the variable and the limit',
    (value) => {
      expect(refusal({ TRUST_PROXY: value })).toMatch(/TRUST_PROXY: a hop count above 5 .*number of proxies in front/);
    },
  );

  it('given a hop count from 0 to 5, when loaded, then it is that number', () => {
    for (let hops = 0; hops <= 5; hops++) expect(loadConfig({ TRUST_PROXY: String(hops) }).TRUST_PROXY).toBe(hops);
  });

  it.each([
    ['0.0.0.0/0,::/0'],
    ['::/0'],
    ['0.0.0.0/0'],
    ['0.0.0.0/1, 128.0.0.0/1'],
    ['10.0.0.0/7'],
    ['2001::/31'],
    ['127.0.0.1, ::/1'],
    ['::ffff:0.0.0.0/96'],
    ['::ffff:10.0.0.0/103'],
  ])(
    'given a range wider than /8 (IPv4) or /32 (IPv6) in %s, when loaded, then it is refused naming the variable and the range',
    (value) => {
      expect(refusal({ TRUST_PROXY: value })).toMatch(/TRUST_PROXY: ".*" is wider than \/8 \(IPv4\) or \/32 \(IPv6\)/);
    },
  );

  it.each([
    ['10.0.0.0/8', ['10.0.0.0/8']],
    ['2001:db8::/32', ['2001:db8::/32']],
    ['::ffff:10.0.0.0/104', ['10.0.0.0/8']],
    ['::ffff:127.0.0.1, ::1', ['127.0.0.1', '::1']],
    ['0.0.0.0/8', ['0.0.0.0/8']],
    ['::/32', ['::/32']],
  ])('given the narrowest allowed ranges (%s), when loaded, then they are accepted', (value, ranges) => {
    expect(loadConfig({ TRUST_PROXY: value }).TRUST_PROXY).toEqual(ranges);
  });

  it.each(['10.1', '167837955', '0x0a000001', '010.0.0.1', 'fe80::1%eth0'])(
    'given a proxy address in a lenient spelling (%s), when loaded, then it is refused',
    (value) => {
      expect(refusal({ TRUST_PROXY: value })).toMatch(/TRUST_PROXY/);
    },
  );

  it('given any value it accepts, when express compiles it, then it does not throw', () => {
    const accepted = [
      'false',
      '',
      '0',
      '1',
      '5',
      '127.0.0.1',
      '::1',
      '::ffff:127.0.0.1',
      '10.0.0.0/8',
      '2001:db8::/32',
      '::/32',
      '0.0.0.0/8',
      '::ffff:10.0.0.0/104',
      '192.0.2.0/24, 2001:db8:1::/48',
    ];
    // And random ranges of every accepted width.
    for (let i = 0; i < 300; i++) {
      const v4 = Array.from({ length: 4 }, () => Math.floor(Math.random() * 256)).join('.');
      const v6 = Array.from({ length: 8 }, () => Math.floor(Math.random() * 0x10000).toString(16)).join(':');
      accepted.push(`${v4}/${8 + (i % 25)}`, `${v6}/${32 + (i % 97)}`, `::ffff:${v4}/${104 + (i % 25)}`);
    }
    for (const value of accepted) {
      const config = loadConfig({ TRUST_PROXY: value });
      expect(() => expressTakes(config.TRUST_PROXY), value).not.toThrow();
    }
  });
});

describe('login limits', () => {
  it('given nothing, when loaded, then 5 attempts per email, 20 per address and a 15-minute lockout', () => {
    expect(loadConfig({})).toMatchObject({
      LOGIN_ATTEMPTS_PER_EMAIL: 5,
      LOGIN_ATTEMPTS_PER_ADDRESS: 20,
      LOGIN_LOCKOUT_MS: 900_000,
    });
  });

  it('given values, when loaded, then they are used; zero attempts or a lockout under a second are refused', () => {
    expect(
      loadConfig({ LOGIN_ATTEMPTS_PER_EMAIL: '3', LOGIN_ATTEMPTS_PER_ADDRESS: '50', LOGIN_LOCKOUT_MS: '3600000' }),
    ).toMatchObject({ LOGIN_ATTEMPTS_PER_EMAIL: 3, LOGIN_ATTEMPTS_PER_ADDRESS: 50, LOGIN_LOCKOUT_MS: 3_600_000 });
    expect(refusal({ LOGIN_ATTEMPTS_PER_EMAIL: '0' })).toMatch(/LOGIN_ATTEMPTS_PER_EMAIL/);
    expect(refusal({ LOGIN_LOCKOUT_MS: '10' })).toMatch(/LOGIN_LOCKOUT_MS/);
  });
});

describe('PASSWORD_HASH_COST', () => {
  afterEach(() => setPasswordHashCost(TEST_HASH_COST));
  const costOfNewHashes = async () => (await hashPassword('a password of ours')).split('$')[1];

  it('given a cost of 14 to 20, when loaded anywhere, then new hashes use it; above 20, it is refused', async () => {
    expect(loadConfig({ PASSWORD_HASH_COST: '14', NODE_ENV: 'production' }).PASSWORD_HASH_COST).toBe(14);
    expect(await costOfNewHashes()).toBe(String(2 ** 14));
    expect(refusal({ PASSWORD_HASH_COST: '21' })).toMatch(/PASSWORD_HASH_COST/);
  });

  it('given a cost below 14, when loaded outside a test run (NODE_ENV unset or production), then it is refused and the cost of new hashes is unchanged', async () => {
    expect(refusal({ PASSWORD_HASH_COST: '10' })).toMatch(/PASSWORD_HASH_COST: at least 14 .*NODE_ENV=test/);
    expect(refusal({ PASSWORD_HASH_COST: '13', NODE_ENV: 'production' })).toMatch(/PASSWORD_HASH_COST: at least 14/);
    expect(await costOfNewHashes()).toBe(String(2 ** TEST_HASH_COST));
  });

  it('given a cost of 10 to 13 in a test run (NODE_ENV=test), when loaded, then new hashes use it; below 10, it is refused even there', async () => {
    expect(loadConfig({ PASSWORD_HASH_COST: '11', NODE_ENV: 'test' }).PASSWORD_HASH_COST).toBe(11);
    expect(await costOfNewHashes()).toBe(String(2 ** 11));
    expect(refusal({ PASSWORD_HASH_COST: '9', NODE_ENV: 'test' })).toMatch(/PASSWORD_HASH_COST/);
  });
});

describe('KEY_EXPIRY_SWEEP_INTERVAL_MS', () => {
  it('given nothing, when loaded, then the expired-key sweep runs every minute; given a value, then that; under 100 ms, then it is refused', () => {
    expect(loadConfig({})).toMatchObject({ KEY_EXPIRY_SWEEP_INTERVAL_MS: 60_000 });
    expect(loadConfig({ KEY_EXPIRY_SWEEP_INTERVAL_MS: '5000' })).toMatchObject({ KEY_EXPIRY_SWEEP_INTERVAL_MS: 5000 });
    expect(refusal({ KEY_EXPIRY_SWEEP_INTERVAL_MS: '99' })).toMatch(/KEY_EXPIRY_SWEEP_INTERVAL_MS/);
  });
});

describe('WEBHOOK_ALLOW_INSECURE_LOCALHOST', () => {
  it('given nothing, when loaded, then http webhook endpoints are not allowed; given true, they are on the loopback host', () => {
    expect(loadConfig({}).WEBHOOK_ALLOW_INSECURE_LOCALHOST).toBe(false);
    expect(loadConfig({ WEBHOOK_ALLOW_INSECURE_LOCALHOST: 'true' }).WEBHOOK_ALLOW_INSECURE_LOCALHOST).toBe(true);
  });

  it('given a value other than true or false, when loaded, then it is refused naming the variable', () => {
    expect(refusal({ WEBHOOK_ALLOW_INSECURE_LOCALHOST: 'yes' })).toMatch(/WEBHOOK_ALLOW_INSECURE_LOCALHOST/);
  });
});

describe('CASH_OUT_CONSENT', () => {
  it("given nothing, when loaded, then it is none (the contract's rule); given individual-code, it is that", () => {
    expect(loadConfig({}).CASH_OUT_CONSENT).toBe('none');
    expect(loadConfig({ CASH_OUT_CONSENT: 'individual-code' }).CASH_OUT_CONSENT).toBe('individual-code');
  });

  it('given another value, when loaded, then it is refused naming the variable', () => {
    expect(refusal({ CASH_OUT_CONSENT: 'yes' })).toMatch(/CASH_OUT_CONSENT: .*(none|individual-code)/);
  });
});

describe('SECRET_ROTATION_OVERLAP_HOURS', () => {
  it('given nothing, when loaded, then the previous secret works 24 hours; given 0 or 1.5, then that', () => {
    expect(loadConfig({}).SECRET_ROTATION_OVERLAP_HOURS).toBe(24);
    expect(loadConfig({ SECRET_ROTATION_OVERLAP_HOURS: '0' }).SECRET_ROTATION_OVERLAP_HOURS).toBe(0);
    expect(loadConfig({ SECRET_ROTATION_OVERLAP_HOURS: '1.5' }).SECRET_ROTATION_OVERLAP_HOURS).toBe(1.5);
  });

  it('given more than a week, a negative number or text, when loaded, then it is refused naming the variable', () => {
    for (const value of ['169', '-1', 'a day'])
      expect(refusal({ SECRET_ROTATION_OVERLAP_HOURS: value })).toMatch(/SECRET_ROTATION_OVERLAP_HOURS/);
  });
});

describe('CONSUMER_RETRY_BASE_MS and CONSUMER_RETRY_MAX_MS', () => {
  it('given nothing, then a failed consumer waits 100 ms at first and 10 s at most; given both, then they are taken; given a maximum below the base, then the configuration is refused', () => {
    expect(loadConfig({})).toMatchObject({ CONSUMER_RETRY_BASE_MS: 100, CONSUMER_RETRY_MAX_MS: 10_000 });
    expect(loadConfig({ CONSUMER_RETRY_BASE_MS: '10', CONSUMER_RETRY_MAX_MS: '200' })).toMatchObject({
      CONSUMER_RETRY_BASE_MS: 10,
      CONSUMER_RETRY_MAX_MS: 200,
    });
    expect(() => loadConfig({ CONSUMER_RETRY_BASE_MS: '500', CONSUMER_RETRY_MAX_MS: '100' })).toThrow(
      /CONSUMER_RETRY_MAX_MS: must be at least CONSUMER_RETRY_BASE_MS/,
    );
    expect(() => loadConfig({ CONSUMER_RETRY_BASE_MS: '0' })).toThrow(/CONSUMER_RETRY_BASE_MS/);
  });
});

describe('EXECUTOR_RETRY_BASE_MS and EXECUTOR_RETRY_MAX_MS', () => {
  it('given nothing, when loaded, then a failed attempt is retried after 100 ms at first, and never after more than 5 s', () => {
    expect(loadConfig({})).toMatchObject({ EXECUTOR_RETRY_BASE_MS: 100, EXECUTOR_RETRY_MAX_MS: 5_000 });
  });

  it('given values, when loaded, then they are used; a maximum under the base, or a base of 0, is refused naming the variable', () => {
    expect(loadConfig({ EXECUTOR_RETRY_BASE_MS: '10', EXECUTOR_RETRY_MAX_MS: '50' })).toMatchObject({
      EXECUTOR_RETRY_BASE_MS: 10,
      EXECUTOR_RETRY_MAX_MS: 50,
    });
    expect(() => loadConfig({ EXECUTOR_RETRY_BASE_MS: '200', EXECUTOR_RETRY_MAX_MS: '100' })).toThrow(
      /EXECUTOR_RETRY_MAX_MS: must be at least EXECUTOR_RETRY_BASE_MS/,
    );
    expect(() => loadConfig({ EXECUTOR_RETRY_BASE_MS: '0' })).toThrow(/EXECUTOR_RETRY_BASE_MS/);
  });
});

describe('tracing (OTEL_*)', () => {
  const traced = (env: Record<string, string>) => tracingEnabled(loadConfig(env));

  it('given no OTEL_ variable, when loaded, then tracing is off', () => {
    expect(traced({})).toBe(false);
    expect(traced({ OTEL_SERVICE_NAME: 'wallet-ops-api' })).toBe(false);
  });

  it('given an exporter or an OTLP endpoint, when loaded, then tracing is on, unless the SDK is disabled or the exporter is none', () => {
    expect(traced({ OTEL_TRACES_EXPORTER: 'otlp' })).toBe(true);
    expect(traced({ OTEL_TRACES_EXPORTER: 'console' })).toBe(true);
    expect(traced({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://jaeger:4318' })).toBe(true);
    expect(traced({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://jaeger:4318/v1/traces' })).toBe(true);
    expect(traced({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://jaeger:4318', OTEL_SDK_DISABLED: 'true' })).toBe(false);
    expect(traced({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://jaeger:4318', OTEL_TRACES_EXPORTER: 'none' })).toBe(false);
  });

  it('given an unknown exporter, an endpoint that is not a URL or a bad OTEL_SDK_DISABLED, when loaded, then it is refused naming the variable', () => {
    expect(refusal({ OTEL_TRACES_EXPORTER: 'jaeger' })).toMatch(/OTEL_TRACES_EXPORTER/);
    expect(refusal({ OTEL_EXPORTER_OTLP_ENDPOINT: 'jaeger:4318' })).toMatch(/OTEL_EXPORTER_OTLP_ENDPOINT/);
    expect(refusal({ OTEL_SDK_DISABLED: 'yes' })).toMatch(/OTEL_SDK_DISABLED/);
  });
});

describe('CREATE_DEADLINE_MS', () => {
  const key = Buffer.alloc(32, 1).toString('base64');
  it("given nothing, when loaded, then the event store's bound on one call plus 5 s: the busy budget embedded, the statement timeout on PostgreSQL", () => {
    expect(loadConfig({}).CREATE_DEADLINE_MS).toBe(15_000);
    expect(loadConfig({ STORE_BUSY_BUDGET_MS: '2000' }).CREATE_DEADLINE_MS).toBe(7_000);
    expect(
      loadConfig({ POSTGRES_URL: 'postgres://u:p@db/w', SECRETS_KEY: key, POSTGRES_STATEMENT_TIMEOUT_MS: '3000' })
        .CREATE_DEADLINE_MS,
    ).toBe(8_000);
  });

  it('given a value, when loaded, then that value; below 100 ms it is refused', () => {
    expect(loadConfig({ CREATE_DEADLINE_MS: '4000' }).CREATE_DEADLINE_MS).toBe(4_000);
    expect(() => loadConfig({ CREATE_DEADLINE_MS: '50' })).toThrow(/CREATE_DEADLINE_MS/);
  });
});

import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.ts';

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
    for (const value of [randomBytes(16).toString('base64'), randomBytes(33).toString('hex'), 'correct horse battery staple correct horse b', `${KEY.toString('hex').slice(0, 63)}g`]) {
      const message = refusal({ SECRETS_KEY: value });
      expect(message).toMatch(/SECRETS_KEY: 32 random bytes/);
      expect(message).not.toContain(value);
    }
  });

  it('given a server store without SECRETS_KEY, when loaded, then it is refused and says why; with it, it loads', () => {
    expect(refusal({ MONGODB_URL: 'mongodb://mongodb:27017/?replicaSet=rs0' })).toMatch(/SECRETS_KEY: required when a store is a server/);
    expect(refusal({ KURRENTDB_URL: 'kurrentdb://kurrentdb:2113?tls=false', READ_STORE: 'embedded' })).toMatch(/SECRETS_KEY: required/);
    expect(loadConfig({ MONGODB_URL: 'mongodb://mongodb:27017/?replicaSet=rs0', SECRETS_KEY: KEY.toString('base64') }).SECRETS_KEY).toEqual(KEY);
  });
});

describe('login limits', () => {
  it('given nothing, when loaded, then 5 attempts per email, 20 per address and a 15-minute lockout', () => {
    expect(loadConfig({})).toMatchObject({ LOGIN_ATTEMPTS_PER_EMAIL: 5, LOGIN_ATTEMPTS_PER_ADDRESS: 20, LOGIN_LOCKOUT_MS: 900_000 });
  });

  it('given values, when loaded, then they are used; zero attempts or a lockout under a second are refused', () => {
    expect(loadConfig({ LOGIN_ATTEMPTS_PER_EMAIL: '3', LOGIN_ATTEMPTS_PER_ADDRESS: '50', LOGIN_LOCKOUT_MS: '3600000' })).toMatchObject({ LOGIN_ATTEMPTS_PER_EMAIL: 3, LOGIN_ATTEMPTS_PER_ADDRESS: 50, LOGIN_LOCKOUT_MS: 3_600_000 });
    expect(refusal({ LOGIN_ATTEMPTS_PER_EMAIL: '0' })).toMatch(/LOGIN_ATTEMPTS_PER_EMAIL/);
    expect(refusal({ LOGIN_LOCKOUT_MS: '10' })).toMatch(/LOGIN_LOCKOUT_MS/);
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

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { API_KEY_PATTERN } from '../../src/domain/api-key-secrets.ts';
import { call, startTestSystem, WITHOUT_EXECUTOR, type TestParty, type TestSystem } from '../support/system.ts';

/**
 * Key secrets carry a fixed prefix that tells a live key from a sandbox's and that secret scanners match
 * (`wo_live_` / `wo_test_`, API_KEY_ENVIRONMENT). The prefix is a label: keys issued before it, bare
 * `<keyID>.<secret>`, keep working, and the secret is what is checked.
 */
let sys: TestSystem;
let distributor: TestParty;

beforeAll(async () => {
  sys = await startTestSystem({ API_KEY_ENVIRONMENT: 'test' }, undefined, WITHOUT_EXECUTOR);
  distributor = await sys.party('distributor');
});
afterAll(async () => sys?.close());

const balance = (apiKey: string) =>
  call(sys.baseUrl, 'GET', `/api/v1/distributors/${distributor.ref.id}/balance`, { apiKey });

describe('the API key prefix', () => {
  it('when nothing is configured, then the deployment issues live keys; API_KEY_ENVIRONMENT=test, test keys; anything else is refused', () => {
    expect(loadConfig({}).API_KEY_ENVIRONMENT).toBe('live');
    expect(loadConfig({ API_KEY_ENVIRONMENT: 'test' }).API_KEY_ENVIRONMENT).toBe('test');
    expect(() => loadConfig({ API_KEY_ENVIRONMENT: 'sandbox' })).toThrow(/API_KEY_ENVIRONMENT/);
  });

  it('when a sandbox issues a key, then it is wo_test_<keyID>.<secret>, matched by the scanner pattern, and it authenticates', async () => {
    const { keyID, apiKey } = await distributor.key();
    expect(apiKey.startsWith(`wo_test_${keyID}.`)).toBe(true);
    expect(apiKey).toMatch(new RegExp(`^${API_KEY_PATTERN.source}$`));
    expect((await balance(apiKey)).status).toBe(200);
  });

  it('when a key is sent as issued before the prefix (bare keyID.secret), then it still authenticates; with a wrong secret, under either form, 401', async () => {
    const { apiKey } = await distributor.key();
    const bare = apiKey.slice('wo_test_'.length);
    expect((await balance(bare)).status).toBe(200);
    const wrong = `${apiKey.slice(0, -1)}${apiKey.endsWith('A') ? 'B' : 'A'}`;
    expect((await balance(wrong)).status).toBe(401);
    expect((await balance(wrong.slice('wo_test_'.length))).status).toBe(401);
    expect((await balance(`wo_prod_${bare}`)).status).toBe(401);
  });
});

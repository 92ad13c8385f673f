import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.ts';
import { KEY_USAGE_COLLECTION, KeyUsageRecorder, keyUsage } from '../../src/http/key-usage.ts';
import { ConsoleClient, CHECKER_PASSWORD } from '../console/console-client.ts';
import { call, startTestSystem, waitFor, type TestSystem } from '../support/system.ts';

describe('API key usage', () => {
  let sys: TestSystem;
  beforeAll(async () => {
    sys = await startTestSystem();
  });
  afterAll(async () => sys?.close());

  it('when a key makes requests, then its count and last use reach the read store within a few seconds, and refused requests do not count', async () => {
    const distributor = await sys.party('distributor');
    const { apiKey, keyID } = await distributor.key();
    const before = Date.now();
    for (let i = 0; i < 3; i++)
      expect(
        (await call(sys.baseUrl, 'GET', `/api/v1/distributors/${distributor.ref.id}/balance`, { apiKey })).status,
      ).toBe(200);
    expect(
      (
        await call(sys.baseUrl, 'GET', `/api/v1/distributors/${distributor.ref.id}/balance`, {
          apiKey: `${keyID}.${'x'.repeat(43)}`,
        })
      ).status,
    ).toBe(401);
    await waitFor(async () => (await keyUsage(sys.system.stores.readStore, keyID)).count === 3, 5000);
    const usage = await keyUsage(sys.system.stores.readStore, keyID);
    expect(Date.parse(usage.lastUsedAt!)).toBeGreaterThanOrEqual(before - 1000);
  });

  it('when two processes record the same key, then the usage is their sum and the latest use', async () => {
    const logger = createLogger('silent');
    const store = sys.system.stores.readStore;
    await store.defineCollections([KEY_USAGE_COLLECTION]);
    const a = new KeyUsageRecorder(store, logger, 60_000);
    const b = new KeyUsageRecorder(store, logger, 60_000);
    a.record('key_TWOPROCESSES0000', new Date('2026-01-01T00:00:00Z'));
    a.record('key_TWOPROCESSES0000', new Date('2026-01-01T00:00:05Z'));
    b.record('key_TWOPROCESSES0000', new Date('2026-01-01T00:00:03Z'));
    await Promise.all([a.close(), b.close()]);
    expect(await keyUsage(store, 'key_TWOPROCESSES0000')).toEqual({ count: 3, lastUsedAt: '2026-01-01T00:00:05.000Z' });
  });

  it('when a checker opens the Active keys tab, then each key shows how often and when it was last used', async () => {
    const distributor = await sys.party('distributor');
    const { apiKey, keyID } = await distributor.key();
    for (let i = 0; i < 2; i++)
      await call(sys.baseUrl, 'GET', `/api/v1/distributors/${distributor.ref.id}/balance`, { apiKey });
    await waitFor(async () => (await keyUsage(sys.system.stores.readStore, keyID)).count === 2, 5000);
    const browser = new ConsoleClient(sys.baseUrl);
    await browser.login(distributor.checkerEmail, CHECKER_PASSWORD);
    const page = await browser.get('/console/keys?tab=active');
    const row = page.text.slice(page.text.indexOf(`data-key-id="${keyID}"`));
    expect(row).toMatch(/<td class="usage">2 requests<br><span class="muted">last /);
  });
});

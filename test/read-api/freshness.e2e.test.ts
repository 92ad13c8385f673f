/**
 * Reads never lie: a read model with no checkpoint while events it shows exist, or one more than
 * READ_MAX_LAG_EVENTS behind, answers 503 with Retry-After instead of a balance of 0.00 or a past state.
 * The system runs the write and read APIs without the projections (as compose runs read-api apart from
 * projections), so the test decides when a read model in the store is built: `rebuildProjections`, as the CLI does.
 * The balance is answered from the read API's own view (src/read-api/balances-view.ts), judged on its own position:
 * its seed from the read store is held back here until the test lets it go.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { embedded, openStores } from '../../src/adapters/open-stores.ts';
import { streams } from '../../src/domain/streams.ts';
import type { ReadStore } from '../../src/ports/read-store.ts';
import { balancesProjection } from '../../src/projections/balances.ts';
import { rebuildProjections } from '../../src/projections/rebuild.ts';
import { ReadFreshness } from '../../src/read-api/freshness.ts';
import { call, startTestSystem, waitFor, type TestParty, type TestSystem } from '../support/system.ts';
import { tempDir } from '../support/temp-dir.ts';

const MAX_LAG = 50;

/** The read store, with the balances checkpoint read (the view's seed) held until `release`. */
function holdingTheBalancesSeed() {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const decorate = (store: ReadStore): ReadStore =>
    new Proxy(store, {
      get(target, property, receiver) {
        if (property === 'getCheckpoint')
          return async (name: string) => (name === 'balances' && (await released), target.getCheckpoint(name));
        const value = Reflect.get(target, property, receiver) as unknown;
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
  return { decorate, release };
}

describe('read freshness', () => {
  let sys: TestSystem;
  let party: TestParty;
  let apiKey: string;

  const seed = holdingTheBalancesSeed();

  beforeAll(async () => {
    sys = await startTestSystem({ READ_MAX_LAG_EVENTS: String(MAX_LAG) }, undefined, ['write-api', 'read-api'], {
      decorateReadStore: seed.decorate,
    });
    party = await sys.party('distributor');
    ({ apiKey } = await party.key());
  });
  afterAll(async () => sys?.close());

  const balance = () => call(sys.baseUrl, 'GET', `/api/v1/distributors/${party.ref.id}/balance`, { apiKey });
  const credits = (count: number) =>
    sys.system.stores.eventStore.append(
      streams.wallet(party.wallet),
      Array.from({ length: count }, () => ({
        type: 'WalletCredited',
        data: { wallet: party.wallet, operationID: `test_${randomUUID()}`, amount: '1' },
        metadata: { actor: 'operator:test' },
      })),
      'any',
    );

  it('given a fresh, empty store, when its read models are checked, then they are current (nothing to show is the truth)', async () => {
    const dir = tempDir();
    const stores = await openStores(embedded(dir.path));
    try {
      const freshness = new ReadFreshness({ ...stores, maxLagEvents: MAX_LAG });
      expect(await freshness.freshness(balancesProjection())).toEqual({ state: 'current', lagEvents: 0 });
    } finally {
      await stores.close();
      dir.cleanup();
    }
  });

  it('given a read model none of whose events exist yet, when a balance is read, then it answers 200', async () => {
    const response = await balance();
    expect(response.status, JSON.stringify(response.body)).toBe(200);
    expect(response.body.balance).toBe('0.00');
  });

  it('given the balances view not seeded yet while its events exist, when a balance is read, then it answers 503 with Retry-After instead of 0.00', async () => {
    await credits(10);
    await waitFor(async () => (await balance()).status === 503);
    const response = await balance();
    expect(response.status).toBe(503);
    expect(response.headers.get('retry-after')).toBe('5');
    expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(response.body).toMatchObject({
      type: '/problems/service-unavailable',
      status: 503,
      detail: expect.stringContaining('balances read model has not been built'),
    });
  });

  it('given the view seeded from a store whose model was never built, when a balance is read, then it answers 200 with the balance of the history (the view folds it)', async () => {
    seed.release();
    await waitFor(async () => (await balance()).status === 200);
    expect((await balance()).body.balance).toBe('10.00');
  });

  it(`given the view more than READ_MAX_LAG_EVENTS (${MAX_LAG}) behind, when a balance is read, then it answers 503 with Retry-After; within it, 200`, async () => {
    const view = sys.system.consumers.find(({ consumer }) => consumer.name === 'balances-view')!.consumer;
    await view.stop(); // the view follows no more
    await credits(MAX_LAG);
    // Exactly the maximum behind: still served.
    await new Promise((resolve) => setTimeout(resolve, 1100));
    expect((await balance()).status).toBe(200);
    await credits(1);
    await waitFor(async () => (await balance()).status === 503);
    const response = await balance();
    expect(response.headers.get('retry-after')).toBe('1');
    expect(response.body.detail).toContain(`more than ${MAX_LAG} events behind`);
  });

  it('given a read model in the store never built while its events exist, then it is not built; once rebuilt, current; more than the maximum behind, lagging', async () => {
    const freshness = new ReadFreshness({ ...sys.system.stores, maxLagEvents: MAX_LAG, reuseForMs: 0 });
    const model = balancesProjection({ assetScale: 2 });
    expect(await freshness.freshness(model)).toMatchObject({ state: 'not-built' });
    await rebuildProjections(sys.system.stores, [model]);
    expect(await freshness.freshness(model)).toEqual({ state: 'current', lagEvents: 0 });
    await credits(MAX_LAG + 1);
    expect(await freshness.freshness(model)).toEqual({ state: 'lagging', lagEvents: MAX_LAG + 1 });
  });
});

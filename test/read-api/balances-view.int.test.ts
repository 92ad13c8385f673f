/**
 * The balances view: the balances read model kept in the read API's memory, seeded from the read store's model and
 * following the history, so that GET .../balance answers with no round trip to a store. On the real embedded
 * stores, in process.
 */
import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { embedded, openStores, type Stores } from '../../src/adapters/open-stores.ts';
import type { WalletRef } from '../../src/domain/events.ts';
import { streams } from '../../src/domain/streams.ts';
import {
  BALANCES_COLLECTION,
  balanceDocId,
  balancesProjection,
  type BalanceDoc,
} from '../../src/projections/balances.ts';
import { rebuildProjections } from '../../src/projections/rebuild.ts';
import { BalancesView, followBalances } from '../../src/read-api/balances-view.ts';
import { ReadFreshness } from '../../src/read-api/freshness.ts';
import type { ConsumerLogger, Follower } from '../../src/shared/follower.ts';
import { waitFor } from '../support/system.ts';
import { tempDir } from '../support/temp-dir.ts';
import { testStoreEnv } from '../support/test-stores.ts';

const quiet: ConsumerLogger = { info: () => {}, warn: () => {} };
const body = (view: BalancesView, wallet: WalletRef) =>
  JSON.parse(view.answer(wallet.kind as 'distributor', wallet.id).body.toString()) as {
    balance: string;
    available: string;
    held: string;
  };

describe('the balances view', () => {
  let dir: ReturnType<typeof tempDir>;
  let stores: Stores;
  let following: Follower | undefined;
  const distributor: WalletRef = { kind: 'distributor', id: randomUUID() };

  beforeEach(async () => {
    dir = tempDir();
    // The embedded stores, or a fresh PostgreSQL database with TEST_STORES=postgres (the seed's paged query).
    const server = await testStoreEnv(dir.path);
    stores = await openStores(
      server.POSTGRES_URL
        ? { ...embedded(dir.path), EVENT_STORE: 'postgres', READ_STORE: 'postgres', POSTGRES_URL: server.POSTGRES_URL }
        : embedded(dir.path),
    );
    await stores.readStore.defineCollections([BALANCES_COLLECTION]);
  });
  afterEach(async () => {
    await following?.stop();
    following = undefined;
    await stores.close();
    dir.cleanup();
  });

  const move = (wallet: WalletRef, type: 'WalletCredited' | 'WalletDebited', amount: string, count = 1) =>
    stores.eventStore.append(
      streams.wallet(wallet),
      Array.from({ length: count }, () => ({
        type,
        data: {
          wallet,
          operationID: `test_${randomUUID()}`,
          amount,
          ...(type === 'WalletDebited' ? { heldAmount: '0' } : {}),
        },
        metadata: { actor: 'operator:test' },
      })),
      'any',
    );
  const follow = (view: BalancesView) =>
    (following = followBalances({
      eventStore: stores.eventStore,
      readStore: stores.readStore,
      view,
      logger: quiet,
      supervision: { baseDelayMs: 20, maxDelayMs: 100 },
    }));

  it('when a distributor is credited then debited, then the view answers each new balance within moments, with a new ETag each time', async () => {
    const view = new BalancesView({ assetScale: 2 });
    follow(view);
    const before = view.answer('distributor', distributor.id);
    expect(body(view, distributor)).toEqual({ balance: '0.00', available: '0.00', held: '0.00' });
    await move(distributor, 'WalletCredited', '100');
    await waitFor(() => body(view, distributor).balance === '100.00');
    const credited = view.answer('distributor', distributor.id);
    await move(distributor, 'WalletDebited', '30.5');
    await waitFor(() => body(view, distributor).balance === '69.50');
    expect(body(view, distributor)).toEqual({ balance: '69.50', available: '69.50', held: '0.00' });
    const etags = new Set([before.etag, credited.etag, view.answer('distributor', distributor.id).etag]);
    expect(etags.size).toBe(3);
  });

  it('when an individual or a platform wallet moves, then the view keeps no entry for it (the API serves distributors and merchants only)', async () => {
    const view = new BalancesView({ assetScale: 2 });
    follow(view);
    await move({ kind: 'individual', id: '+2348000000001' }, 'WalletCredited', '5');
    await move({ kind: 'platform', id: 'fees' }, 'WalletCredited', '5');
    await move(distributor, 'WalletCredited', '1');
    await waitFor(() => body(view, distributor).balance === '1.00');
    expect(view.size).toBe(1);
  });

  it('given a read store whose balances model is built over a long history, when a view starts, then it is seeded from the model and replays none of the history; what follows is applied', async () => {
    await move(distributor, 'WalletCredited', '1', 2000);
    await rebuildProjections(stores, [balancesProjection({ assetScale: 2 })]);
    // The stored document says 7.00, the history 2000.00: the view's answer tells which one it was built from.
    const stored = (await stores.readStore.get<BalanceDoc>(BALANCES_COLLECTION.name, balanceDocId(distributor)))!;
    await stores.readStore.commit([
      { op: 'upsert', collection: BALANCES_COLLECTION.name, doc: { ...stored, balance: '7.00' } },
    ]);
    const view = new BalancesView({ assetScale: 2 });
    follow(view);
    await waitFor(() => view.isSeeded);
    expect(body(view, distributor).balance).toBe('7.00');
    expect(view.position()).toBe(await stores.readStore.getCheckpoint('balances'));
    await move(distributor, 'WalletCredited', '1');
    await waitFor(() => body(view, distributor).balance === '8.00');
  });

  it('given a built model of more wallets than a page of the seed, when a view starts, then every distributor and merchant is seeded', async () => {
    const wallets: WalletRef[] = Array.from({ length: 7 }, (_, i) => ({
      kind: i % 2 ? 'merchant' : 'distributor',
      id: randomUUID(),
    }));
    for (const [i, wallet] of wallets.entries()) await move(wallet, 'WalletCredited', String(i + 1));
    await move({ kind: 'individual', id: '+2348000000001' }, 'WalletCredited', '5');
    await rebuildProjections(stores, [balancesProjection({ assetScale: 2 })]);
    const view = new BalancesView({ assetScale: 2, seedPage: 2 });
    await view.seed(stores.readStore);
    expect(view.size).toBe(7);
    expect(wallets.map((wallet) => body(view, wallet).balance)).toEqual([
      '1.00',
      '2.00',
      '3.00',
      '4.00',
      '5.00',
      '6.00',
      '7.00',
    ]);
  });

  it('given a read store whose balances model was never built, when a view starts, then it folds the history itself', async () => {
    await move(distributor, 'WalletCredited', '2', 300);
    const view = new BalancesView({ assetScale: 2 });
    follow(view);
    await waitFor(() => body(view, distributor).balance === '600.00');
  });

  describe('its freshness, judged on its own position against the head', () => {
    const MAX_LAG = 5;
    const freshness = () => new ReadFreshness({ ...stores, maxLagEvents: MAX_LAG, reuseForMs: 0 });

    it('given balance events and a view not seeded yet, then it is not built and is refused with 503', async () => {
      await move(distributor, 'WalletCredited', '1');
      const view = new BalancesView({ assetScale: 2 });
      expect(await freshness().freshness(view)).toEqual({ state: 'not-built', lagEvents: 1 });
      await expect(freshness().assertServeable(view)).rejects.toMatchObject({
        problem: { status: 503 },
        headers: { 'Retry-After': '5' },
      });
    });

    it('given a verdict of the window that says current, then the model is known current without a wait; one that says not built, not', async () => {
      await move(distributor, 'WalletCredited', '1');
      const view = new BalancesView({ assetScale: 2 });
      const reused = new ReadFreshness({ ...stores, maxLagEvents: MAX_LAG, reuseForMs: 60_000 });
      expect(reused.knownCurrent(view)).toBe(false); // no verdict yet
      await reused.freshness(view);
      expect(reused.knownCurrent(view)).toBe(false); // not built
      follow(view);
      await waitFor(() => view.isSeeded && view.position()! > 0);
      const fresh = new ReadFreshness({ ...stores, maxLagEvents: MAX_LAG, reuseForMs: 60_000 });
      await fresh.freshness(view);
      expect(fresh.knownCurrent(view)).toBe(true);
    });

    it('given a view that stopped following, when more than the maximum of balance events arrive, then it is lagging (503); up to the maximum, current', async () => {
      const view = new BalancesView({ assetScale: 2 });
      const follower = follow(view);
      await waitFor(() => view.isSeeded);
      await follower.stop();
      await move(distributor, 'WalletCredited', '1');
      await move({ kind: 'individual', id: '+2348000000001' }, 'WalletCredited', '1', MAX_LAG - 1);
      expect(await freshness().freshness(view)).toEqual({ state: 'current', lagEvents: MAX_LAG });
      await move(distributor, 'WalletCredited', '1');
      expect(await freshness().freshness(view)).toEqual({ state: 'lagging', lagEvents: MAX_LAG + 1 });
      await expect(freshness().assertServeable(view)).rejects.toMatchObject({
        problem: { status: 503 },
        headers: { 'Retry-After': '1' },
      });
    });
  });
});

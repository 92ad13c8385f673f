import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openSqliteEventStore } from '../src/adapters/sqlite/sqlite-event-store.ts';
import { onboardParty, type BackOfficeDeps } from '../src/commands/back-office.ts';
import { claimDemoStore, DemoStoreRefusedError } from '../src/demo-store.ts';
import { seedDemo } from '../src/demo.ts';
import { streams } from '../src/domain/streams.ts';
import type { EventStore } from '../src/ports/event-store.ts';
import { tempDir } from './support/temp-dir.ts';
import { testCredentials } from './support/credentials.ts';

/**
 * The demo seeds only a store of its own: an empty one, which it marks, or one it marked before. Its users
 * have a published password and its keys are printed, so it must never land in a store with real parties.
 */
describe('the demo seed', () => {
  let dir: ReturnType<typeof tempDir>;
  let store: EventStore;
  let vault: Awaited<ReturnType<typeof testCredentials>>;
  const operator = () => ({ actor: 'operator:test', correlationId: randomUUID() });

  beforeEach(async () => {
    dir = tempDir('demo-');
    store = openSqliteEventStore({ file: join(dir.path, 'events.sqlite') });
    vault = await testCredentials();
  });
  afterEach(async () => {
    await vault.close();
    await store.close();
    dir.cleanup();
  });

  it('when the store is empty, then the demo is seeded and the store is marked as a demo store first', async () => {
    const seed = await seedDemo(store, 2, vault.credentials);

    expect(seed.distributorKey).toMatch(/^wo_test_key_/); // a demo's keys are a sandbox's
    const [first] = await store.readAll({ maxCount: 1 });
    expect(first).toMatchObject({ stream: streams.demoStore, type: 'DemoStoreMarked', revision: 0 });
  });

  it('when the demo store is seeded again, then it succeeds, reusing its parties and leaving one marker', async () => {
    const first = await seedDemo(store, 2, vault.credentials);
    const again = await seedDemo(store, 2, vault.credentials);

    expect(again.distributor).toEqual(first.distributor);
    expect(again.merchant).toEqual(first.merchant);
    expect(again.distributorKey).not.toBe(first.distributorKey);
    expect(await store.readStream(streams.demoStore)).toHaveLength(1);
  });

  it('when the store holds a real party, then seeding is refused with a clear message and writes nothing', async () => {
    const deps: BackOfficeDeps = { store, clock: () => new Date(), assetScale: 2 };
    await onboardParty(deps, { partyType: 'distributor', name: 'Real Agents Ltd', shortCode: '1001' }, operator());
    const head = await store.headPosition();

    const refusal = await seedDemo(store, 2, vault.credentials).then(
      () => null,
      (error: unknown) => error,
    );

    expect(refusal).toBeInstanceOf(DemoStoreRefusedError);
    expect((refusal as Error).message).toMatch(
      /^this event store already holds events the demo did not write \(the first: DistributorOnboarded on distributor-/,
    );
    expect((refusal as Error).message).toMatch(/empty data directory|separate/);
    expect(await store.headPosition()).toBe(head);
    expect(await store.readStream(streams.demoStore)).toEqual([]);
  });

  it('when two seeders claim an empty store at once, then the marker is written once and both may seed it', async () => {
    const claims = await Promise.all([claimDemoStore(store, new Date()), claimDemoStore(store, new Date())]);

    expect(claims.sort()).toEqual(['marked', 'marked-already']);
    expect(await store.readStream(streams.demoStore)).toHaveLength(1);
  });
});

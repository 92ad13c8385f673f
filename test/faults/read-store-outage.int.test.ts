/**
 * A read store outage (what a MongoDB primary election or a network cut looks like to the process): every
 * read-store call fails for a while, through the fault-injection decorator (src/faults) switched fully on
 * and then off. The background work that touches the read store runs as the server runs it: every projection
 * runner, the executor (its checkpoint interval and sweep), the key-revocation consumer and the API-key usage
 * recorder. The process must survive the outage (no unhandled rejection, no uncaught exception) and recover
 * by itself once the store answers again: the projections catch up, the executor's checkpoint moves, and the
 * consumers report running.
 */
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openEmbeddedLedger } from '../../src/adapters/ledger/embedded-ledger.ts';
import { openSqliteEventStore } from '../../src/adapters/sqlite/sqlite-event-store.ts';
import { openSqliteReadStore } from '../../src/adapters/sqlite/sqlite-read-store.ts';
import { withHashChain } from '../../src/audit/hash-chain.ts';
import { onboardParty } from '../../src/commands/back-office.ts';
import { issueFloat } from '../../src/commands/channel-operations.ts';
import { PartyLookup } from '../../src/commands/party-lookup.ts';
import { createExecutor, EXECUTOR_CHECKPOINT } from '../../src/executor/executor.ts';
import { createKeyRevocations } from '../../src/executor/key-revocation.ts';
import { newFaultCounters, withReadStoreFaults } from '../../src/faults/index.ts';
import { KEY_USAGE_COLLECTION, KeyUsageRecorder, keyUsage } from '../../src/http/key-usage.ts';
import { createLogger } from '../../src/logger.ts';
import { BALANCES_COLLECTION, type BalanceDoc } from '../../src/projections/balances.ts';
import { allProjections } from '../../src/projections/index.ts';
import { createProjectionRunner } from '../../src/projections/projection-runner.ts';
import type { PartyRef } from '../../src/domain/parties.ts';
import type { EventStore } from '../../src/ports/event-store.ts';
import type { Ledger } from '../../src/ports/ledger.ts';
import type { ReadStore } from '../../src/ports/read-store.ts';
import type { SupervisedConsumer } from '../../src/shared/supervised-consumer.ts';
import { waitFor } from '../support/system.ts';
import { tempDir } from '../support/temp-dir.ts';

const FAST = { baseDelayMs: 10, maxDelayMs: 100, stableAfterMs: 60_000 };

describe('a read store outage in the background paths', () => {
  let dir: ReturnType<typeof tempDir>;
  let eventStore: EventStore;
  let rawReadStore: ReadStore;
  let readStore: ReadStore;
  let ledger: Ledger;
  /** The switch: while true, every read-store call fails with the store's transient error. */
  let down = false;
  const counters = newFaultCounters();
  const escaped: unknown[] = [];
  const onEscape = (error: unknown) => escaped.push(error);
  const stops: Array<() => Promise<void>> = [];

  beforeEach(async () => {
    dir = tempDir('read-outage-');
    down = false;
    escaped.length = 0;
    process.on('unhandledRejection', onEscape);
    process.on('uncaughtException', onEscape);
    eventStore = withHashChain(openSqliteEventStore({ file: join(dir.path, 'events.sqlite') }));
    rawReadStore = openSqliteReadStore({ file: join(dir.path, 'read-models.sqlite') });
    // errorRate 0.5 with a "random" that is 0 while down and 1 while up: every call fails, then none does.
    readStore = withReadStoreFaults(
      rawReadStore,
      { errorRate: 0.5, latencyMs: 0, hangRate: 0, hangMs: 0, random: () => (down ? 0 : 1) },
      counters,
    );
    ledger = openEmbeddedLedger({ file: join(dir.path, 'ledger.sqlite') });
  });

  afterEach(async () => {
    down = false;
    for (const stop of stops.splice(0).reverse()) await stop();
    await eventStore.close();
    await rawReadStore.close();
    await ledger.close();
    process.off('unhandledRejection', onEscape);
    process.off('uncaughtException', onEscape);
    dir.cleanup();
  });

  it('given every background consumer running, when the read store fails every call for a while, then the process survives, and once it answers again every consumer recovers and catches up', async () => {
    const logger = createLogger('silent');
    const projections = allProjections(2);
    await rawReadStore.defineCollections([
      ...projections.map((projection) => projection.collection),
      KEY_USAGE_COLLECTION,
    ]);
    const runners = projections.map((projection) =>
      createProjectionRunner({ eventStore, readStore, projection, logger, supervision: FAST }),
    );
    const executor = createExecutor({
      eventStore,
      readStore,
      ledger,
      executorID: 'outage',
      leaseMs: 5_000,
      maxAttempts: 5,
      retryBaseMs: 10,
      retryMaxMs: 100,
      concurrency: 4,
      sweepIntervalMs: 50,
      assetScale: 2,
      clock: () => new Date(),
      logger,
      supervision: FAST,
    });
    const revocations = createKeyRevocations({
      eventStore,
      readStore,
      clock: () => new Date(),
      assetScale: 2,
      logger,
      checkpointEveryMs: 20,
      supervision: FAST,
    });
    const usage = new KeyUsageRecorder(readStore, logger, 20);
    runners.forEach((runner) => runner.start());
    executor.start();
    revocations.start();
    stops.push(
      () => usage.close(),
      () => revocations.stop(),
      () => executor.stop(),
      ...runners.map((runner) => () => runner.stop()),
    );
    const consumers: SupervisedConsumer[] = [
      ...runners.map((runner) => runner.consumer),
      executor.consumer,
      revocations.consumer,
    ];

    const context = () => ({ actor: 'operator:test', correlationId: randomUUID() });
    const backOffice = { store: eventStore, clock: () => new Date(), assetScale: 2 };
    const { partyID } = await onboardParty(
      backOffice,
      { partyType: 'distributor', name: 'Outage Ltd', shortCode: '771177' },
      context(),
    );
    const to: PartyRef = { type: 'distributor', id: partyID };
    const channel = { store: eventStore, lookup: new PartyLookup(eventStore), clock: () => new Date(), assetScale: 2 };
    const balance = async () =>
      (await rawReadStore.get<BalanceDoc>(BALANCES_COLLECTION.name, `distributor:${partyID}`))?.balance;

    await issueFloat(channel, { to, amount: '100.00' }, context());
    await waitFor(async () => (await balance()) === '100.00', 10_000);

    // The outage: events keep coming (the event store is up), the read store answers nothing.
    down = true;
    const during = await issueFloat(channel, { to, amount: '50.00' }, context());
    usage.record('key-outage', new Date());
    const failedBefore = counters.errors;
    await waitFor(
      () =>
        runners.some((runner) => runner.consumer.status().consecutiveFailures >= 2) &&
        executor.consumer.status().state !== 'stopped' &&
        counters.errors >= failedBefore + 20,
      10_000,
    );
    expect(await balance()).toBe('100.00');
    // The executor needs only the event store and the ledger: the operation completes during the outage.
    const [approval] = (await eventStore.readStream(`operation-${during.operationID}`)).filter(
      (event) => event.type === 'OperationApproved',
    );
    await waitFor(
      async () =>
        (await eventStore.readStream(`operation-${during.operationID}`)).some(
          (event) => event.type === 'OperationCompleted',
        ),
      10_000,
    );
    expect(escaped).toEqual([]);

    // The store is back: everything catches up by itself.
    down = false;
    await waitFor(async () => (await balance()) === '150.00', 10_000);
    await waitFor(
      async () => ((await rawReadStore.getCheckpoint(EXECUTOR_CHECKPOINT)) ?? 0) >= approval!.position,
      10_000,
    );
    // The usage recorded during the outage was kept for a later flush, not dropped.
    await waitFor(async () => (await keyUsage(rawReadStore, 'key-outage')).count === 1, 10_000);
    const head = await eventStore.headPosition();
    await waitFor(async () => {
      for (const projection of projections) {
        const checkpoint = await rawReadStore.getCheckpoint(projection.name);
        // A projection whose events all came before is at its last event; none may be behind what it handles.
        const [lastHandled] = (await eventStore.readAll({ filter: { eventTypes: [...projection.eventTypes] } })).slice(
          -1,
        );
        if (lastHandled && (checkpoint ?? 0) < lastHandled.position) return false;
      }
      return true;
    }, 10_000);
    expect(head).toBeGreaterThan(0);
    expect(consumers.every((consumer) => consumer.status().state !== 'stopped')).toBe(true);
    expect(runners.map((runner) => runner.consumer.status().totalFailures).reduce((a, b) => a + b, 0)).toBeGreaterThan(
      0,
    );
    expect(escaped).toEqual([]);
  });
});

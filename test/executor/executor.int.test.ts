import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openEmbeddedLedger } from '../../src/adapters/ledger/embedded-ledger.ts';
import { openSqliteEventStore } from '../../src/adapters/sqlite/sqlite-event-store.ts';
import { openSqliteReadStore } from '../../src/adapters/sqlite/sqlite-read-store.ts';
import { onboardParty } from '../../src/commands/back-office.ts';
import { issueFloat } from '../../src/commands/channel-operations.ts';
import { operationState } from '../../src/commands/operations.ts';
import { PartyLookup } from '../../src/commands/party-lookup.ts';
import { loadState } from '../../src/commands/pipeline.ts';
import type { PartyRef } from '../../src/domain/parties.ts';
import { streams } from '../../src/domain/streams.ts';
import { createExecutor, EXECUTOR_CHECKPOINT, type Executor } from '../../src/executor/executor.ts';
import { newFaultCounters, withReadStoreFaults } from '../../src/faults/index.ts';
import { createLogger } from '../../src/logger.ts';
import type { EventStore } from '../../src/ports/event-store.ts';
import type { Ledger } from '../../src/ports/ledger.ts';
import type { ReadStore } from '../../src/ports/read-store.ts';
import { waitFor } from '../support/system.ts';
import { tempDir } from '../support/temp-dir.ts';

/**
 * The executor's work needs the event store and the ledger, not the read store (which holds only its
 * checkpoint and the sweep's read model): while the read store is down, every approval is still carried out,
 * the executor stays healthy, and its checkpoint catches up once the store is back.
 */
describe('the executor while the read store is down', () => {
  let dir: ReturnType<typeof tempDir>;
  let eventStore: EventStore;
  let rawReadStore: ReadStore;
  let ledger: Ledger;
  let executor: Executor | undefined;
  let down = false;

  beforeEach(() => {
    dir = tempDir('executor-outage-');
    eventStore = openSqliteEventStore({ file: join(dir.path, 'events.sqlite') });
    rawReadStore = openSqliteReadStore({ file: join(dir.path, 'read-models.sqlite') });
    ledger = openEmbeddedLedger({ file: join(dir.path, 'ledger.sqlite') });
  });
  afterEach(async () => {
    down = false;
    await executor?.stop();
    await eventStore.close();
    await rawReadStore.close();
    await ledger.close();
    dir.cleanup();
  });

  it('when approvals arrive one after another during the outage, then each completes, the executor stays running, and its checkpoint passes them once the store answers', async () => {
    const readStore = withReadStoreFaults(
      rawReadStore,
      { errorRate: 0.5, latencyMs: 0, hangRate: 0, hangMs: 0, random: () => (down ? 0 : 1) },
      newFaultCounters(),
    );
    executor = createExecutor({
      eventStore,
      readStore,
      ledger,
      executorID: 'outage',
      leaseMs: 5_000,
      maxAttempts: 5,
      retryBaseMs: 10,
      retryMaxMs: 100,
      concurrency: 4,
      sweepIntervalMs: 60_000,
      assetScale: 2,
      clock: () => new Date(),
      logger: createLogger('silent'),
      supervision: { baseDelayMs: 10, maxDelayMs: 100, stableAfterMs: 60_000 },
    });
    executor.start();
    const context = () => ({ actor: 'operator:test', correlationId: randomUUID() });
    const { partyID } = await onboardParty(
      { store: eventStore, clock: () => new Date(), assetScale: 2 },
      { partyType: 'distributor', name: 'Outage Ltd', shortCode: '771178' },
      context(),
    );
    const to: PartyRef = { type: 'distributor', id: partyID };
    const channel = { store: eventStore, lookup: new PartyLookup(eventStore), clock: () => new Date(), assetScale: 2 };
    const status = async (operationID: string) =>
      (await loadState({ store: eventStore }, streams.operation(operationID), operationState)).state.status;
    await waitFor(() => executor!.consumer.status().state === 'running', 10_000);

    down = true;
    let last = '';
    for (const amount of ['10.00', '20.00', '30.00']) {
      last = (await issueFloat(channel, { to, amount }, context())).operationID;
      await waitFor(async () => (await status(last)) === 'completed', 10_000);
    }
    expect(executor.consumer.status()).toMatchObject({ state: 'running', consecutiveFailures: 0 });

    down = false;
    const approval = (await eventStore.readStream(streams.operation(last))).find(
      (event) => event.type === 'OperationApproved',
    )!;
    await waitFor(
      async () => ((await rawReadStore.getCheckpoint(EXECUTOR_CHECKPOINT)) ?? 0) >= approval.position,
      10_000,
    );
  });
});

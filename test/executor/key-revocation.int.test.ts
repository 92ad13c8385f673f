import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openSqliteEventStore } from '../../src/adapters/sqlite/sqlite-event-store.ts';
import { openSqliteReadStore } from '../../src/adapters/sqlite/sqlite-read-store.ts';
import type { ApiKeyEvent } from '../../src/domain/events.ts';
import { streams } from '../../src/domain/streams.ts';
import {
  KEY_EXPIRED_REASON,
  KEY_REVOCATION_ACTOR,
  KEY_REVOCATION_CHECKPOINT,
  createKeyRevocations,
  revocationStep,
} from '../../src/executor/key-revocation.ts';
import { createLogger } from '../../src/logger.ts';
import type { EventStore } from '../../src/ports/event-store.ts';
import type { ReadStore } from '../../src/ports/read-store.ts';
import { pendingOperationsProjection } from '../../src/projections/pending-operations.ts';
import type { Projection } from '../../src/projections/projection.ts';
import { createProjectionRunner } from '../../src/projections/projection-runner.ts';
import { newOperationID, requestOperation } from '../support/given-events.ts';
import { request } from '../support/projection-spec.ts';
import { waitFor } from '../support/system.ts';
import { tempDir } from '../support/temp-dir.ts';

/**
 * The key-revocation consumer: what each event asks of it (decisions as data), and, on the embedded stores,
 * that a revocation waits for the pending-operations read model to reach it, says so in its health while the
 * model does not move, and goes on once it does.
 */
const revoked = (keyID: string) => ({
  type: 'ApiKeyRevoked',
  data: { keyID, approvedBy: 'u-checker', revokedAt: '2026-01-01T00:00:00.000Z' },
});

describe('what an event asks of the key-revocation consumer', () => {
  it('when a key is revoked, then every pending operation of that key is to be rejected', () => {
    expect(revocationStep(revoked('key_1'))).toEqual({ kind: 'reject-pending-of-key', keyID: 'key_1' });
  });

  it('when an operation is requested with a key, then that key is to be checked (it may be revoked already)', () => {
    expect(revocationStep(request.cashInToIndividual('op_1', { keyID: 'key_2' }))).toEqual({
      kind: 'check-key',
      keyID: 'key_2',
      operationID: 'op_1',
    });
    expect(revocationStep(request.cashInToIndividual('op_1', { keyID: 'key_2', secretGeneration: 2 }))).toEqual({
      kind: 'check-key',
      keyID: 'key_2',
      operationID: 'op_1',
      secretGeneration: 2,
    });
  });

  it("when a departure ends a key's previous secret, then the key's pending operations are to be looked at (those of that secret are rejected)", () => {
    expect(
      revocationStep({
        type: 'ApiKeyPreviousSecretEnded',
        data: { keyID: 'key_3', endedAt: '2026-01-01T00:00:00.000Z', departedUserID: 'u-1' },
      }),
    ).toEqual({ kind: 'reject-pending-of-key', keyID: 'key_3' });
  });

  it('when an operation comes from another channel (no key), or any other event arrives, then it is ignored', () => {
    expect(revocationStep(request.issue('op_1'))).toEqual({ kind: 'ignore' });
    expect(revocationStep({ type: 'OperationApproved', data: { operationID: 'op_1' } })).toEqual({ kind: 'ignore' });
  });
});

describe('the key-revocation consumer and the read model it reads', () => {
  let dir: ReturnType<typeof tempDir>;
  let eventStore: EventStore;
  let readStore: ReadStore;
  const stoppers: Array<() => Promise<void>> = [];
  const projection = pendingOperationsProjection() as unknown as Projection;
  const logger = createLogger('silent');

  beforeEach(async () => {
    dir = tempDir('key-revocation-');
    eventStore = openSqliteEventStore({ file: join(dir.path, 'events.sqlite') });
    readStore = openSqliteReadStore({ file: join(dir.path, 'read-models.sqlite') });
    await readStore.defineCollections([projection.collection]);
  });
  afterEach(async () => {
    for (const stop of stoppers.splice(0).reverse()) await stop();
    await eventStore.close();
    await readStore.close();
    dir.cleanup();
  });

  it('when the pending-operations read model does not reach a revocation, then the consumer reports it failing and retries; when the model runs, then it recovers past the revocation', async () => {
    const consumer = createKeyRevocations({
      eventStore,
      readStore,
      clock: () => new Date(),
      assetScale: 2,
      logger,
      readModelStallMs: 150,
      supervision: { baseDelayMs: 10, maxDelayMs: 50, stableAfterMs: 60_000 },
    });
    consumer.start();
    stoppers.push(() => consumer.stop());
    const { position } = await eventStore.append(
      streams.apiKey('key_1'),
      [{ ...revoked('key_1'), metadata: { actor: 'user:u-checker' } }],
      'any',
    );

    // It has failed (waited on, rather than its 'retrying' state, which lasts only its backoff's few ms).
    await waitFor(() => consumer.consumer.status().totalFailures > 0);
    expect(consumer.consumer.status().lastError).toMatch(
      /pending-operations read model has stayed at null, before the revocation at position \d+/,
    );
    expect(consumer.consumer.downForMs()).toBeGreaterThanOrEqual(0);
    expect(await readStore.getCheckpoint(KEY_REVOCATION_CHECKPOINT)).toBeNull();

    const runner = createProjectionRunner({ eventStore, readStore, projection, logger });
    runner.start();
    stoppers.push(() => runner.stop());
    await waitFor(
      () => consumer.consumer.status().state === 'running' && (consumer.consumer.status().position ?? 0) >= position,
    );
    await waitFor(async () => ((await readStore.getCheckpoint(KEY_REVOCATION_CHECKPOINT)) ?? 0) >= position);
  });
});

describe("the key-revocation consumer's sweep of expired keys", () => {
  let dir: ReturnType<typeof tempDir>;
  let eventStore: EventStore;
  let readStore: ReadStore;
  const stoppers: Array<() => Promise<void>> = [];
  const projection = pendingOperationsProjection() as unknown as Projection;
  const logger = createLogger('silent');
  const EXPIRES_AT = '2026-06-01T00:00:00.000Z';
  /** The injected clock: moved by the tests, read by the sweep and by its decisions. */
  let now: Date;
  const clock = () => now;

  beforeEach(async () => {
    dir = tempDir('key-expiry-');
    eventStore = openSqliteEventStore({ file: join(dir.path, 'events.sqlite') });
    readStore = openSqliteReadStore({ file: join(dir.path, 'read-models.sqlite') });
    await readStore.defineCollections([projection.collection]);
    const runner = createProjectionRunner({ eventStore, readStore, projection, logger });
    runner.start();
    stoppers.push(() => runner.stop());
    now = new Date('2026-05-31T23:59:59.000Z');
  });
  afterEach(async () => {
    for (const stop of stoppers.splice(0).reverse()) await stop();
    await eventStore.close();
    await readStore.close();
    dir.cleanup();
  });

  const sweeper = (options: { expirySweepEveryMs?: number } = {}) => {
    const consumer = createKeyRevocations({ eventStore, readStore, clock, assetScale: 2, logger, ...options });
    stoppers.push(() => consumer.stop());
    return consumer;
  };

  async function activeKey(keyID: string, expiresAt: string): Promise<void> {
    const events: ApiKeyEvent[] = [
      {
        type: 'ApiKeyRequested',
        data: {
          keyID,
          party: { type: 'distributor', id: 'd-1' },
          label: 'till',
          permissions: ['Perform Operations'],
          maxTransactionAmount: null,
          maxDailyVolume: '1000.00',
          allowedIPs: [],
          expiresInDays: 30,
          requestedBy: 'u-maker',
          requestedAt: '2026-05-01T00:00:00.000Z',
        },
      },
      {
        type: 'ApiKeyApproved',
        data: {
          keyID,
          approvedBy: 'u-checker',
          approvedAt: '2026-05-02T00:00:00.000Z',
          expiresAt,
          secretHash: 'ab'.repeat(32),
        },
      },
    ];
    await eventStore.append(
      streams.apiKey(keyID),
      events.map((event) => ({ ...event, metadata: { actor: 'user:u-maker' } })),
      'no_stream',
    );
  }

  async function pendingOf(keyID: string): Promise<string> {
    const operationID = newOperationID();
    await requestOperation(
      eventStore,
      request.cashInToIndividual(operationID, { keyID, volumeDay: '2026-05-31', createdAt: '2026-05-31T12:00:00.000Z' })
        .data,
    );
    return operationID;
  }

  const eventsOf = async (stream: string) =>
    (await eventStore.readStream(stream)).map((event) => ({
      type: event.type,
      data: event.data as Record<string, unknown>,
      actor: event.metadata.actor,
    }));

  /** Until the pending-operations read model lists exactly these operations. */
  async function untilPending(...operationIDs: string[]): Promise<void> {
    await waitFor(
      async () =>
        (await readStore.find(projection.collection.name))
          .map((doc) => doc.id)
          .sort()
          .join() === [...operationIDs].sort().join(),
    );
  }

  it('when a key has expired, then the sweep rejects its pending operations as system:key-revocation with "API key expired" and releases their hold and daily volume once, whoever sweeps again; operations of a standing key stay pending', async () => {
    await activeKey('key_expiring', EXPIRES_AT);
    await activeKey('key_standing', '2027-01-01T00:00:00.000Z');
    const ofExpiring = await pendingOf('key_expiring');
    const ofStanding = await pendingOf('key_standing');
    await untilPending(ofExpiring, ofStanding);
    const first = sweeper();
    const second = sweeper(); // another process running the same consumer

    expect(await first.sweepExpired()).toBe(0); // before the expiry: nothing to do
    expect(await eventsOf(streams.operation(ofExpiring))).toHaveLength(1);

    now = new Date(EXPIRES_AT);
    await Promise.all([first.sweepExpired(), second.sweepExpired(), first.sweepExpired()]);

    const operationEvents = await eventsOf(streams.operation(ofExpiring));
    expect(operationEvents.slice(1)).toEqual([
      {
        type: 'OperationRejected',
        data: {
          operationID: ofExpiring,
          rejectedBy: KEY_REVOCATION_ACTOR,
          reason: KEY_EXPIRED_REASON,
          rejectedAt: EXPIRES_AT,
        },
        actor: KEY_REVOCATION_ACTOR,
      },
    ]);
    const released = (
      await eventsOf(streams.wallet({ kind: 'distributor', id: request.cashInToIndividual('op').data.payer.id }))
    ).filter((event) => event.type === 'HoldReleased');
    expect(released.map((event) => event.data)).toEqual([
      {
        wallet: { kind: 'distributor', id: request.cashInToIndividual('op').data.payer.id },
        operationID: ofExpiring,
        amount: '100.00',
        reason: 'rejected',
      },
    ]);
    expect((await eventsOf(streams.keyVolume('key_expiring', '2026-05-31'))).map((event) => event.data)).toEqual([
      { keyID: 'key_expiring', day: '2026-05-31', operationID: ofExpiring, amount: '100.00' },
    ]);
    expect(await eventsOf(streams.operation(ofStanding))).toHaveLength(1);

    await untilPending(ofStanding);
    expect(await second.sweepExpired()).toBe(0); // off the pending list: a later sweep finds nothing
  });

  it('when the consumer runs, then it sweeps by itself every expirySweepEveryMs', async () => {
    await activeKey('key_expiring', EXPIRES_AT);
    const operationID = await pendingOf('key_expiring');
    await untilPending(operationID);
    now = new Date('2026-06-01T00:00:01.000Z');
    sweeper({ expirySweepEveryMs: 50 }).start();
    await waitFor(async () =>
      (await eventsOf(streams.operation(operationID))).some((event) => event.type === 'OperationRejected'),
    );
  });
});

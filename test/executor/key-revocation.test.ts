import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openSqliteEventStore } from '../../src/adapters/sqlite/sqlite-event-store.ts';
import { openSqliteReadStore } from '../../src/adapters/sqlite/sqlite-read-store.ts';
import { streams } from '../../src/domain/streams.ts';
import { KEY_REVOCATION_CHECKPOINT, KeyRevocations, revocationStep } from '../../src/executor/key-revocation.ts';
import { createLogger } from '../../src/logger.ts';
import type { EventStore } from '../../src/ports/event-store.ts';
import type { ReadStore } from '../../src/ports/read-store.ts';
import { pendingOperationsProjection } from '../../src/projections/pending-operations.ts';
import type { Projection } from '../../src/projections/projection.ts';
import { ProjectionRunner } from '../../src/projections/projection-runner.ts';
import { request } from '../support/projection-spec.ts';
import { waitFor } from '../support/system.ts';
import { tempDir } from '../support/temp-dir.ts';

/**
 * The key-revocation consumer: what each event asks of it (decisions as data), and, on the embedded stores,
 * that a revocation waits for the pending-operations read model to reach it, says so in its health while the
 * model does not move, and goes on once it does.
 */
const revoked = (keyID: string) => ({ type: 'ApiKeyRevoked', data: { keyID, approvedBy: 'u-checker', revokedAt: '2026-01-01T00:00:00.000Z' } });

describe('what an event asks of the key-revocation consumer', () => {
  it('when a key is revoked, then every pending operation of that key is to be rejected', () => {
    expect(revocationStep(revoked('key_1'))).toEqual({ kind: 'reject-pending-of-key', keyID: 'key_1' });
  });

  it('when an operation is requested with a key, then that key is to be checked (it may be revoked already)', () => {
    expect(revocationStep(request.cashInToIndividual('op_1', { keyID: 'key_2' }))).toEqual({ kind: 'check-key', keyID: 'key_2', operationID: 'op_1' });
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
    const consumer = new KeyRevocations({ eventStore, readStore, clock: () => new Date(), assetScale: 2, logger, readModelStallMs: 150, supervision: { baseDelayMs: 10, maxDelayMs: 50, stableAfterMs: 60_000 } });
    consumer.start();
    stoppers.push(() => consumer.stop());
    const { position } = await eventStore.append(streams.apiKey('key_1'), [{ ...revoked('key_1'), metadata: { actor: 'user:u-checker' } }], 'any');

    await waitFor(() => consumer.consumer.status().state === 'retrying');
    expect(consumer.consumer.status().lastError).toMatch(/pending-operations read model has stayed at null, before the revocation at position \d+/);
    expect(consumer.consumer.downForMs()).toBeGreaterThanOrEqual(0);
    expect(await readStore.getCheckpoint(KEY_REVOCATION_CHECKPOINT)).toBeNull();

    const runner = new ProjectionRunner({ eventStore, readStore, projection, logger });
    runner.start();
    stoppers.push(() => runner.stop());
    await waitFor(() => consumer.consumer.status().state === 'running' && (consumer.consumer.status().position ?? 0) >= position);
    await waitFor(async () => ((await readStore.getCheckpoint(KEY_REVOCATION_CHECKPOINT)) ?? 0) >= position);
  });
});

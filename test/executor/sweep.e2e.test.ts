import { afterEach, describe, expect, it } from 'vitest';
import type { OperationExecutionStarted } from '../../src/domain/events.ts';
import { EXECUTOR_CHECKPOINT } from '../../src/executor/executor.ts';
import { UNSETTLED_OPERATIONS_COLLECTION } from '../../src/projections/unsettled-operations.ts';
import { allLedgerTransactions, assertLedgerMatchesProjections } from '../support/invariants.ts';
import {
  issue,
  operationOf,
  startPartsSystem,
  waitUntilSettled,
  type PartsTestSystem,
} from '../support/executor-system.ts';
import { waitFor } from '../support/system.ts';

/**
 * The reconciliation sweep: an approval that the executor's subscription never delivers (here, the shared
 * checkpoint was moved past it, as a lost or corrupted checkpoint would) is still carried out, found in the
 * unsettled-operations read model.
 */
describe('executor reconciliation sweep', () => {
  let sys: PartsTestSystem | undefined;
  afterEach(async () => {
    await sys?.close();
    sys = undefined;
  });

  it('given an approved operation behind the executor checkpoint, when an executor starts, then its sweep executes it exactly once and it leaves the unsettled list', async () => {
    sys = await startPartsSystem({ EXECUTOR_SWEEP_INTERVAL_MS: '200', EXECUTOR_LEASE_MS: '500' });
    const distributor = await sys.party('distributor');
    const subject = { system: sys.system, config: sys.config };
    const operationID = await issue(subject, distributor.ref, '75');
    const readStore = sys.system.stores.readStore;
    await waitFor(async () => (await readStore.get(UNSETTLED_OPERATIONS_COLLECTION.name, operationID)) !== null);

    // The checkpoint says every approval up to the head is settled: the subscription will never bring this one.
    const head = await sys.system.stores.eventStore.headPosition();
    await readStore.commit([], {
      projection: EXECUTOR_CHECKPOINT,
      position: head,
      expected: await readStore.getCheckpoint(EXECUTOR_CHECKPOINT),
    });

    const executor = await sys.startExecutor({
      EXECUTOR_SWEEP_INTERVAL_MS: '200',
      EXECUTOR_LEASE_MS: '500',
      EXECUTOR_ID: 'sweeper',
    });
    const state = await waitUntilSettled(subject, operationID, 20_000);
    expect(state.status).toBe('completed');

    const events = await sys.system.stores.eventStore.readStream(`operation-${operationID}`);
    const claims = events
      .filter((e) => e.type === 'OperationExecutionStarted')
      .map((e) => (e as unknown as OperationExecutionStarted).data.executorID);
    expect(claims).toEqual(['sweeper']);
    expect(
      (await allLedgerTransactions(executor.ops.ledger)).filter((tx) => tx.operationID === operationID),
    ).toHaveLength(1);
    await waitFor(async () => (await readStore.get(UNSETTLED_OPERATIONS_COLLECTION.name, operationID)) === null);
    expect((await operationOf(subject, operationID)).status).toBe('completed');
    await assertLedgerMatchesProjections(subject);
  }, 60_000);

  it('given an approval stamped by an API process whose clock runs a day ahead, when the sweep finds it, then it is carried out a lease later, not a day later', async () => {
    sys = await startPartsSystem({ EXECUTOR_SWEEP_INTERVAL_MS: '200', EXECUTOR_LEASE_MS: '500' });
    const distributor = await sys.party('distributor');
    const subject = { system: sys.system, config: sys.config };
    const operationID = await issue(subject, distributor.ref, '75');
    const readStore = sys.system.stores.readStore;
    await waitFor(async () => (await readStore.get(UNSETTLED_OPERATIONS_COLLECTION.name, operationID)) !== null);
    const head = await sys.system.stores.eventStore.headPosition();
    // approvedAt as the fast process wrote it: a day in this executor's future.
    const tomorrow = new Date(Date.now() + 86_400_000).toISOString();
    await readStore.commit(
      [
        {
          op: 'patch',
          collection: UNSETTLED_OPERATIONS_COLLECTION.name,
          id: operationID,
          patch: { approvedAt: tomorrow },
        },
      ],
      { projection: EXECUTOR_CHECKPOINT, position: head, expected: await readStore.getCheckpoint(EXECUTOR_CHECKPOINT) },
    );

    await sys.startExecutor({ EXECUTOR_SWEEP_INTERVAL_MS: '200', EXECUTOR_LEASE_MS: '500', EXECUTOR_ID: 'sweeper' });
    expect((await waitUntilSettled(subject, operationID, 8_000)).status).toBe('completed');
  }, 30_000);
});

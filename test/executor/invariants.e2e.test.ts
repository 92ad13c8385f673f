import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { streams } from '../../src/domain/streams.ts';
import { assertLedgerMatchesProjections, ledgerProblems } from '../support/invariants.ts';
import { issue, waitUntilSettled } from '../support/executor-system.ts';
import { startTestSystem, type TestParty, type TestSystem } from '../support/system.ts';
import { onEvm } from '../support/test-ledger.ts';

/**
 * The invariant check itself: it holds on a healthy system and catches each kind of disagreement it is
 * meant to catch, so that the executor tests relying on it cannot pass vacuously.
 */
describe('assertLedgerMatchesProjections', () => {
  let sys: TestSystem;
  let distributor: TestParty;
  let operationID: string;

  beforeEach(async () => {
    sys = await startTestSystem();
    distributor = await sys.party('distributor');
    operationID = await issue(sys, distributor.ref, '100');
    expect((await waitUntilSettled(sys, operationID)).status).toBe('completed');
  });
  afterEach(async () => sys?.close());

  const problemsNow = async () => {
    await assertLedgerMatchesProjections(sys, { timeoutMs: 300 }).catch(() => undefined);
    return ledgerProblems(sys);
  };

  it('holds on a system where money moved only through the executor', async () => {
    await assertLedgerMatchesProjections(sys);
  });

  it('catches money credited in the event store but not on the ledger (what credit() does)', async () => {
    await sys.credit(distributor.wallet, '5.00');
    await expect(assertLedgerMatchesProjections(sys, { timeoutMs: 300 })).rejects.toThrow(
      /wallet distributor:.*ledger 100, projected 105/,
    );
  });

  it('catches a ledger transaction without a completed operation, unless declared external', async () => {
    const drain = `drain_${randomUUID()}`;
    await sys.system.ledger.submit({
      operationID: drain,
      legs: [{ from: `distributor:${distributor.ref.id}`, to: 'individual:+2348120000001', amount: '10.00' }],
    });
    const problems = await problemsNow();
    expect(problems.some((p) => p.includes(`(${drain}) has no completed operation`))).toBe(true);
    expect(problems.some((p) => p.includes('ledger 90, projected 100'))).toBe(true);
    await assertLedgerMatchesProjections(sys, { external: [drain] });
  });

  it('catches an operation completed twice', async () => {
    const [completed] = (await sys.system.stores.eventStore.readStream(streams.operation(operationID))).filter(
      (e) => e.type === 'OperationCompleted',
    );
    await sys.system.stores.eventStore.append(
      streams.operation(operationID),
      [{ type: 'OperationCompleted', data: completed!.data }],
      'any',
    );
    expect(await problemsNow()).toContain(`operation ${operationID} has 2 OperationCompleted events`);
  });

  // The embedded ledger's own file, altered under it; a chain's history is the chain's to protect.
  it.skipIf(onEvm())('catches an altered ledger row: the chain no longer verifies', async () => {
    const raw = new Database(join(sys.config.DATA_DIR, 'ledger.sqlite'));
    try {
      raw.prepare("UPDATE transactions SET created_at = '2000-01-01T00:00:00.000Z' WHERE sequence = 1").run();
    } finally {
      raw.close();
    }
    expect((await problemsNow()).some((p) => p.startsWith('chain broken at sequence 1'))).toBe(true);
  });
});

import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { Decimal } from '../../src/domain/money.ts';
import type { OperationExecutionStarted } from '../../src/domain/events.ts';
import { walletAddress } from '../../src/ports/ledger.ts';
import { allEvents, assertLedgerMatchesProjections } from '../support/invariants.ts';
import { startTestSystem, type TestSystem } from '../support/system.ts';
import {
  approve,
  issue,
  startPartsSystem,
  waitUntilSettled,
  walletOf,
  type PartsTestSystem,
} from '../support/executor-system.ts';
import { create, FEE_SCHEDULE, funded, keyed, listedSettled, newPhone } from './support.ts';

/**
 * The executor end to end with faults injected in front of the ledger (LEDGER_REJECTION_RATE,
 * LEDGER_TRANSIENT_FAILURE_RATE: src/adapters/ledger/ledger-faults.ts), which refuse before any ledger sees
 * the transaction: the same on every ledger, so not in the `executor-on-evm` project (vitest.config.ts).
 */

describe('executor end to end: failures the ledger port injects', () => {
  // A fresh system per test, without an executor part: each test starts the executors it needs.
  let sys: PartsTestSystem;
  beforeEach(async () => {
    sys = await startPartsSystem({ FEE_SCHEDULE });
  });
  afterEach(async () => sys?.close());

  it('rejection: LEDGER_REJECTION_RATE=1 fails the operation at once and releases the hold', async () => {
    const { distributor, merchant } = await funded(sys, '200');
    const operationID = await create(sys, merchant, {
      operationType: 'cash-out',
      amount: '100',
      distributorToShortCode: distributor.shortCode,
    });
    await approve(sys, merchant, operationID);
    expect(await walletOf(sys, merchant.wallet)).toMatchObject({ held: '101', available: '99' });
    const issuance = await issue(sys, distributor.ref, '5');

    const refusing = await sys.startExecutor({ LEDGER_REJECTION_RATE: '1' });
    try {
      const state = await waitUntilSettled(sys, operationID);
      expect(state.status).toBe('failed');
      expect(state.status === 'failed' && state.lastError).toBe('transaction rejected by the ledger (injected)');
      const item = await listedSettled(sys, merchant, operationID);
      expect(item).toMatchObject({
        status: 'failed',
        lastError: 'transaction rejected by the ledger (injected)',
        blockchainID: '',
      });
      expect(await walletOf(sys, merchant.wallet)).toMatchObject({ balance: '200', held: '0', available: '200' });
      // A rejection is final: one claim, no retry.
      const claims = (await sys.system.stores.eventStore.readStream(`operation-${operationID}`)).filter(
        (e) => e.type === 'OperationExecutionStarted',
      );
      expect(claims).toHaveLength(1);
      // An issuance refused by the ledger fails too, and releases nothing for the issuing account.
      expect((await waitUntilSettled(sys, issuance)).status).toBe('failed');
      const issuanceWallet = await sys.system.stores.eventStore.readStream('wallet-platform_issuance');
      expect(issuanceWallet.some((e) => e.type === 'HoldReleased')).toBe(false);
      await assertLedgerMatchesProjections(sys);
    } finally {
      await refusing.stop();
    }
  });

  it('attempts spent on a ledger that stays unavailable: the operation fails and the hold is released', async () => {
    const { merchant } = await funded(sys, '100');
    const phone = await sys.individual(newPhone());
    const operationID = await create(sys, merchant, { operationType: 'pay-individual', amount: '10', phoneTo: phone });
    await approve(sys, merchant, operationID);

    const down = await sys.startExecutor({
      LEDGER_TRANSIENT_FAILURE_RATE: '1',
      EXECUTOR_MAX_ATTEMPTS: '2',
      EXECUTOR_RETRY_BASE_MS: '10',
    });
    try {
      const state = await waitUntilSettled(sys, operationID);
      expect(state.status).toBe('failed');
      expect(state.status === 'failed' && state.lastError).toBe(
        'gave up after 2 attempts: ledger temporarily unavailable (injected)',
      );
      expect(await walletOf(sys, merchant.wallet)).toMatchObject({ held: '0', available: '100' });
      await assertLedgerMatchesProjections(sys);
    } finally {
      await down.stop();
    }
  });
});

describe('executor end to end: transient ledger faults', () => {
  let sys: TestSystem;
  beforeAll(async () => {
    // Retries after 10 ms at first, at most 200 ms apart: an unlucky operation's run of failures costs no seconds.
    sys = await startTestSystem({
      FEE_SCHEDULE,
      LEDGER_TRANSIENT_FAILURE_RATE: '0.5',
      EXECUTOR_MAX_ATTEMPTS: '50',
      EXECUTOR_RETRY_BASE_MS: '10',
      EXECUTOR_RETRY_MAX_MS: '200',
    });
  });
  afterAll(async () => sys?.close());

  it('LEDGER_TRANSIENT_FAILURE_RATE=0.5 still completes everything, exactly once', async () => {
    const distributor = await keyed(sys, 'distributor');
    const merchant = await keyed(sys, 'merchant');
    const phone = await sys.individual(newPhone());
    expect((await waitUntilSettled(sys, await issue(sys, distributor.ref, '1000'), 55_000)).status).toBe('completed');

    const operations: string[] = [];
    // 21 submits at a failure rate of 0.5: the chance that none fails is 1 in 2 million.
    for (let i = 0; i < 16; i++)
      operations.push(await create(sys, distributor, { operationType: 'cash-in', amount: '10', phoneTo: phone }));
    for (let i = 0; i < 4; i++)
      operations.push(
        await create(sys, distributor, {
          operationType: 'cash-in',
          amount: '25',
          merchantToShortCode: merchant.shortCode,
        }),
      );
    await Promise.all(operations.map((operationID) => approve(sys, distributor, operationID)));

    const states = await Promise.all(operations.map((operationID) => waitUntilSettled(sys, operationID, 55_000)));
    expect(states.map((s) => s.status)).toEqual(operations.map(() => 'completed'));
    for (const operationID of operations) {
      const completions = (await sys.system.stores.eventStore.readStream(`operation-${operationID}`)).filter(
        (e) => e.type === 'OperationCompleted',
      );
      expect(completions).toHaveLength(1);
    }
    // The faults really happened: some operation needed more than one attempt.
    const claims = await allEvents(sys.system.stores.eventStore, ['OperationExecutionStarted']);
    expect(claims.some((e) => (e as unknown as OperationExecutionStarted).data.attempt > 1)).toBe(true);
    expect(new Decimal(await sys.system.ledger.balance(walletAddress(distributor.wallet))).toFixed(2)).toBe('740.00');
    expect(new Decimal(await sys.system.ledger.balance(`individual:${phone}`)).toFixed(2)).toBe('160.00');
    expect(new Decimal(await sys.system.ledger.balance(walletAddress(merchant.wallet))).toFixed(2)).toBe('100.00');
    await assertLedgerMatchesProjections(sys);
  }, 120_000);
});

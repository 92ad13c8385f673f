import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { Decimal } from '../../src/domain/money.ts';
import { allEvents, assertLedgerMatchesProjections } from '../support/invariants.ts';
import { runCliJson } from '../support/cli.ts';
import { call, startTestSystem, waitFor, type TestParty, type TestSystem } from '../support/system.ts';
import {
  approveViaCli,
  operationOf,
  startPartsSystem,
  waitUntilSettled,
  walletOf,
  type PartsTestSystem,
} from '../support/executor-system.ts';
import { create, FEE_SCHEDULE, funded, keyed, list, listedSettled, newPhone, type Keyed } from './support.ts';
import { walletAddress } from '../../src/ports/ledger.ts';
import { onEvm } from '../support/test-ledger.ts';

/**
 * The executor end to end: operations created over HTTP, approved by a checker through the operator CLI (with
 * stores of its own on the same data directory), executed on the embedded ledger by the in-process executor, and seen
 * in the read API. After every test the ledger must agree with the event store and the read models. Faults
 * injected in front of the ledger (rejections, unavailability) are in ledger-faults.e2e.test.ts.
 *
 * Run by executor.e2e.test.ts on the embedded stores and ledger, by executor.on-postgres.e2e.test.ts on PostgreSQL, by executor.on-evm.e2e.test.ts on the EVM chain.
 */
export function executorEndToEnd(): void {
  /** The embedded ledger's ids are bare SHA-256 hex; a chain's transaction hashes 0x-prefixed. */
  const HEX64 = onEvm() ? /^0x[0-9a-f]{64}$/ : /^[0-9a-f]{64}$/;
  const WALLET_OPERATION = /^wo_[0-9a-f]+$/;

  async function apiBalance(sys: Pick<TestSystem, 'baseUrl'>, party: Keyed): Promise<string> {
    const r = await call(sys.baseUrl, 'GET', `/api/v1/${party.ref.type}s/${party.ref.id}/balance`, {
      apiKey: party.apiKey,
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return r.body.balance as string;
  }

  describe('executor end to end: every operation type', () => {
    let sys: TestSystem;
    let distributor: Keyed;
    let merchant: Keyed;
    let otherMerchant: Keyed;
    let phone: string;

    const fees = 'platform:fees';
    const ledgerBalance = async (address: string) => new Decimal(await sys.system.ledger.balance(address));
    const addressOf = (party: TestParty) => walletAddress(party.wallet);

    /** Ledger balances of these addresses now. */
    async function snapshot(addresses: string[]): Promise<Map<string, Decimal>> {
      return new Map(await Promise.all(addresses.map(async (a) => [a, await ledgerBalance(a)] as const)));
    }

    /** Every address moved by exactly its delta on the ledger; parties' API balances equal their ledger balances. */
    async function expectMoved(
      before: Map<string, Decimal>,
      deltas: Record<string, string>,
      parties: Keyed[] = [],
    ): Promise<void> {
      for (const [address, delta] of Object.entries(deltas)) {
        const now = await ledgerBalance(address);
        expect(now.minus(before.get(address)!).toFixed(2), `movement of ${address}`).toBe(
          new Decimal(delta).toFixed(2),
        );
      }
      for (const party of parties) {
        await waitFor(async () => new Decimal(await apiBalance(sys, party)).eq(await ledgerBalance(addressOf(party))));
      }
    }

    /** The ledger transaction of a completed operation, checked against what the list shows. */
    async function expectExecuted(operationID: string, item: any): Promise<void> {
      expect(item.status, JSON.stringify(item)).toBe('completed');
      const tx = await sys.system.ledger.findByOperationID(operationID);
      expect(tx).not.toBeNull();
      expect(item.blockchainID).toMatch(HEX64);
      expect(item.blockchainID).toBe(tx!.blockchainID);
      expect(item.sequenceNumber).toBe(tx!.sequenceNumber);
      expect(item.lastError).toBeNull();
      // Every list links the operation to the wallet operation it became (a merchant's too, an extension).
      expect(item.walletOperationID).toMatch(WALLET_OPERATION);
    }

    beforeAll(async () => {
      sys = await startTestSystem({ FEE_SCHEDULE });
      distributor = await keyed(sys, 'distributor');
      merchant = await keyed(sys, 'merchant');
      otherMerchant = await keyed(sys, 'merchant');
      phone = await sys.individual(newPhone(), 'Ada Obi');
    });
    afterAll(async () => sys?.close());

    it('treasury issue through the CLI funds the distributor', async () => {
      const before = await snapshot([addressOf(distributor), 'platform:issuance']);
      const { operationID } = await runCliJson<{ operationID: string }>([
        'treasury',
        'issue',
        '--to',
        `distributor:${distributor.ref.id}`,
        '--amount',
        '1000',
        '--data-dir',
        sys.config.DATA_DIR,
      ]);
      const state = await waitUntilSettled(sys, operationID);
      expect(state.status).toBe('completed');
      await expectMoved(before, { [addressOf(distributor)]: '1000', 'platform:issuance': '-1000' }, [distributor]);
      expect(await apiBalance(sys, distributor)).toBe('1000.00');
      await assertLedgerMatchesProjections(sys);
    });

    it('cash-in to a phone: distributor to individual', async () => {
      const before = await snapshot([addressOf(distributor), `individual:${phone}`]);
      const operationID = await create(sys, distributor, {
        operationType: 'cash-in',
        amount: '300',
        phoneTo: phone,
        memo: 'float top-up',
      });
      expect((await list(sys, distributor, 'operations')).find((op) => op.operationID === operationID)?.status).toBe(
        'pending',
      );

      await approveViaCli(sys, distributor, operationID);
      const item = await listedSettled(sys, distributor, operationID);

      await expectExecuted(operationID, item);
      expect(item).toMatchObject({ operationType: 'cash-in', amount: '300.00', phoneTo: phone, memo: 'float top-up' });
      await expectMoved(before, { [addressOf(distributor)]: '-300', [`individual:${phone}`]: '300' }, [distributor]);
      await assertLedgerMatchesProjections(sys);
    });

    it('cash-in to a merchant: shows in the merchant operations and payments lists', async () => {
      const before = await snapshot([addressOf(distributor), addressOf(merchant), fees]);
      const operationID = await create(sys, distributor, {
        operationType: 'cash-in',
        amount: '400',
        merchantToShortCode: merchant.shortCode,
      });
      await approveViaCli(sys, distributor, operationID);
      const item = await listedSettled(sys, distributor, operationID);

      await expectExecuted(operationID, item);
      expect(item).toMatchObject({
        operationType: 'cash-in',
        amount: '400.00',
        merchantTo: merchant.ref.id,
        merchantShortCode: Number(merchant.shortCode),
      });
      await expectMoved(before, { [addressOf(distributor)]: '-400', [addressOf(merchant)]: '400', [fees]: '0' }, [
        distributor,
        merchant,
      ]);

      // The receiving merchant's operations list shows the completed cash-in.
      const received = await listedSettled(sys, merchant, operationID);
      expect(received).toMatchObject({
        operationType: 'cash-in',
        amount: '400.00',
        fee: '0.00',
        distributorTo: distributor.ref.id,
        distributorName: distributor.name,
        status: 'completed',
      });
      await expectExecuted(operationID, received);

      // And its payments list, as a cash-in from a distributor, under the wallet operation id.
      let payment: any;
      await waitFor(
        async () =>
          (payment = (await list(sys, merchant, 'payments')).find((p) => p.blockchainID === item.blockchainID)) !==
          undefined,
      );
      expect(payment).toEqual({
        operationID: item.walletOperationID,
        type: 'cash-in',
        amount: '400.00',
        from: distributor.name,
        fromType: 'distributor',
        memo: null,
        blockchainID: item.blockchainID,
        createdAt: expect.any(String),
        completedAt: expect.any(String),
        sourceOperationID: operationID,
      });
      await assertLedgerMatchesProjections(sys);
    });

    it('cash-out-fulfillment: individual to distributor', async () => {
      const before = await snapshot([addressOf(distributor), `individual:${phone}`]);
      const operationID = await create(sys, distributor, {
        operationType: 'cash-out-fulfillment',
        amount: '50',
        phoneFrom: phone,
        cashOutFulfillmentType: 'cash',
        cashOutFulfillmentID: 'RCPT-1',
      });
      await approveViaCli(sys, distributor, operationID);
      const item = await listedSettled(sys, distributor, operationID);

      await expectExecuted(operationID, item);
      expect(item).toMatchObject({
        operationType: 'cash-out-fulfillment',
        amount: '50.00',
        phoneFrom: phone,
        cashOutFulfillmentType: 'cash',
        cashOutFulfillmentID: 'RCPT-1',
      });
      await expectMoved(before, { [addressOf(distributor)]: '50', [`individual:${phone}`]: '-50' }, [distributor]);
      await assertLedgerMatchesProjections(sys);
    });

    it('cash-out: merchant to distributor, with the 1% fee to the platform', async () => {
      const before = await snapshot([addressOf(distributor), addressOf(merchant), fees]);
      const operationID = await create(sys, merchant, {
        operationType: 'cash-out',
        amount: '100',
        distributorToShortCode: distributor.shortCode,
      });
      await approveViaCli(sys, merchant, operationID);
      const item = await listedSettled(sys, merchant, operationID);

      await expectExecuted(operationID, item);
      expect(item).toMatchObject({
        operationType: 'cash-out',
        amount: '100.00',
        fee: '1.00',
        distributorTo: distributor.ref.id,
      });
      await expectMoved(before, { [addressOf(merchant)]: '-101', [addressOf(distributor)]: '100', [fees]: '1' }, [
        distributor,
        merchant,
      ]);
      const tx = await sys.system.ledger.findByOperationID(operationID);
      expect(tx!.legs).toEqual([
        { from: addressOf(merchant), to: addressOf(distributor), amount: '100.00' },
        { from: addressOf(merchant), to: fees, amount: '1.00' },
      ]);
      await assertLedgerMatchesProjections(sys);
    });

    it('pay-merchant: merchant to merchant with the flat fee; the payee lists it with fromShortCode', async () => {
      const before = await snapshot([addressOf(merchant), addressOf(otherMerchant), fees]);
      const operationID = await create(sys, merchant, {
        operationType: 'pay-merchant',
        amount: '50',
        merchantToShortCode: otherMerchant.shortCode,
        memo: 'invoice 7',
      });
      await approveViaCli(sys, merchant, operationID);
      const item = await listedSettled(sys, merchant, operationID);

      await expectExecuted(operationID, item);
      expect(item).toMatchObject({
        operationType: 'pay-merchant',
        amount: '50.00',
        fee: '1.00',
        merchantTo: otherMerchant.ref.id,
        merchantName: otherMerchant.name,
        memo: 'invoice 7',
      });
      await expectMoved(before, { [addressOf(merchant)]: '-51', [addressOf(otherMerchant)]: '50', [fees]: '1' }, [
        merchant,
        otherMerchant,
      ]);

      let payment: any;
      await waitFor(
        async () =>
          (payment = (await list(sys, otherMerchant, 'payments')).find((p) => p.blockchainID === item.blockchainID)) !==
          undefined,
      );
      expect(payment).toEqual({
        operationID: item.walletOperationID,
        type: 'payment',
        amount: '50.00',
        from: merchant.name,
        fromType: 'merchant',
        fromShortCode: Number(merchant.shortCode),
        memo: 'invoice 7',
        blockchainID: item.blockchainID,
        createdAt: expect.any(String),
        completedAt: expect.any(String),
        sourceOperationID: operationID,
      });
      // A payment made is not a payment received.
      expect((await list(sys, merchant, 'payments')).some((p) => p.blockchainID === item.blockchainID)).toBe(false);
      await assertLedgerMatchesProjections(sys);
    });

    it('pay-individual: merchant to individual (no fee in the schedule)', async () => {
      const before = await snapshot([addressOf(merchant), `individual:${phone}`, fees]);
      const operationID = await create(sys, merchant, {
        operationType: 'pay-individual',
        amount: '20',
        phoneTo: phone,
      });
      await approveViaCli(sys, merchant, operationID);
      const item = await listedSettled(sys, merchant, operationID);

      await expectExecuted(operationID, item);
      expect(item).toMatchObject({ operationType: 'pay-individual', amount: '20.00', fee: '0.00', phoneTo: phone });
      await expectMoved(before, { [addressOf(merchant)]: '-20', [`individual:${phone}`]: '20', [fees]: '0' }, [
        merchant,
      ]);
      await assertLedgerMatchesProjections(sys);
    });

    it('individual pay (wallet app, through the CLI): executed without a checker, listed as a payment from an individual', async () => {
      const before = await snapshot([addressOf(merchant), `individual:${phone}`]);
      const { operationID } = await runCliJson<{ operationID: string }>([
        'individual',
        'pay',
        '--from',
        phone,
        '--to-merchant',
        merchant.shortCode,
        '--amount',
        '30',
        '--memo',
        'lunch',
        '--data-dir',
        sys.config.DATA_DIR,
      ]);
      const state = await waitUntilSettled(sys, operationID);
      expect(state.status).toBe('completed');
      await expectMoved(before, { [addressOf(merchant)]: '30', [`individual:${phone}`]: '-30' }, [merchant]);

      const tx = await sys.system.ledger.findByOperationID(operationID);
      let payment: any;
      await waitFor(
        async () =>
          (payment = (await list(sys, merchant, 'payments')).find((p) => p.blockchainID === tx!.blockchainID)) !==
          undefined,
      );
      expect(payment).toEqual({
        operationID: expect.stringMatching(WALLET_OPERATION),
        type: 'payment',
        amount: '30.00',
        from: phone,
        fromType: 'individual',
        memo: 'lunch',
        blockchainID: tx!.blockchainID,
        createdAt: expect.any(String),
        completedAt: expect.any(String),
        sourceOperationID: operationID,
      });
      // The merchant's own operations list does not show payments it received from individuals.
      expect((await list(sys, merchant, 'operations')).some((op) => op.operationID === operationID)).toBe(false);
      // The CLI reads the same balance from the ledger.
      const cli = await runCliJson<{ balance: string }>([
        'balance',
        '--party',
        `individual:${phone}`,
        '--data-dir',
        sys.config.DATA_DIR,
      ]);
      expect(cli.balance).toBe((await ledgerBalance(`individual:${phone}`)).toFixed(2));
      await assertLedgerMatchesProjections(sys);
    });

    it('in the end: every balance as computed by hand, and one ledger transaction per operation', async () => {
      // 1000 issued; 300 to the phone, 400 to the merchant, 50 back from the phone, 100 + 1 fee cash-out,
      // 50 + 1 fee to the other merchant, 20 to the phone, 30 from the phone.
      expect(await apiBalance(sys, distributor)).toBe('450.00');
      expect(await apiBalance(sys, merchant)).toBe('258.00');
      expect(await apiBalance(sys, otherMerchant)).toBe('50.00');
      expect((await ledgerBalance(`individual:${phone}`)).toFixed(2)).toBe('240.00');
      expect((await ledgerBalance(fees)).toFixed(2)).toBe('2.00');
      const completed = await allEvents(sys.system.stores.eventStore, ['OperationCompleted']);
      expect(completed).toHaveLength(8);
      expect((await sys.system.ledger.transactions()).length).toBe(8);
      await assertLedgerMatchesProjections(sys);
    });
  });

  describe('executor end to end: failures', () => {
    // A fresh system per test, without an executor part: each test starts the executors it needs.
    let sys: PartsTestSystem;
    beforeEach(async () => {
      sys = await startPartsSystem({ FEE_SCHEDULE });
    });
    afterEach(async () => sys?.close());

    it("the payer's funds leave between approval and execution: the operation fails with lastError and the hold is released", async () => {
      const { merchant } = await funded(sys, '100');
      const phone = await sys.individual(newPhone());
      const operationID = await create(sys, merchant, {
        operationType: 'pay-individual',
        amount: '60',
        phoneTo: phone,
      });
      await approveViaCli(sys, merchant, operationID);
      expect((await operationOf(sys, operationID)).status).toBe('approved');
      expect(await walletOf(sys, merchant.wallet)).toMatchObject({ balance: '100', held: '60', available: '40' });

      // Behind the write side's back, the merchant's money leaves on the ledger.
      const drain = `drain_${randomUUID()}`;
      await sys.system.ledger.submit({
        operationID: drain,
        legs: [{ from: walletAddress(merchant.wallet), to: 'individual:+2348120000000', amount: '50.00' }],
      });

      const executor = await sys.startExecutor();
      try {
        const state = await waitUntilSettled(sys, operationID);
        expect(state.status).toBe('failed');
        const item = await listedSettled(sys, merchant, operationID);
        expect(item).toMatchObject({
          status: 'failed',
          lastError: expect.stringContaining('insufficient funds'),
          blockchainID: '',
          sequenceNumber: null,
        });
        expect(await sys.system.ledger.findByOperationID(operationID)).toBeNull();
        // The hold is given back: the available balance is whole again.
        expect(await walletOf(sys, merchant.wallet)).toMatchObject({ held: '0', available: '100' });
        expect(new Decimal(await sys.system.ledger.balance(walletAddress(merchant.wallet))).toFixed(2)).toBe('50.00');
        await assertLedgerMatchesProjections(sys, { external: [drain] });
      } finally {
        await executor.stop();
      }
    });
  });
}

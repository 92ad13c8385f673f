import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { chainID, openEmbeddedLedger } from '../../../src/adapters/ledger/embedded-ledger.ts';
import { withSimulatedLedgerFaults, type LedgerFaults } from '../../../src/adapters/ledger/ledger-faults.ts';
import { Decimal } from '../../../src/domain/money.ts';
import {
  ISSUANCE_ADDRESS,
  LedgerDuplicateError,
  LedgerRejectedError,
  LedgerUnavailableError,
  type Ledger,
  type LedgerLeg,
  type LedgerTransaction,
} from '../../../src/ports/ledger.ts';
import { allLedgerTransactions, chainProblems } from '../../support/invariants.ts';
import { tempDir } from '../../support/temp-dir.ts';

/**
 * The embedded ledger, the stand-in for the blockchain: atomic multi-leg transactions, no overdraft except on
 * the issuing account, one transaction per operation id, a contiguous hash chain, durability, and the faults
 * it can inject for the executor's tests.
 */

const D = 'distributor:d-1';
const M = 'merchant:m-1';
const P = 'individual:+2348123456781';
const FEES = 'platform:fees';

const GENESIS = '0'.repeat(64);

describe('embedded ledger', () => {
  let dir: ReturnType<typeof tempDir>;
  let file: string;
  const open: Ledger[] = [];
  let seq = 0;
  const opID = () => `op_test_${++seq}`;

  /** A ledger on the test's file, with a fixed clock by default so that content is predictable. */
  function ledgerOn(options: { faults?: LedgerFaults; random?: () => number; clock?: () => Date } = {}): Ledger {
    const embedded = openEmbeddedLedger({ file, clock: options.clock ?? (() => new Date('2026-01-02T03:04:05.000Z')) });
    const ledger = withSimulatedLedgerFaults(embedded, options.faults ?? {}, options.random);
    open.push(ledger);
    return ledger;
  }
  const issue = (ledger: Ledger, to: string, amount: string, operationID = opID()) =>
    ledger.submit({ operationID, legs: [{ from: ISSUANCE_ADDRESS, to, amount }] });
  const balanceOf = async (ledger: Ledger, wallet: string) => new Decimal(await ledger.balance(wallet));

  beforeEach(() => {
    dir = tempDir('ledger-test-');
    file = join(dir.path, 'ledger.sqlite');
  });
  afterEach(async () => {
    await Promise.all(open.splice(0).map((ledger) => ledger.close()));
    dir.cleanup();
  });

  describe('submit', () => {
    it('moves every leg of a transaction and returns it with its sequence number and id', async () => {
      const ledger = ledgerOn();
      await issue(ledger, D, '100.00');
      const operationID = opID();
      const legs: LedgerLeg[] = [
        { from: D, to: M, amount: '60.00' },
        { from: D, to: FEES, amount: '1.50' },
      ];

      const tx = await ledger.submit({ operationID, legs });

      expect(tx).toEqual({
        blockchainID: expect.stringMatching(/^[0-9a-f]{64}$/),
        sequenceNumber: 2,
        operationID,
        legs,
        createdAt: '2026-01-02T03:04:05.000Z',
      });
      expect((await balanceOf(ledger, D)).toFixed(2)).toBe('38.50');
      expect((await balanceOf(ledger, M)).toFixed(2)).toBe('60.00');
      expect((await balanceOf(ledger, FEES)).toFixed(2)).toBe('1.50');
    });

    it('refuses an overdraft with LedgerRejectedError and moves none of the legs', async () => {
      const ledger = ledgerOn();
      await issue(ledger, D, '100.00');
      // The first leg alone would fit; together they do not: all or nothing.
      const refused = ledger.submit({
        operationID: opID(),
        legs: [
          { from: D, to: M, amount: '60.00' },
          { from: D, to: P, amount: '40.01' },
        ],
      });

      await expect(refused).rejects.toBeInstanceOf(LedgerRejectedError);
      await expect(refused).rejects.toMatchObject({ code: 'LEDGER_REJECTED', message: expect.stringContaining(D) });
      expect((await balanceOf(ledger, D)).toFixed(2)).toBe('100.00');
      expect((await balanceOf(ledger, M)).isZero()).toBe(true);
      expect((await balanceOf(ledger, P)).isZero()).toBe(true);
      expect(await allLedgerTransactions(ledger)).toHaveLength(1);
    });

    it('refuses a transfer out of a wallet that never received anything', async () => {
      const ledger = ledgerOn();
      await expect(
        ledger.submit({ operationID: opID(), legs: [{ from: M, to: P, amount: '0.01' }] }),
      ).rejects.toBeInstanceOf(LedgerRejectedError);
      expect(await allLedgerTransactions(ledger)).toEqual([]);
    });

    it('lets a payer spend exactly its whole balance', async () => {
      const ledger = ledgerOn();
      await issue(ledger, D, '100.00');
      await ledger.submit({
        operationID: opID(),
        legs: [
          { from: D, to: M, amount: '99.00' },
          { from: D, to: FEES, amount: '1.00' },
        ],
      });
      expect((await balanceOf(ledger, D)).isZero()).toBe(true);
    });

    it('lets the issuing account, and only it, go below zero; redeeming credits it back', async () => {
      const ledger = ledgerOn();
      await issue(ledger, D, '250.00');
      await issue(ledger, M, '50.00');
      expect((await balanceOf(ledger, ISSUANCE_ADDRESS)).toFixed(2)).toBe('-300.00');

      await ledger.submit({ operationID: opID(), legs: [{ from: D, to: ISSUANCE_ADDRESS, amount: '100.00' }] });
      expect((await balanceOf(ledger, ISSUANCE_ADDRESS)).toFixed(2)).toBe('-200.00');
      expect((await balanceOf(ledger, D)).toFixed(2)).toBe('150.00');
    });

    it('refuses a leg to the same wallet and a negative amount, writing nothing', async () => {
      const ledger = ledgerOn();
      await issue(ledger, D, '100.00');
      await expect(
        ledger.submit({ operationID: opID(), legs: [{ from: D, to: D, amount: '1.00' }] }),
      ).rejects.toBeInstanceOf(LedgerRejectedError);
      await expect(
        ledger.submit({ operationID: opID(), legs: [{ from: M, to: D, amount: '-5.00' }] }),
      ).rejects.toBeInstanceOf(LedgerRejectedError);
      expect(await allLedgerTransactions(ledger)).toHaveLength(1);
      expect((await balanceOf(ledger, D)).toFixed(2)).toBe('100.00');
    });

    // The port: "amount: Decimal string, > 0". A zero leg is no movement of money and must be refused.
    it('refuses a leg of zero amount (the port requires amount > 0)', async () => {
      const ledger = ledgerOn();
      await issue(ledger, D, '100.00');
      await expect(
        ledger.submit({ operationID: opID(), legs: [{ from: D, to: M, amount: '0.00' }] }),
      ).rejects.toBeInstanceOf(LedgerRejectedError);
      expect(await allLedgerTransactions(ledger)).toHaveLength(1);
    });
  });

  describe('one transaction per operation id', () => {
    it('a second submit for the same operation id throws LedgerDuplicateError carrying the first, and moves nothing', async () => {
      const ledger = ledgerOn();
      const operationID = opID();
      const first = await issue(ledger, D, '100.00', operationID);

      const again = ledger.submit({ operationID, legs: [{ from: ISSUANCE_ADDRESS, to: D, amount: '100.00' }] });
      await expect(again).rejects.toBeInstanceOf(LedgerDuplicateError);
      const error = (await again.catch((e: unknown) => e)) as LedgerDuplicateError;
      expect(error.code).toBe('LEDGER_DUPLICATE');
      expect(error.existing).toEqual(first);

      // Even with different legs: the operation id alone decides.
      const different = ledger.submit({ operationID, legs: [{ from: ISSUANCE_ADDRESS, to: M, amount: '5.00' }] });
      await expect(different).rejects.toBeInstanceOf(LedgerDuplicateError);

      expect(await allLedgerTransactions(ledger)).toEqual([first]);
      expect((await balanceOf(ledger, D)).toFixed(2)).toBe('100.00');
      expect((await balanceOf(ledger, M)).isZero()).toBe(true);
    });

    it('a duplicate is reported even when the retry would now overdraw', async () => {
      const ledger = ledgerOn();
      await issue(ledger, D, '100.00');
      const operationID = opID();
      const first = await ledger.submit({ operationID, legs: [{ from: D, to: M, amount: '100.00' }] });
      const again = await ledger
        .submit({ operationID, legs: [{ from: D, to: M, amount: '100.00' }] })
        .catch((e: unknown) => e);
      expect(again).toBeInstanceOf(LedgerDuplicateError);
      expect((again as LedgerDuplicateError).existing).toEqual(first);
    });

    it('findByOperationID returns the transaction, or null for an operation never executed', async () => {
      const ledger = ledgerOn();
      const operationID = opID();
      const tx = await issue(ledger, D, '10.00', operationID);
      expect(await ledger.findByOperationID(operationID)).toEqual(tx);
      expect(await ledger.findByOperationID('op_never')).toBeNull();
    });

    it('a refused transaction leaves its operation id free', async () => {
      const ledger = ledgerOn();
      const operationID = opID();
      await expect(ledger.submit({ operationID, legs: [{ from: D, to: M, amount: '10.00' }] })).rejects.toBeInstanceOf(
        LedgerRejectedError,
      );
      expect(await ledger.findByOperationID(operationID)).toBeNull();
      await issue(ledger, D, '10.00');
      const tx = await ledger.submit({ operationID, legs: [{ from: D, to: M, amount: '10.00' }] });
      expect(await ledger.findByOperationID(operationID)).toEqual(tx);
    });
  });

  describe('balances', () => {
    it('is zero for a wallet never used', async () => {
      const ledger = ledgerOn();
      expect((await balanceOf(ledger, 'merchant:nobody')).isZero()).toBe(true);
    });

    it('keeps decimals exact across many small movements', async () => {
      const ledger = ledgerOn();
      for (let i = 0; i < 10; i++) await issue(ledger, D, '0.10');
      for (let i = 0; i < 3; i++)
        await ledger.submit({ operationID: opID(), legs: [{ from: D, to: M, amount: '0.33' }] });
      expect((await balanceOf(ledger, D)).toFixed(2)).toBe('0.01');
      expect((await balanceOf(ledger, M)).toFixed(2)).toBe('0.99');
      expect((await balanceOf(ledger, ISSUANCE_ADDRESS)).toFixed(2)).toBe('-1.00');
    });
  });

  describe('transactions', () => {
    it('pages in sequence order from a sequence number (inclusive)', async () => {
      const ledger = ledgerOn();
      const submitted: LedgerTransaction[] = [];
      for (let i = 0; i < 7; i++) submitted.push(await issue(ledger, D, '1.00'));

      expect(await ledger.transactions()).toEqual(submitted);
      expect(await ledger.transactions({ maxCount: 3 })).toEqual(submitted.slice(0, 3));
      expect(await ledger.transactions({ fromSequence: 4, maxCount: 3 })).toEqual(submitted.slice(3, 6));
      expect(await ledger.transactions({ fromSequence: 7, maxCount: 3 })).toEqual(submitted.slice(6));
      expect(await ledger.transactions({ fromSequence: 8 })).toEqual([]);
      expect(await ledger.transactions({ fromSequence: 6 })).toEqual(submitted.slice(5));
    });

    it('numbers transactions 1, 2, 3… without gaps, whatever was refused in between', async () => {
      const ledger = ledgerOn();
      const duplicated = opID();
      await issue(ledger, D, '5.00', duplicated);
      await expect(
        ledger.submit({ operationID: opID(), legs: [{ from: M, to: P, amount: '1.00' }] }),
      ).rejects.toBeInstanceOf(LedgerRejectedError);
      await expect(issue(ledger, D, '5.00', duplicated)).rejects.toBeInstanceOf(LedgerDuplicateError);
      await issue(ledger, M, '5.00');
      await expect(
        ledger.submit({ operationID: opID(), legs: [{ from: P, to: M, amount: '1.00' }] }),
      ).rejects.toBeInstanceOf(LedgerRejectedError);
      await ledger.submit({ operationID: opID(), legs: [{ from: M, to: P, amount: '1.00' }] });

      expect((await allLedgerTransactions(ledger)).map((tx) => tx.sequenceNumber)).toEqual([1, 2, 3]);
    });

    it('concurrent submits (one commit for the lot) each see the ones before: in order, a duplicate and an overdraft refused alone', async () => {
      const ledger = ledgerOn();
      await issue(ledger, D, '10.00');
      const twice = opID();
      const outcomes = await Promise.allSettled([
        ledger.submit({ operationID: twice, legs: [{ from: D, to: M, amount: '6.00' }] }),
        // Only 4.00 left once the first is applied: refused, though the file's balance before the batch was 10.00.
        ledger.submit({ operationID: opID(), legs: [{ from: D, to: P, amount: '5.00' }] }),
        ledger.submit({ operationID: twice, legs: [{ from: D, to: M, amount: '6.00' }] }),
        ledger.submit({ operationID: opID(), legs: [{ from: D, to: P, amount: '4.00' }] }),
        issue(ledger, M, '1.00'),
      ]);

      expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'rejected', 'fulfilled', 'fulfilled']);
      expect((outcomes[1] as PromiseRejectedResult).reason).toBeInstanceOf(LedgerRejectedError);
      const duplicate = (outcomes[2] as PromiseRejectedResult).reason as LedgerDuplicateError;
      expect(duplicate).toBeInstanceOf(LedgerDuplicateError);
      expect(duplicate.existing).toEqual((outcomes[0] as PromiseFulfilledResult<LedgerTransaction>).value);
      const all = await allLedgerTransactions(ledger);
      expect(all.map((tx) => tx.sequenceNumber)).toEqual([1, 2, 3, 4]);
      expect(all.slice(1)).toEqual(
        [0, 3, 4].map((i) => (outcomes[i] as PromiseFulfilledResult<LedgerTransaction>).value),
      );
      expect(chainProblems(all)).toEqual([]);
      expect((await balanceOf(ledger, D)).toFixed(2)).toBe('0.00');
      expect((await balanceOf(ledger, M)).toFixed(2)).toBe('7.00');
      expect((await balanceOf(ledger, P)).toFixed(2)).toBe('4.00');
    });

    it('a batch that cannot commit fails every submit in it as unavailable, writes nothing, and the ledger works again', async () => {
      const ledger = ledgerOn();
      await issue(ledger, D, '10.00');
      // A second connection holds the write lock past the budget: the whole batch waits, then fails retryably.
      const short = openEmbeddedLedger({ file, busyBudgetMs: 100 });
      open.push(short);
      const locker = new Database(file);
      locker.exec('BEGIN IMMEDIATE');
      try {
        const outcomes = await Promise.allSettled([
          issue(short, M, '1.00'),
          short.submit({ operationID: opID(), legs: [{ from: D, to: P, amount: '1.00' }] }),
        ]);
        expect(outcomes.map((o) => (o.status === 'rejected' ? o.reason : o.value))).toEqual([
          expect.any(LedgerUnavailableError),
          expect.any(LedgerUnavailableError),
        ]);
      } finally {
        locker.exec('ROLLBACK');
        locker.close();
      }
      expect(await allLedgerTransactions(ledger)).toHaveLength(1);
      await issue(short, M, '1.00');
      expect((await allLedgerTransactions(ledger)).map((tx) => tx.sequenceNumber)).toEqual([1, 2]);
    });

    it('two connections on one file write one contiguous chain', async () => {
      const a = ledgerOn({ clock: () => new Date() });
      const b = ledgerOn({ clock: () => new Date() });
      for (let i = 0; i < 10; i++) await issue(i % 2 === 0 ? a : b, D, '1.00');
      const all = await allLedgerTransactions(a);
      expect(all.map((tx) => tx.sequenceNumber)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
      expect(chainProblems(all)).toEqual([]);
      expect((await balanceOf(b, D)).toFixed(2)).toBe('10.00');
    });
  });

  describe('hash chain', () => {
    it('each id is chainID(previous id, content), starting from the zero id', async () => {
      let tick = 0;
      const ledger = ledgerOn({ clock: () => new Date(Date.UTC(2026, 0, 1, 0, 0, tick++)) });
      await issue(ledger, D, '100.00');
      await ledger.submit({
        operationID: opID(),
        legs: [
          { from: D, to: M, amount: '40.00' },
          { from: D, to: FEES, amount: '0.40' },
        ],
      });
      await ledger.submit({ operationID: opID(), legs: [{ from: M, to: P, amount: '10.00' }] });

      const all = await allLedgerTransactions(ledger);
      expect(all).toHaveLength(3);
      let previous = GENESIS;
      for (const tx of all) {
        const { blockchainID, ...content } = tx;
        expect(blockchainID).toBe(chainID(previous, content));
        previous = blockchainID;
      }
      expect(chainProblems(all)).toEqual([]);
      // Ids differ even for identical content at different places in the chain.
      expect(new Set(all.map((tx) => tx.blockchainID)).size).toBe(3);
    });

    it('chainID depends on the previous id and on every part of the content', () => {
      const content = {
        sequenceNumber: 1,
        operationID: 'op_1',
        legs: [{ from: ISSUANCE_ADDRESS, to: D, amount: '1.00' }],
        createdAt: '2026-01-01T00:00:00.000Z',
      };
      const base = chainID(GENESIS, content);
      expect(base).toMatch(/^[0-9a-f]{64}$/);
      expect(chainID(GENESIS, { ...content })).toBe(base);
      expect(chainID('1'.repeat(64), content)).not.toBe(base);
      expect(chainID(GENESIS, { ...content, sequenceNumber: 2 })).not.toBe(base);
      expect(chainID(GENESIS, { ...content, operationID: 'op_2' })).not.toBe(base);
      expect(chainID(GENESIS, { ...content, legs: [{ from: ISSUANCE_ADDRESS, to: D, amount: '1.01' }] })).not.toBe(
        base,
      );
      expect(chainID(GENESIS, { ...content, legs: [{ from: ISSUANCE_ADDRESS, to: M, amount: '1.00' }] })).not.toBe(
        base,
      );
      expect(chainID(GENESIS, { ...content, createdAt: '2026-01-01T00:00:00.001Z' })).not.toBe(base);
    });

    it('altering a row in the SQLite file breaks verification from that row on', async () => {
      const ledger = ledgerOn();
      for (let i = 0; i < 5; i++) await issue(ledger, D, '10.00');
      await ledger.close();

      const raw = new Database(file);
      try {
        raw
          .prepare('UPDATE transactions SET legs = ? WHERE sequence = 3')
          .run(JSON.stringify([{ from: ISSUANCE_ADDRESS, to: M, amount: '10.00' }]));
      } finally {
        raw.close();
      }

      const reopened = ledgerOn();
      const problems = chainProblems(await allLedgerTransactions(reopened));
      expect(problems).toHaveLength(1);
      expect(problems[0]).toContain('sequence 3');
    });

    it('removing a row breaks verification too', async () => {
      const ledger = ledgerOn();
      for (let i = 0; i < 4; i++) await issue(ledger, D, '10.00');
      await ledger.close();

      const raw = new Database(file);
      try {
        raw.prepare('DELETE FROM transactions WHERE sequence = 2').run();
      } finally {
        raw.close();
      }
      const problems = chainProblems(await allLedgerTransactions(ledgerOn()));
      expect(problems.length).toBeGreaterThan(0);
    });
  });

  describe('durability', () => {
    it('keeps transactions, balances and the duplicate guard across a close and reopen, and continues the chain', async () => {
      const first = ledgerOn({ clock: () => new Date() });
      const issued = await issue(first, D, '100.00');
      const paid = await first.submit({ operationID: opID(), legs: [{ from: D, to: M, amount: '30.00' }] });
      await first.close();

      const again = ledgerOn({ clock: () => new Date() });
      expect(await allLedgerTransactions(again)).toEqual([issued, paid]);
      expect(await again.findByOperationID(paid.operationID)).toEqual(paid);
      expect((await balanceOf(again, D)).toFixed(2)).toBe('70.00');
      expect((await balanceOf(again, M)).toFixed(2)).toBe('30.00');
      await expect(
        again.submit({ operationID: paid.operationID, legs: [{ from: D, to: M, amount: '30.00' }] }),
      ).rejects.toBeInstanceOf(LedgerDuplicateError);
      await expect(
        again.submit({ operationID: opID(), legs: [{ from: D, to: M, amount: '70.01' }] }),
      ).rejects.toBeInstanceOf(LedgerRejectedError);

      const next = await again.submit({ operationID: opID(), legs: [{ from: M, to: P, amount: '5.00' }] });
      expect(next.sequenceNumber).toBe(3);
      expect(chainProblems(await allLedgerTransactions(again))).toEqual([]);
    });

    it('close is idempotent', async () => {
      const ledger = ledgerOn();
      await ledger.close();
      await expect(ledger.close()).resolves.toBeUndefined();
    });
  });

  describe('injected faults', () => {
    it('transientFailureRate 1: LedgerUnavailableError and nothing written', async () => {
      const healthy = ledgerOn();
      await issue(healthy, D, '100.00');
      const flaky = ledgerOn({ faults: { transientFailureRate: 1 }, random: () => 0.999 });
      const operationID = opID();

      const failed = flaky.submit({ operationID, legs: [{ from: D, to: M, amount: '10.00' }] });
      await expect(failed).rejects.toBeInstanceOf(LedgerUnavailableError);
      await expect(failed).rejects.toMatchObject({ code: 'LEDGER_UNAVAILABLE' });
      expect(await flaky.findByOperationID(operationID)).toBeNull();
      expect(await allLedgerTransactions(flaky)).toHaveLength(1);
      expect((await balanceOf(flaky, D)).toFixed(2)).toBe('100.00');
      // The same operation goes through once the ledger is back.
      const tx = await healthy.submit({ operationID, legs: [{ from: D, to: M, amount: '10.00' }] });
      expect(tx.sequenceNumber).toBe(2);
    });

    it('rejectionRate 1: LedgerRejectedError and nothing written', async () => {
      const healthy = ledgerOn();
      await issue(healthy, D, '100.00');
      const refusing = ledgerOn({ faults: { rejectionRate: 1 }, random: () => 0.999 });
      const operationID = opID();

      await expect(
        refusing.submit({ operationID, legs: [{ from: D, to: M, amount: '10.00' }] }),
      ).rejects.toBeInstanceOf(LedgerRejectedError);
      // Even the issuing account's transactions are refused.
      await expect(issue(refusing, D, '1.00')).rejects.toBeInstanceOf(LedgerRejectedError);
      expect(await refusing.findByOperationID(operationID)).toBeNull();
      expect(await allLedgerTransactions(refusing)).toHaveLength(1);
      expect((await balanceOf(refusing, D)).toFixed(2)).toBe('100.00');
    });

    it('a rate is a probability drawn from `random`: below it fails, at or above it passes', async () => {
      let draw = 0;
      const draws = [0.49, 0.5, 0.9];
      const ledger = ledgerOn({ faults: { transientFailureRate: 0.5 }, random: () => draws[draw++]! });
      await expect(issue(ledger, D, '1.00')).rejects.toBeInstanceOf(LedgerUnavailableError);
      await issue(ledger, D, '1.00');
      await issue(ledger, D, '1.00');
      expect(await allLedgerTransactions(ledger)).toHaveLength(2);
    });

    it('no faults configured: random is never drawn', async () => {
      const ledger = ledgerOn({
        random: () => {
          throw new Error('random drawn without faults');
        },
      });
      await issue(ledger, D, '1.00');
    });

    it('latencyMs delays every submit', async () => {
      const ledger = ledgerOn({ faults: { latencyMs: 60 } });
      const started = performance.now();
      await issue(ledger, D, '1.00');
      expect(performance.now() - started).toBeGreaterThanOrEqual(55);
    });
  });
});

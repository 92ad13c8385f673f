import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openEmbeddedLedger } from '../../../src/adapters/ledger/embedded-ledger.ts';
import { openLedger } from '../../../src/adapters/open-stores.ts';
import { loadConfig } from '../../../src/config.ts';
import { withSimulatedLedgerFaults } from '../../../src/adapters/ledger/ledger-faults.ts';
import {
  ISSUANCE_ADDRESS,
  LedgerDuplicateError,
  LedgerRejectedError,
  LedgerUnavailableError,
  LedgerVoidedError,
  type Ledger,
  type LedgerTransaction,
} from '../../../src/ports/ledger.ts';
import { allLedgerTransactions, chainProblems } from '../../support/invariants.ts';
import { tempDir } from '../../support/temp-dir.ts';

/**
 * The embedded ledger as the arbiter of an operation's fate: a void and a transfer for one operation id are
 * serialized by the ledger's own write lock, so exactly one of them commits, whichever connection (process)
 * sent it and however long it was paused.
 */

const D = 'distributor:d-1';
const M = 'merchant:m-1';
const AT = '2026-01-02T03:04:05.000Z';

describe('embedded ledger: void', () => {
  let dir: ReturnType<typeof tempDir>;
  let file: string;
  const open: Ledger[] = [];
  let seq = 0;
  const opID = () => `op_void_${++seq}`;

  function ledgerOn(options: { busyBudgetMs?: number } = {}): Ledger {
    const ledger = openEmbeddedLedger({ file, clock: () => new Date(AT), ...options });
    open.push(ledger);
    return ledger;
  }
  const issue = (ledger: Ledger, operationID = opID(), amount = '10.00') =>
    ledger.submit({ operationID, legs: [{ from: ISSUANCE_ADDRESS, to: D, amount }] });

  beforeEach(() => {
    dir = tempDir('ledger-void-');
    file = join(dir.path, 'ledger.sqlite');
  });
  afterEach(async () => {
    await Promise.all(open.splice(0).map((ledger) => ledger.close()));
    dir.cleanup();
  });

  it('when an operation is voided, then a transfer for it is refused with LedgerVoidedError and moves nothing', async () => {
    const ledger = ledgerOn();
    const operationID = opID();

    expect(await ledger.void(operationID)).toEqual({ kind: 'voided', operationID, voidedAt: AT });
    const refused = await issue(ledger, operationID).catch((e: unknown) => e);

    expect(refused).toBeInstanceOf(LedgerVoidedError);
    expect(refused).toMatchObject({ code: 'LEDGER_VOIDED', operationID, voidedAt: AT });
    expect(await ledger.findByOperationID(operationID)).toBeNull();
    expect(await ledger.fateOf(operationID)).toEqual({ kind: 'voided', operationID, voidedAt: AT });
    expect(await ledger.balance(D)).toBe('0');
    expect(await allLedgerTransactions(ledger)).toEqual([]);
  });

  it('when a transfer committed, then a void for it is refused with the transaction and writes nothing', async () => {
    const ledger = ledgerOn();
    const operationID = opID();
    const tx = await issue(ledger, operationID);

    expect(await ledger.void(operationID)).toEqual({ kind: 'executed', tx });
    expect(await ledger.fateOf(operationID)).toEqual({ kind: 'executed', tx });
    // The refused void left no trace: a later submit is still the duplicate, never "voided".
    await expect(issue(ledger, operationID)).rejects.toBeInstanceOf(LedgerDuplicateError);
  });

  it('when voided twice, then the second void answers voided with the first void’s time (idempotent)', async () => {
    const operationID = opID();
    await ledgerOn().void(operationID);
    const later = openEmbeddedLedger({ file, clock: () => new Date('2027-01-01T00:00:00.000Z') });
    open.push(later);
    expect(await later.void(operationID)).toEqual({ kind: 'voided', operationID, voidedAt: AT });
  });

  it('given an operation never seen, then its fate is none', async () => {
    expect(await ledgerOn().fateOf('op_never')).toEqual({ kind: 'none' });
  });

  it('given a transfer refused for funds, then its id can still be voided', async () => {
    const ledger = ledgerOn();
    const operationID = opID();
    await expect(ledger.submit({ operationID, legs: [{ from: D, to: M, amount: '1.00' }] })).rejects.toBeInstanceOf(
      LedgerRejectedError,
    );
    expect(await ledger.void(operationID)).toMatchObject({ kind: 'voided' });
  });

  it('given an empty operation id, then the void is rejected', async () => {
    await expect(ledgerOn().void('')).rejects.toBeInstanceOf(LedgerRejectedError);
  });

  it('when a void and transfers share one group commit, then each is judged in submission order', async () => {
    const ledger = ledgerOn();
    const [a, b] = [opID(), opID()];
    const outcomes = await Promise.allSettled([ledger.void(a), issue(ledger, a), issue(ledger, b), ledger.void(b)]);
    expect(outcomes[0]).toMatchObject({ status: 'fulfilled', value: { kind: 'voided' } });
    expect(outcomes[1]).toMatchObject({ status: 'rejected', reason: expect.any(LedgerVoidedError) });
    const tx = (outcomes[2] as PromiseFulfilledResult<LedgerTransaction>).value;
    expect(outcomes[3]).toEqual({ status: 'fulfilled', value: { kind: 'executed', tx } });
    expect((await allLedgerTransactions(ledger)).map((t) => t.operationID)).toEqual([b]);
  });

  it('given two connections (as two processes) racing a transfer and a void on 40 operations, then exactly one of each pair wins and the fate agrees', async () => {
    const a = ledgerOn();
    const b = ledgerOn();
    const ids = Array.from({ length: 40 }, opID);
    const results = await Promise.all(
      ids.map(async (operationID, i) => {
        const submit = issue(i % 2 ? a : b, operationID, '1.00').then(
          (tx) => ({ ok: true as const, tx }),
          (error: unknown) => ({ ok: false as const, error }),
        );
        const voided = (i % 2 ? b : a).void(operationID);
        return { operationID, submitted: await submit, voided: await voided };
      }),
    );

    let executed = 0;
    for (const { operationID, submitted, voided } of results) {
      if (submitted.ok) {
        executed += 1;
        expect(voided).toEqual({ kind: 'executed', tx: submitted.tx });
        expect(await b.fateOf(operationID)).toEqual({ kind: 'executed', tx: submitted.tx });
      } else {
        expect(submitted.error).toBeInstanceOf(LedgerVoidedError);
        expect(voided).toMatchObject({ kind: 'voided', operationID });
        expect(await a.fateOf(operationID)).toMatchObject({ kind: 'voided' });
      }
    }
    // Each connection's batch carries submits of some ids and voids of the others: both kinds of winner occur.
    expect(executed).toBeGreaterThan(0);
    expect(executed).toBeLessThan(ids.length);
    const all = await allLedgerTransactions(a);
    expect(all).toHaveLength(executed);
    expect(chainProblems(all)).toEqual([]);
    expect(await a.balance(D)).toBe(`${executed}`);
  });

  it('given a process paused holding an uncommitted transfer, then a void meanwhile cannot commit, and once the transfer commits the void answers executed', async () => {
    const ledger = ledgerOn({ busyBudgetMs: 100 });
    const operationID = opID();
    // The paused process: its transfer written inside its write transaction, not committed.
    const paused = new Database(file);
    try {
      paused.exec('BEGIN IMMEDIATE');
      paused
        .prepare(
          "INSERT INTO transactions (sequence, blockchain_id, previous_id, operation_id, legs, created_at) VALUES (1, 'x', ?, ?, '[]', ?)",
        )
        .run('0'.repeat(64), operationID, AT);

      // A reader cannot see it (the old executor's mistake was to fail the operation on this read)...
      expect(await ledger.fateOf(operationID)).toEqual({ kind: 'none' });
      // ...but the void is serialized behind it: it does not commit, it is worth retrying.
      await expect(ledger.void(operationID)).rejects.toBeInstanceOf(LedgerUnavailableError);

      paused.exec('COMMIT');
    } finally {
      if (paused.inTransaction) paused.exec('ROLLBACK');
      paused.close();
    }
    expect(await ledger.void(operationID)).toMatchObject({ kind: 'executed', tx: { operationID, sequenceNumber: 1 } });
  });

  it("given LEDGER_BUSY_BUDGET_MS, when the ledger of a configuration waits on a paused process's write lock, then its void gives up after that budget, not the default 10 s", async () => {
    const ledger = await openLedger({
      dataDir: dir.path,
      selection: loadConfig({ DATA_DIR: dir.path, LEDGER_BUSY_BUDGET_MS: '100' }),
    });
    open.push(ledger);
    const paused = new Database(file);
    try {
      paused.exec('BEGIN IMMEDIATE');
      const started = performance.now();
      await expect(ledger.void(opID())).rejects.toBeInstanceOf(LedgerUnavailableError);
      expect(performance.now() - started).toBeLessThan(5_000);
    } finally {
      paused.exec('ROLLBACK');
      paused.close();
    }
  });

  it('given a void committed, when a writer that does not know voids (an older version) inserts a transfer for it, then the database refuses it', async () => {
    const ledger = ledgerOn();
    const operationID = opID();
    await ledger.void(operationID);
    const old = new Database(file);
    try {
      expect(() =>
        old
          .prepare(
            "INSERT INTO transactions (sequence, blockchain_id, previous_id, operation_id, legs, created_at) VALUES (1, 'x', ?, ?, '[]', ?)",
          )
          .run('0'.repeat(64), operationID, AT),
      ).toThrow(/voided/);
      // And the other way round: no void beside a transaction.
      const tx = await issue(ledger);
      expect(() =>
        old.prepare('INSERT INTO voids (operation_id, voided_at) VALUES (?, ?)').run(tx.operationID, AT),
      ).toThrow(/executed/);
    } finally {
      old.close();
    }
  });

  it('given the simulated-faults wrapper, then void and fateOf pass through to the ledger', async () => {
    const ledger = withSimulatedLedgerFaults(ledgerOn(), { latencyMs: 1 });
    const operationID = opID();
    expect(await ledger.void(operationID)).toMatchObject({ kind: 'voided' });
    expect(await ledger.fateOf(operationID)).toMatchObject({ kind: 'voided' });
    await expect(issue(ledger, operationID)).rejects.toBeInstanceOf(LedgerVoidedError);
  });
});

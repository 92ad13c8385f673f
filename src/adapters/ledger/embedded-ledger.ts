import { createHash } from 'node:crypto';
import type Database from 'better-sqlite3';
import { Decimal } from '../../domain/money.ts';
import {
  ISSUANCE_ADDRESS,
  LedgerDuplicateError,
  LedgerRejectedError,
  LedgerUnavailableError,
  LedgerVoidedError,
  type Ledger,
  type LedgerLeg,
  type LedgerTransaction,
  type LedgerVoidOutcome,
} from '../../ports/ledger.ts';
import { openSqliteDatabase } from '../sqlite/sqlite-database.ts';
import { GroupCommitter, SavepointBatch, type UnavailableReason } from '../sqlite/sqlite-group-commit.ts';
import { BUSY_BUDGET_MS, retryWhileBusy, sqliteFault } from '../sqlite/sqlite-retry.ts';

/**
 * The embedded ledger: an honest stand-in for a blockchain, for development, tests and demos. A durable,
 * append-only, hash-chained log of transactions in SQLite (its own file), with per-wallet balances kept in
 * the same transaction. Each transaction's id (its blockchainID) is the SHA-256 of the previous id and its
 * own canonical content, so altering or removing one breaks every id after it. It refuses overdrafts
 * (except on the issuing account) and a second transaction for the same operation id.
 *
 * Submits are group-committed (sqlite-group-commit.ts), as the event store's appends are: the submits of one
 * turn of the event loop share one SQLite transaction and one fsync, each in its own savepoint, in order, so
 * each sees the balances and chain head its predecessors left, and a refused or duplicate one is rolled back
 * alone. A submit resolves only after the COMMIT, so a returned transaction is on disk.
 *
 * Voids go through the same committer: a void and a transfer for one operation id are each decided inside a
 * write transaction (BEGIN IMMEDIATE, one writer at a time across processes), so the second to take the lock
 * sees the first. A process paused while holding an uncommitted transfer holds the lock, so no void can
 * commit meanwhile (it waits, then fails as unavailable); a transfer begun after a void committed sees it.
 * Triggers make the two exclusive in the file itself, against a writer that does not know voids.
 */
const GENESIS = '0'.repeat(64);

function canonical(tx: Omit<LedgerTransaction, 'blockchainID'>): string {
  const legs = tx.legs.map((leg) => [leg.from, leg.to, leg.amount]);
  return JSON.stringify([tx.sequenceNumber, tx.operationID, legs, tx.createdAt]);
}

export function chainID(previous: string, tx: Omit<LedgerTransaction, 'blockchainID'>): string {
  return createHash('sha256').update(previous).update('\n').update(canonical(tx)).digest('hex');
}

interface Row {
  sequence: number;
  blockchain_id: string;
  operation_id: string;
  legs: string;
  created_at: string;
}

const toTransaction = (row: Row): LedgerTransaction => ({
  blockchainID: row.blockchain_id,
  sequenceNumber: row.sequence,
  operationID: row.operation_id,
  legs: JSON.parse(row.legs) as LedgerLeg[],
  createdAt: row.created_at,
});

const SCHEMA = `
  CREATE TABLE IF NOT EXISTS transactions (
    sequence INTEGER PRIMARY KEY,
    blockchain_id TEXT NOT NULL UNIQUE,
    previous_id TEXT NOT NULL,
    operation_id TEXT NOT NULL UNIQUE,
    legs TEXT NOT NULL,
    created_at TEXT NOT NULL
  );
  CREATE TABLE IF NOT EXISTS balances (wallet TEXT PRIMARY KEY, balance TEXT NOT NULL);
  CREATE TABLE IF NOT EXISTS voids (operation_id TEXT PRIMARY KEY, voided_at TEXT NOT NULL);
  CREATE TRIGGER IF NOT EXISTS transactions_not_voided BEFORE INSERT ON transactions
    WHEN EXISTS (SELECT 1 FROM voids WHERE operation_id = NEW.operation_id)
    BEGIN SELECT RAISE(ABORT, 'operation voided'); END;
  CREATE TRIGGER IF NOT EXISTS voids_not_executed BEFORE INSERT ON voids
    WHEN EXISTS (SELECT 1 FROM transactions WHERE operation_id = NEW.operation_id)
    BEGIN SELECT RAISE(ABORT, 'operation already executed'); END;
`;

type Request = { kind: 'submit'; operationID: string; legs: LedgerLeg[] } | { kind: 'void'; operationID: string };

export interface EmbeddedLedgerOptions {
  file: string;
  clock?: () => Date;
  /** How long a call may wait for another process's lock before LedgerUnavailableError. Default BUSY_BUDGET_MS. */
  busyBudgetMs?: number;
  /**
   * Called inside the write transaction after each transfer is written, before COMMIT (fault injection:
   * LEDGER_STOP_WHILE_HOLDING).
   */
  whileHolding?: () => void;
}

export function openEmbeddedLedger(options: EmbeddedLedgerOptions): Ledger {
  const busyBudgetMs = options.busyBudgetMs ?? BUSY_BUDGET_MS;
  const db: Database.Database = openSqliteDatabase(options.file, (setup) => setup.exec(SCHEMA), busyBudgetMs);
  const closed = new AbortController();
  const clock = options.clock ?? (() => new Date());
  const byOperation = db.prepare<[string], Row>('SELECT * FROM transactions WHERE operation_id = ?');
  const last = db.prepare<[], Row>('SELECT * FROM transactions ORDER BY sequence DESC LIMIT 1');
  const balanceOf = db.prepare<[string], { balance: string }>('SELECT balance FROM balances WHERE wallet = ?');
  const setBalance = db.prepare(
    'INSERT INTO balances (wallet, balance) VALUES (?, ?) ON CONFLICT (wallet) DO UPDATE SET balance = ' +
      'excluded.balance',
  );
  const insert = db.prepare(
    'INSERT INTO transactions (sequence, blockchain_id, previous_id, operation_id, legs, created_at) VALUES (?, ' +
      '?, ?, ?, ?, ?)',
  );
  const page = db.prepare<[number, number], Row>(
    'SELECT * FROM transactions WHERE sequence >= ? ORDER BY sequence LIMIT ?',
  );
  const voidOf = db.prepare<[string], { voided_at: string }>('SELECT voided_at FROM voids WHERE operation_id = ?');
  const insertVoid = db.prepare('INSERT INTO voids (operation_id, voided_at) VALUES (?, ?)');

  /** One submit, inside the batch's transaction (in its own savepoint). */
  const execute = ({ operationID, legs }: { operationID: string; legs: LedgerLeg[] }): LedgerTransaction => {
    const existing = byOperation.get(operationID);
    if (existing) throw new LedgerDuplicateError(toTransaction(existing));
    const voided = voidOf.get(operationID);
    if (voided) throw new LedgerVoidedError(operationID, voided.voided_at);
    const balances = new Map<string, Decimal>();
    const current = (wallet: string) => balances.get(wallet) ?? new Decimal(balanceOf.get(wallet)?.balance ?? 0);
    for (const leg of legs) {
      balances.set(leg.from, current(leg.from).minus(leg.amount));
      balances.set(leg.to, current(leg.to).plus(leg.amount));
    }
    for (const [wallet, balance] of balances) {
      if (balance.isNegative() && wallet !== ISSUANCE_ADDRESS)
        throw new LedgerRejectedError(`insufficient funds in ${wallet}`);
    }
    const previous = last.get();
    const tx = { sequenceNumber: (previous?.sequence ?? 0) + 1, operationID, legs, createdAt: clock().toISOString() };
    const blockchainID = chainID(previous?.blockchain_id ?? GENESIS, tx);
    insert.run(
      tx.sequenceNumber,
      blockchainID,
      previous?.blockchain_id ?? GENESIS,
      operationID,
      JSON.stringify(legs),
      tx.createdAt,
    );
    for (const [wallet, balance] of balances) setBalance.run(wallet, balance.toFixed());
    options.whileHolding?.();
    return { blockchainID, ...tx };
  };
  /** One void, in the same transaction discipline: the transaction if it committed first, else the (first) void. */
  const voidOne = (operationID: string): LedgerVoidOutcome => {
    const existing = byOperation.get(operationID);
    if (existing) return { kind: 'executed', tx: toTransaction(existing) };
    const voided = voidOf.get(operationID);
    if (voided) return { kind: 'voided', operationID, voidedAt: voided.voided_at };
    const voidedAt = clock().toISOString();
    insertVoid.run(operationID, voidedAt);
    return { kind: 'voided', operationID, voidedAt };
  };
  const apply = (request: Request): LedgerTransaction | LedgerVoidOutcome =>
    request.kind === 'void' ? voidOne(request.operationID) : execute(request);
  // Refusals and duplicates concern their request alone; anything else (a full disk, an I/O error) fails the batch.
  const batch = new SavepointBatch(
    db,
    apply,
    (error) =>
      error instanceof LedgerDuplicateError ||
      error instanceof LedgerRejectedError ||
      error instanceof LedgerVoidedError,
  );
  const committer = new GroupCommitter({
    transaction: (requests: Request[]) => batch.run(requests),
    onCommit: () => {},
    busyBudgetMs,
    unavailable: ledgerUnavailable,
  });

  /**
   * Runs one synchronous read, retried on timers while another process holds the lock. Busy past the budget,
   * a full disk or an I/O error become LedgerUnavailableError (worth retrying).
   */
  async function run<T>(fn: () => T): Promise<T> {
    try {
      return await retryWhileBusy(fn, { budgetMs: busyBudgetMs, signal: closed.signal });
    } catch (error) {
      const fault = sqliteFault(error);
      if (fault)
        throw new LedgerUnavailableError(fault === 'busy' ? 'ledger busy' : `ledger unavailable (${fault})`, {
          cause: error,
        });
      throw error;
    }
  }

  return {
    async submit({ operationID, legs }) {
      for (const leg of legs) {
        if (!new Decimal(leg.amount).gt(0) || leg.from === leg.to)
          throw new LedgerRejectedError(`invalid leg ${leg.from} -> ${leg.to} ${leg.amount}`);
      }
      return committer.submit({ kind: 'submit', operationID, legs }) as Promise<LedgerTransaction>;
    },
    async void(operationID) {
      if (!operationID) throw new LedgerRejectedError('an operation id is required to void');
      return committer.submit({ kind: 'void', operationID }) as Promise<LedgerVoidOutcome>;
    },
    async fateOf(operationID) {
      // Transaction first, then void: both are final and exclusive, so a fate seen is never contradicted later.
      const row = await run(() => byOperation.get(operationID));
      if (row) return { kind: 'executed', tx: toTransaction(row) };
      const voided = await run(() => voidOf.get(operationID));
      return voided ? { kind: 'voided', operationID, voidedAt: voided.voided_at } : { kind: 'none' };
    },
    async findByOperationID(operationID) {
      const row = await run(() => byOperation.get(operationID));
      return row ? toTransaction(row) : null;
    },
    async balance(wallet) {
      return new Decimal((await run(() => balanceOf.get(wallet)))?.balance ?? 0).toFixed();
    },
    async transactions({ fromSequence = 1, maxCount = 1000 } = {}) {
      return (await run(() => page.all(fromSequence, maxCount))).map(toTransaction);
    },
    async close() {
      closed.abort(new LedgerUnavailableError('the ledger is closed'));
      await committer.close();
      if (db.open) db.close();
    },
  };
}

/** The committer's failures as the port's: worth retrying, nothing of the batch written. */
function ledgerUnavailable(why: UnavailableReason, cause?: unknown): Error {
  if (why === 'closed') return new LedgerUnavailableError('the ledger is closed');
  if (why === 'busy') return new LedgerUnavailableError('ledger busy', { cause });
  return new LedgerUnavailableError(`ledger unavailable (${sqliteFault(cause) ?? 'error'})`, { cause });
}

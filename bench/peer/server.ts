/**
 * The peer of `npm run bench:write`: wallet-ops' create-operation done the way a well-known TypeScript
 * event-sourcing library does it, Emmett (pinned in bench/peer/package.json, installed on demand), on its
 * SQLite store or, given a connection string, its PostgreSQL store. Started as a child process by
 * bench/support/peer-emmett.ts:
 *   PEER_STORE=sqlite PEER_SQLITE_FILE=/tmp/x.sqlite PEER_PAYERS=p0,p1 node --import tsx bench/peer/server.ts
 *   PEER_STORE=postgresql PEER_POSTGRES_URL=postgres://... PEER_PAYERS=...
 * It seeds each payer's wallet stream with a credit, listens on a loopback port and sends { url } over IPC.
 *
 * Per request, Emmett's read-decide-append through its CommandHandler: read the payer's wallet stream and
 * fold it into a balance and holds (decimal.js), decide (amount + fee <= available, else 403), append
 * OperationRequested and FundsHeld to that stream with the version read as the expected version; on a
 * version conflict the handler retries with Emmett's own retry settings for conflicts
 * (`retry: { onVersionConflict: true }`: 3 retries, 100 ms then x1.5; without it Emmett does not retry).
 *
 * Durability, the stores' defaults, not tuned either way:
 * - SQLite (emmett-sqlite over the sqlite3 package): a new connection per store call, `PRAGMA journal_mode
 *   = WAL` on each, SQLite's compiled-in synchronous=FULL (2), node-sqlite3's busy_timeout of 1000 ms (both
 *   reported at start-up), the append in a BEGIN IMMEDIATE transaction: a commit is fsynced before the
 *   response. Emmett console.logs every failed transaction: this process's stdout goes nowhere.
 * - PostgreSQL: the server's settings (fsync on, synchronous_commit on by default), Emmett's pg pool.
 *
 * What wallet-ops does per create that this peer does not: API-key authentication and permission check,
 * request validation (zod, phone number parsing, the counterparty's lookup), limits (max transaction
 * amount, daily volume), idempotency keys, the hash-chain audit decorator, metrics; and it writes the
 * operation to its own stream and the hold to the wallet stream in one atomic multi-stream append, where
 * the peer appends both events to the wallet stream (Emmett appends to one stream at a time).
 */
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { Decimal } from 'decimal.js';
import {
  CommandHandler,
  EmmettError,
  IllegalStateError,
  STREAM_DOES_NOT_EXIST,
  ValidationError,
  type Event,
  type EventStore,
} from '@event-driven-io/emmett';

type WalletCredited = Event<'WalletCredited', { wallet: string; amount: string }>;
type OperationRequested = Event<
  'OperationRequested',
  {
    operationID: string;
    operationType: 'cash-in';
    payer: string;
    amount: string;
    fee: string;
    phoneTo: string;
    memo: string;
    createdAt: string;
  }
>;
type FundsHeld = Event<'FundsHeld', { wallet: string; operationID: string; amount: string }>;
type WalletEvent = WalletCredited | OperationRequested | FundsHeld;

interface WalletState {
  balance: Decimal;
  held: Decimal;
}

const ASSET_SCALE = 2;
const initialState = (): WalletState => ({ balance: new Decimal(0), held: new Decimal(0) });

function evolve(state: WalletState, event: WalletEvent): WalletState {
  switch (event.type) {
    case 'WalletCredited':
      return { ...state, balance: state.balance.plus(event.data.amount) };
    case 'FundsHeld':
      return { ...state, held: state.held.plus(event.data.amount) };
    default:
      return state;
  }
}

interface CreateCashIn {
  operationID: string;
  payer: string;
  amount: string;
  phoneTo: string;
  memo: string;
  createdAt: string;
}

/** The same rule as wallet-ops' create: amount + fee must fit the available balance (cash-in carries no fee). */
function decide(command: CreateCashIn, state: WalletState): WalletEvent[] {
  const fee = new Decimal(0);
  const debit = new Decimal(command.amount).plus(fee);
  const available = state.balance.minus(state.held);
  if (available.lt(debit))
    throw new IllegalStateError(
      `available balance ${available.toFixed(ASSET_SCALE)} does not cover ${debit.toFixed(ASSET_SCALE)}`,
    );
  return [
    { type: 'OperationRequested', data: { ...command, operationType: 'cash-in', fee: fee.toFixed(ASSET_SCALE) } },
    {
      type: 'FundsHeld',
      data: { wallet: command.payer, operationID: command.operationID, amount: debit.toFixed(ASSET_SCALE) },
    },
  ];
}

const handle = CommandHandler<WalletState, WalletEvent>({
  evolve,
  initialState,
  mapToStreamId: (payer) => `wallet-${payer}`,
  retry: { onVersionConflict: true },
});

const amountPattern = /^\d{1,12}(\.\d{1,8})?$/;

function parseCommand(payer: string, body: unknown): CreateCashIn {
  const { operationType, amount, phoneTo, memo } = (body ?? {}) as Record<string, unknown>;
  if (
    operationType !== 'cash-in' ||
    typeof amount !== 'string' ||
    !amountPattern.test(amount) ||
    typeof phoneTo !== 'string'
  ) {
    throw new ValidationError('operationType cash-in, a decimal amount and phoneTo are required');
  }
  return {
    operationID: `op_${randomUUID().replaceAll('-', '')}`,
    payer,
    amount,
    phoneTo,
    memo: typeof memo === 'string' ? memo : '',
    createdAt: new Date().toISOString(),
  };
}

/** What a failed request answered, by status and cause, so that the bench can say how the peer fails. */
const outcomes = new Map<string, number>();
let inFlight = 0;
function count(key: string): void {
  outcomes.set(key, (outcomes.get(key) ?? 0) + 1);
}

/** The status answered and a short cause: Emmett's error class (its errorCode is the status) or the driver's message. */
function failure(error: unknown): { status: number; cause: string } {
  // The bundles name Emmett's classes with a leading underscore, and ExpectedVersionConflictError keeps name 'Error'.
  if (EmmettError.isInstanceOf(error))
    return { status: error.errorCode, cause: error.constructor.name.replace(/^_/, '') };
  return { status: 500, cause: error instanceof Error ? error.message.slice(0, 80) : String(error) };
}

async function openStore(): Promise<{
  store: EventStore;
  close: () => Promise<void>;
  describe: () => Promise<string>;
}> {
  if (process.env.PEER_STORE === 'postgresql') {
    const { getPostgreSQLEventStore } = await import('@event-driven-io/emmett-postgresql');
    const connectionString = process.env.PEER_POSTGRES_URL!;
    const store = getPostgreSQLEventStore(connectionString);
    const describe = async () => {
      const { default: pg } = await import('pg'); // emmett-postgresql's driver, pinned by the lockfile
      const client = new pg.Client({ connectionString });
      await client.connect();
      try {
        const setting = async (name: string) =>
          ((await client.query(`SHOW ${name}`)).rows[0] as Record<string, string>)[name];
        return `PostgreSQL ${await setting('server_version')}, fsync=${await setting('fsync')}, synchronous_commit=${await setting('synchronous_commit')}`;
      } finally {
        await client.end();
      }
    };
    return { store, close: () => store.close(), describe };
  }
  const { getSQLiteEventStore, sqliteConnection } = await import('@event-driven-io/emmett-sqlite');
  const fileName = process.env.PEER_SQLITE_FILE!;
  const store = getSQLiteEventStore({ fileName });
  const describe = async () => {
    // A connection as the store opens them, to report the settings it runs with.
    const connection = sqliteConnection({ fileName });
    try {
      const journal = await connection.querySingle<{ journal_mode: string }>('PRAGMA journal_mode');
      const synchronous = await connection.querySingle<{ synchronous: number }>('PRAGMA synchronous');
      const busy = await connection.querySingle<{ timeout: number }>('PRAGMA busy_timeout');
      return `journal_mode=${journal?.journal_mode}, synchronous=${synchronous?.synchronous}, busy_timeout=${busy?.timeout}`;
    } finally {
      connection.close();
    }
  };
  return { store, close: async () => undefined, describe };
}

async function main(): Promise<void> {
  const { store, close, describe } = await openStore();
  const payers = (process.env.PEER_PAYERS ?? '').split(',').filter((p) => p !== '');
  for (const payer of payers) {
    await store.appendToStream(
      `wallet-${payer}`,
      [{ type: 'WalletCredited', data: { wallet: payer, amount: '1000000000.00' } }],
      { expectedStreamVersion: STREAM_DOES_NOT_EXIST },
    );
  }

  const app = express();
  app.post('/api/v1/distributors/:id/operations', express.json(), async (req, res) => {
    inFlight++;
    try {
      const command = parseCommand(req.params.id, req.body);
      await handle(store, command.payer, (state) => decide(command, state));
      count('200');
      res.json({ operationID: command.operationID });
    } catch (error) {
      const { status, cause } = failure(error);
      count(`${status} ${cause}`);
      res.status(status).json({ error: cause, message: error instanceof Error ? error.message : String(error) });
    } finally {
      inFlight--;
    }
  });
  // After a run: how many of the given payers' streams still take an append at the version just read.
  app.get('/__peer/stuck', async (req, res) => {
    let stuck = 0;
    for (const payer of String(req.query.payers ?? '').split(',')) {
      const { currentStreamVersion } = await store.readStream(`wallet-${payer}`);
      const probe: WalletEvent = { type: 'WalletCredited', data: { wallet: payer, amount: '0.00' } };
      await store
        .appendToStream(`wallet-${payer}`, [probe], { expectedStreamVersion: currentStreamVersion })
        .catch((error: unknown) => {
          if (!EmmettError.isInstanceOf(error, EmmettError.Codes.ConcurrencyError)) throw error;
          stuck++;
        });
    }
    res.json({ stuck });
  });
  // Waits for the requests still being handled after the load stopped (they would weigh on the next scenario).
  app.get('/__peer/outcomes', async (_req, res) => {
    for (const deadline = Date.now() + 120_000; inFlight > 0 && Date.now() < deadline;)
      await new Promise((resolve) => setTimeout(resolve, 50));
    res.json(Object.fromEntries(outcomes));
    outcomes.clear();
  });

  const server = app.listen(0, '127.0.0.1', async () => {
    process.send?.({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, settings: await describe() });
  });
  process.on('disconnect', () => {
    server.closeAllConnections();
    server.close(() => void close().finally(() => process.exit(0)));
  });
}

await main();

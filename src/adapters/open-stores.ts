import { join } from 'node:path';
import type { EventStore } from '../ports/event-store.ts';
import type { ReadStore } from '../ports/read-store.ts';
import { ownerOnlyDataDir } from './data-dir.ts';
import { openSqliteEventStore } from './sqlite/sqlite-event-store.ts';
import { openSqliteReadStore } from './sqlite/sqlite-read-store.ts';
import type { Ledger } from '../ports/ledger.ts';
import { withHashChain } from '../audit/hash-chain.ts';
import type { PoolObserver, PostgresConnectionOptions } from './postgres/postgres-pool.ts';
import { openEmbeddedLedger } from './ledger/embedded-ledger.ts';
import { stopOnceWhileHolding, withSimulatedLedgerFaults, type LedgerFaults } from './ledger/ledger-faults.ts';

export interface Stores {
  eventStore: EventStore;
  readStore: ReadStore;
  close(): Promise<void>;
}

/**
 * Which stores to open: the configuration's keys of the same names (src/config.ts validates them, including
 * that a chosen server store has its URL), so a Config can be passed as it is.
 */
export interface StoreSelection {
  DATA_DIR: string;
  EVENT_STORE: 'embedded' | 'kurrentdb' | 'postgres';
  /** The embedded event store's commits: on the event loop (default) or on its commit thread. */
  EVENT_STORE_COMMITS?: 'thread' | 'event-loop' | undefined;
  KURRENTDB_URL?: string | undefined;
  READ_STORE: 'embedded' | 'mongodb' | 'postgres';
  MONGODB_URL?: string | undefined;
  MONGODB_DATABASE: string;
  /** One PostgreSQL database for either store or both (each store has its own tables and pool). */
  POSTGRES_URL?: string | undefined;
  /** Hot standbys serving the read API's and the console's reads (src/read-api/replica-reads.ts); comma-separated. */
  POSTGRES_READ_URL?: string | undefined;
  /** Defaults as in src/config.ts. */
  POSTGRES_POOL_SIZE?: number | undefined;
  POSTGRES_STATEMENT_TIMEOUT_MS?: number | undefined;
  /** The embedded stores: how long a call waits for another process's write lock; the adapters' default when absent. */
  STORE_BUSY_BUDGET_MS?: number | undefined;
}

/**
 * Decorators applied to the raw stores and ledger when they are opened: fault injection (src/faults, which
 * builds them from the FAULT_* configuration; this layer may not import it) and, around it, the metrics
 * (src/metrics; composed in src/wallet-ops.ts). The event store's goes inside the hash chain, so that what it
 * injects looks like the store's own behaviour, and what the metrics time is the store's append itself.
 */
export interface StoreDecorators {
  eventStore?: (store: EventStore) => EventStore;
  readStore?: (store: ReadStore) => ReadStore;
  ledger?: (ledger: Ledger) => Ledger;
  /** Not a decorator: told the size of each group commit of the embedded event store (src/metrics). */
  onGroupCommit?: (requests: number) => void;
  /** Not a decorator: told of the PostgreSQL pools and their statements (src/metrics). */
  postgres?: PoolObserver;
}

const same = <T>(store: T) => store;

/** The embedded stores in a data directory (what benchmarks and tools that never use a server pass). */
export interface EmbeddedOnly {
  dataDir: string;
}

export function embedded(dataDir: string): StoreSelection {
  return { DATA_DIR: dataDir, EVENT_STORE: 'embedded', READ_STORE: 'embedded', MONGODB_DATABASE: 'wallet_ops' };
}

/**
 * The composition of storage, chosen by configuration alone: the embedded SQLite adapters (each in its own
 * file under the data directory, so that event appends and read-model writes never wait for each other's
 * write lock), or KurrentDB or PostgreSQL for the events and MongoDB or PostgreSQL for the read models, in any
 * combination.
 */
export async function openStores(
  options: StoreSelection | EmbeddedOnly,
  decorators: StoreDecorators = {},
): Promise<Stores> {
  const selection = 'dataDir' in options ? embedded(options.dataDir) : options;
  const eventStore = await openEventStore(
    selection,
    decorators.eventStore,
    decorators.onGroupCommit,
    decorators.postgres,
  );
  let readStore: ReadStore;
  try {
    readStore = await openReadStore(selection, decorators.readStore, decorators.postgres);
  } catch (error) {
    // Nothing is left open behind a failure: a caller that runs on (the CLI in a test's process) would keep it.
    await eventStore.close();
    throw error;
  }
  return {
    eventStore,
    readStore,
    async close() {
      await Promise.all([eventStore.close(), readStore.close()]);
    },
  };
}

// Every event store is wrapped in the hash chain (src/audit): tamper evidence computed by wallet-ops itself.
// The server adapters are loaded only when chosen: their clients cost every CLI start a third of a second.
export async function openEventStore(
  selection: Pick<
    StoreSelection,
    | 'DATA_DIR'
    | 'EVENT_STORE'
    | 'KURRENTDB_URL'
    | 'EVENT_STORE_COMMITS'
    | 'POSTGRES_URL'
    | 'POSTGRES_POOL_SIZE'
    | 'POSTGRES_STATEMENT_TIMEOUT_MS'
    | 'STORE_BUSY_BUDGET_MS'
  >,
  decorate: (store: EventStore) => EventStore = same,
  onGroupCommit?: (requests: number) => void,
  observer?: PoolObserver,
): Promise<EventStore> {
  if (selection.EVENT_STORE === 'postgres') {
    const { openPostgresEventStore } = await import('./postgres/postgres-event-store.ts');
    const store = await openPostgresEventStore({
      ...postgresConnection(selection, 'EVENT_STORE=postgres', 'wallet-ops events', observer),
      ...(onGroupCommit ? { onGroupCommit } : {}),
    });
    return withHashChain(decorate(store));
  }
  if (selection.EVENT_STORE === 'kurrentdb') {
    const { openKurrentDbEventStore } = await import('./kurrentdb/kurrentdb-event-store.ts');
    return withHashChain(
      decorate(
        openKurrentDbEventStore({
          connectionString: required(selection.KURRENTDB_URL, 'KURRENTDB_URL', 'EVENT_STORE=kurrentdb'),
        }),
      ),
    );
  }
  ownerOnlyDataDir(selection.DATA_DIR);
  return withHashChain(
    decorate(
      openSqliteEventStore({
        file: join(selection.DATA_DIR, 'events.sqlite'),
        commitOn: selection.EVENT_STORE_COMMITS ?? 'event-loop',
        ...busyBudget(selection),
        ...(onGroupCommit ? { onGroupCommit } : {}),
      }),
    ),
  );
}

export async function openReadStore(
  selection: Pick<
    StoreSelection,
    | 'DATA_DIR'
    | 'READ_STORE'
    | 'MONGODB_URL'
    | 'MONGODB_DATABASE'
    | 'POSTGRES_URL'
    | 'POSTGRES_POOL_SIZE'
    | 'POSTGRES_STATEMENT_TIMEOUT_MS'
    | 'STORE_BUSY_BUDGET_MS'
  >,
  decorate: (store: ReadStore) => ReadStore = same,
  observer?: PoolObserver,
): Promise<ReadStore> {
  if (selection.READ_STORE === 'postgres') {
    const { openPostgresReadStore } = await import('./postgres/postgres-read-store.ts');
    return decorate(
      await openPostgresReadStore(
        postgresConnection(selection, 'READ_STORE=postgres', 'wallet-ops read models', observer),
      ),
    );
  }
  if (selection.READ_STORE === 'mongodb') {
    const { openMongoReadStore } = await import('./mongodb/mongodb-read-store.ts');
    return decorate(
      openMongoReadStore({
        url: required(selection.MONGODB_URL, 'MONGODB_URL', 'READ_STORE=mongodb'),
        database: selection.MONGODB_DATABASE,
      }),
    );
  }
  ownerOnlyDataDir(selection.DATA_DIR);
  return decorate(
    openSqliteReadStore({ file: join(selection.DATA_DIR, 'read-models.sqlite'), ...busyBudget(selection) }),
  );
}

/**
 * The read-only read store on a hot standby (POSTGRES_READ_URL), or undefined when none is configured. With several
 * standbys, each process takes one (by its process id): a process's reads then see one replica's replay, which only
 * moves forward.
 */
export async function openReplicaReadStore(
  selection: Pick<StoreSelection, 'POSTGRES_READ_URL' | 'POSTGRES_POOL_SIZE' | 'POSTGRES_STATEMENT_TIMEOUT_MS'>,
  observer?: PoolObserver,
): Promise<ReadStore | undefined> {
  const urls = (selection.POSTGRES_READ_URL ?? '')
    .split(',')
    .map((url) => url.trim())
    .filter((url) => url !== '');
  if (urls.length === 0) return undefined;
  const { openPostgresReadStore } = await import('./postgres/postgres-read-store.ts');
  const url = urls[process.pid % urls.length]!;
  const connection = postgresConnection(
    { ...selection, POSTGRES_URL: url },
    'POSTGRES_READ_URL',
    'wallet-ops read replica',
    observer,
  );
  return openPostgresReadStore({ ...connection, readOnly: true });
}

/** STORE_BUSY_BUDGET_MS in an embedded store's options, or nothing: the adapter's default. */
function busyBudget(selection: Pick<StoreSelection, 'STORE_BUSY_BUDGET_MS'>): { busyBudgetMs?: number } {
  return selection.STORE_BUSY_BUDGET_MS ? { busyBudgetMs: selection.STORE_BUSY_BUDGET_MS } : {};
}

/** Which ledger to open and how to reach it: the configuration's keys of the same names (src/config.ts). */
export interface LedgerSelection {
  LEDGER: 'embedded' | 'evm';
  ASSET_SCALE: number;
  EVM_RPC_URL?: string | undefined;
  EVM_CHAIN_ID?: number | undefined;
  EVM_OPERATOR_KEY_FILE?: string | undefined;
  EVM_LEDGER_ADDRESS?: string | undefined;
  EVM_CONFIRMATIONS: number;
  EVM_RECEIPT_TIMEOUT_MS: number;
  EVM_POLL_INTERVAL_MS: number;
  /** LEDGER=embedded: how long a call waits for another process's write lock; the adapter's default when absent. */
  LEDGER_BUSY_BUDGET_MS?: number | undefined;
}

/**
 * The ledger the configuration names: the embedded one in its own file under the data directory (it stands
 * for the blockchain, which keeps its own records), or a WalletLedger contract on an EVM chain. `faults` are
 * the LEDGER_* knobs and `decorate` the FAULT_LEDGER_* injection, both around either ledger. Without a
 * selection, the embedded ledger.
 */
export async function openLedger(options: {
  dataDir: string;
  selection?: LedgerSelection | undefined;
  faults?: LedgerFaults;
  decorate?: ((ledger: Ledger) => Ledger) | undefined;
}): Promise<Ledger> {
  const decorate = options.decorate ?? same;
  const selection = options.selection;
  let ledger: Ledger;
  const whileHolding = stopOnceWhileHolding(options.faults);
  if (selection?.LEDGER === 'evm') {
    const because = 'LEDGER=evm';
    // Loaded only when chosen, like the server stores: viem is no cost to a process on the embedded ledger.
    const { openEvmLedger, readOperatorKey } = await import('./evm/evm-ledger.ts');
    ledger = openEvmLedger({
      rpcUrl: required(selection.EVM_RPC_URL, 'EVM_RPC_URL', because),
      chainId: required(selection.EVM_CHAIN_ID, 'EVM_CHAIN_ID', because),
      operatorKey: readOperatorKey(required(selection.EVM_OPERATOR_KEY_FILE, 'EVM_OPERATOR_KEY_FILE', because)),
      contract: required(selection.EVM_LEDGER_ADDRESS, 'EVM_LEDGER_ADDRESS', because) as `0x${string}`,
      scale: selection.ASSET_SCALE,
      confirmations: selection.EVM_CONFIRMATIONS,
      receiptTimeoutMs: selection.EVM_RECEIPT_TIMEOUT_MS,
      pollingIntervalMs: selection.EVM_POLL_INTERVAL_MS,
      ...(whileHolding ? { whileHolding } : {}),
    });
  } else {
    ownerOnlyDataDir(options.dataDir);
    const busyBudgetMs = selection?.LEDGER_BUSY_BUDGET_MS;
    ledger = openEmbeddedLedger({
      file: join(options.dataDir, 'ledger.sqlite'),
      ...(busyBudgetMs ? { busyBudgetMs } : {}),
      ...(whileHolding ? { whileHolding } : {}),
    });
  }
  return decorate(withSimulatedLedgerFaults(ledger, options.faults ?? {}));
}

/** The connection settings of one PostgreSQL store (each store opens its own pool, named in pg_stat_activity). */
function postgresConnection(
  selection: Pick<StoreSelection, 'POSTGRES_URL' | 'POSTGRES_POOL_SIZE' | 'POSTGRES_STATEMENT_TIMEOUT_MS'>,
  because: string,
  applicationName: string,
  observer?: PoolObserver,
): PostgresConnectionOptions {
  return {
    ...(observer ? { observer } : {}),
    url: required(selection.POSTGRES_URL, 'POSTGRES_URL', because),
    poolSize: selection.POSTGRES_POOL_SIZE ?? 10,
    statementTimeoutMs: selection.POSTGRES_STATEMENT_TIMEOUT_MS ?? 10_000,
    applicationName,
  };
}

function required<T extends string | number>(value: T | undefined, name: string, because: string): T {
  if (!value) throw new Error(`${name} is required when ${because}`);
  return value;
}

import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { EventStore } from '../ports/event-store.ts';
import type { ReadStore } from '../ports/read-store.ts';
import { openSqliteEventStore } from './sqlite/sqlite-event-store.ts';
import { openSqliteReadStore } from './sqlite/sqlite-read-store.ts';
import type { Ledger } from '../ports/ledger.ts';
import { openEmbeddedLedger, type LedgerFaults } from './ledger/embedded-ledger.ts';

export interface Stores {
  eventStore: EventStore;
  readStore: ReadStore;
  close(): Promise<void>;
}

/**
 * The composition of storage: today the embedded SQLite adapters, each in its own file under the data
 * directory so that event appends and read-model writes never wait for each other's write lock.
 */
export function openStores(options: { dataDir: string }): Stores {
  mkdirSync(options.dataDir, { recursive: true });
  const eventStore = openSqliteEventStore({ file: join(options.dataDir, 'events.sqlite') });
  const readStore = openSqliteReadStore({ file: join(options.dataDir, 'read-models.sqlite') });
  return {
    eventStore,
    readStore,
    async close() {
      await Promise.all([eventStore.close(), readStore.close()]);
    },
  };
}

/** The embedded ledger, in its own file: it stands for the blockchain, which keeps its own records. */
export function openLedger(options: { dataDir: string; faults?: LedgerFaults }): Ledger {
  mkdirSync(options.dataDir, { recursive: true });
  return openEmbeddedLedger({ file: join(options.dataDir, 'ledger.sqlite'), ...(options.faults ? { faults: options.faults } : {}) });
}

export function openEventStore(options: { dataDir: string }): EventStore {
  mkdirSync(options.dataDir, { recursive: true });
  return openSqliteEventStore({ file: join(options.dataDir, 'events.sqlite') });
}

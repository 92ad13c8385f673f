/**
 * Choosing the stores is configuration only: EVENT_STORE / READ_STORE, or the presence of the URLs.
 */
import { mkdirSync } from 'node:fs';
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { embedded, openStores } from '../../src/adapters/open-stores.ts';
import { ConfigError, loadConfig } from '../../src/config.ts';
import { EventStoreUnavailableError, type EventStore } from '../../src/ports/event-store.ts';
import { ReadStoreUnavailableError } from '../../src/ports/read-store.ts';
import { tempDir } from '../support/temp-dir.ts';
import { freshPostgresDatabase } from '../support/postgres-server.ts';
import { openPostgresReadStore } from '../../src/adapters/postgres/postgres-read-store.ts';
import { openPostgresEventStore } from '../../src/adapters/postgres/postgres-event-store.ts';

const KURRENTDB_URL = 'kurrentdb://kurrentdb:2113?tls=false';
const MONGODB_URL = 'mongodb://mongodb:27017/?replicaSet=rs0';
/** Server stores need the secrets key (src/config.ts). */
const SECRETS_KEY = Buffer.alloc(32, 7).toString('base64');

describe('store selection', () => {
  it('given no store variables, when loaded, then both stores are embedded and the database name has its default', () => {
    expect(loadConfig({})).toMatchObject({
      EVENT_STORE: 'embedded',
      READ_STORE: 'embedded',
      MONGODB_DATABASE: 'wallet_ops',
    });
  });

  it('given only the URLs, when loaded, then their stores are chosen', () => {
    expect(loadConfig({ KURRENTDB_URL, SECRETS_KEY })).toMatchObject({
      EVENT_STORE: 'kurrentdb',
      READ_STORE: 'embedded',
    });
    expect(loadConfig({ MONGODB_URL, SECRETS_KEY })).toMatchObject({ EVENT_STORE: 'embedded', READ_STORE: 'mongodb' });
  });

  it('given a URL and an explicit embedded store, when loaded, then the explicit choice wins', () => {
    expect(loadConfig({ KURRENTDB_URL, EVENT_STORE: 'embedded', MONGODB_URL, READ_STORE: 'embedded' })).toMatchObject({
      EVENT_STORE: 'embedded',
      READ_STORE: 'embedded',
    });
  });

  it('given a server store without its URL, when loaded, then it is a configuration error naming the variable', () => {
    expect(() => loadConfig({ EVENT_STORE: 'kurrentdb' })).toThrow(ConfigError);
    expect(() => loadConfig({ EVENT_STORE: 'kurrentdb' })).toThrow(
      /KURRENTDB_URL: required when EVENT_STORE is kurrentdb/,
    );
    expect(() => loadConfig({ READ_STORE: 'mongodb', KURRENTDB_URL: '' })).toThrow(
      /MONGODB_URL: required when READ_STORE is mongodb/,
    );
  });

  it('given an unknown store, a malformed URL or database name, when loaded, then it is refused, and a password in a URL is not repeated', () => {
    expect(() => loadConfig({ EVENT_STORE: 'cassandra' })).toThrow(/EVENT_STORE/);
    expect(() => loadConfig({ READ_STORE: 'cassandra' })).toThrow(/READ_STORE/);
    expect(() => loadConfig({ MONGODB_URL: 'http://x' })).toThrow(/MONGODB_URL: a MongoDB connection string/);
    expect(() => loadConfig({ MONGODB_DATABASE: 'a/b' })).toThrow(/MONGODB_DATABASE/);
    let message = '';
    try {
      loadConfig({ KURRENTDB_URL: 'https://admin:s3cret@host:2113' });
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toMatch(/KURRENTDB_URL/);
    expect(message).not.toContain('s3cret');
  });

  it('given empty variables (as a compose file may pass them), when loaded, then they count as unset', () => {
    expect(loadConfig({ KURRENTDB_URL: '', MONGODB_URL: '', EVENT_STORE: '', READ_STORE: '' })).toMatchObject({
      EVENT_STORE: 'embedded',
      READ_STORE: 'embedded',
    });
  });

  describe('PostgreSQL', () => {
    const POSTGRES_URL = 'postgres://wallet:s3cret@db:5432/wallet_ops?sslmode=verify-full';

    it('given only POSTGRES_URL, when loaded, then it selects both stores, with the pool and timeout defaults', () => {
      expect(loadConfig({ POSTGRES_URL, SECRETS_KEY })).toMatchObject({
        EVENT_STORE: 'postgres',
        READ_STORE: 'postgres',
        POSTGRES_URL,
        POSTGRES_POOL_SIZE: 10,
        POSTGRES_STATEMENT_TIMEOUT_MS: 10_000,
      });
      expect(
        loadConfig({
          POSTGRES_URL: 'postgresql://db/w',
          SECRETS_KEY,
          POSTGRES_POOL_SIZE: '3',
          POSTGRES_STATEMENT_TIMEOUT_MS: '2500',
        }),
      ).toMatchObject({
        EVENT_STORE: 'postgres',
        POSTGRES_POOL_SIZE: 3,
        POSTGRES_STATEMENT_TIMEOUT_MS: 2500,
      });
    });

    it('given POSTGRES_URL and an explicit choice, when loaded, then the explicit choice wins, mixing stores', () => {
      expect(loadConfig({ POSTGRES_URL, EVENT_STORE: 'embedded', SECRETS_KEY })).toMatchObject({
        EVENT_STORE: 'embedded',
        READ_STORE: 'postgres',
      });
      expect(loadConfig({ POSTGRES_URL, KURRENTDB_URL, EVENT_STORE: 'kurrentdb', SECRETS_KEY })).toMatchObject({
        EVENT_STORE: 'kurrentdb',
        READ_STORE: 'postgres',
      });
      expect(loadConfig({ POSTGRES_URL, MONGODB_URL, READ_STORE: 'mongodb', SECRETS_KEY })).toMatchObject({
        EVENT_STORE: 'postgres',
        READ_STORE: 'mongodb',
      });
      expect(
        loadConfig({ KURRENTDB_URL, POSTGRES_URL, READ_STORE: 'postgres', EVENT_STORE: 'kurrentdb', SECRETS_KEY }),
      ).toMatchObject({ EVENT_STORE: 'kurrentdb', READ_STORE: 'postgres' });
    });

    it('given two URLs for one store and no explicit choice, when loaded, then it is refused naming both and the choice to make', () => {
      expect(() => loadConfig({ POSTGRES_URL, KURRENTDB_URL, SECRETS_KEY })).toThrow(
        /EVENT_STORE: KURRENTDB_URL and POSTGRES_URL are both set/,
      );
      expect(() => loadConfig({ POSTGRES_URL, MONGODB_URL, SECRETS_KEY })).toThrow(
        /READ_STORE: MONGODB_URL and POSTGRES_URL are both set/,
      );
      expect(() => loadConfig({ POSTGRES_URL, MONGODB_URL, READ_STORE: 'mongodb', SECRETS_KEY })).not.toThrow();
    });

    it('given a PostgreSQL store without its URL, when loaded, then it is refused naming the variable', () => {
      expect(() => loadConfig({ EVENT_STORE: 'postgres', SECRETS_KEY })).toThrow(
        /POSTGRES_URL: required when EVENT_STORE is postgres/,
      );
      expect(() => loadConfig({ READ_STORE: 'postgres', SECRETS_KEY })).toThrow(
        /POSTGRES_URL: required when READ_STORE is postgres/,
      );
    });

    it('given a malformed URL or pool settings, when loaded, then they are refused, and no password is repeated', () => {
      for (const url of [
        'http://admin:s3cret@db/w',
        'mysql://admin:s3cret@db/w',
        'postgres://db/w?password=s3cret x',
      ]) {
        let message = '';
        try {
          loadConfig({ POSTGRES_URL: url, SECRETS_KEY });
        } catch (error) {
          message = (error as Error).message;
        }
        expect(message).toMatch(/POSTGRES_URL: a PostgreSQL connection string/);
        expect(message).not.toContain('s3cret');
      }
      expect(() => loadConfig({ POSTGRES_URL, SECRETS_KEY, POSTGRES_POOL_SIZE: '0' })).toThrow(/POSTGRES_POOL_SIZE/);
      expect(() => loadConfig({ POSTGRES_URL, SECRETS_KEY, POSTGRES_STATEMENT_TIMEOUT_MS: '10' })).toThrow(
        /POSTGRES_STATEMENT_TIMEOUT_MS/,
      );
    });

    it('given EVENT_STORE=postgres on a real server, when the stores are opened, then events are stored there, behind the hash chain', async () => {
      const dir = tempDir('store-selection-');
      const url = await freshPostgresDatabase();
      const stores = await openStores({
        ...embedded(dir.path),
        EVENT_STORE: 'postgres',
        POSTGRES_URL: url,
        POSTGRES_POOL_SIZE: 2,
        POSTGRES_STATEMENT_TIMEOUT_MS: 5000,
      });
      try {
        await stores.eventStore.append('s-1', [{ type: 'X', data: {} }], 'no_stream');
        const [stored] = await stores.eventStore.readStream('s-1');
        expect(stored!.metadata.hash).toMatch(/^[0-9a-f]{64}$/);
        const raw = await openPostgresEventStore({
          url,
          poolSize: 1,
          statementTimeoutMs: 5000,
          applicationName: 'test',
        });
        expect(await raw.readAll()).toEqual([stored]);
        await raw.close();
      } finally {
        await stores.close();
        dir.cleanup();
      }
    });

    it('given POSTGRES_URL alone on a real server, when the stores are opened, then events and read models are both stored there', async () => {
      const dir = tempDir('store-selection-');
      const url = await freshPostgresDatabase();
      const config = loadConfig({ POSTGRES_URL: url, SECRETS_KEY, DATA_DIR: dir.path });
      expect([config.EVENT_STORE, config.READ_STORE]).toEqual(['postgres', 'postgres']);
      const stores = await openStores(config);
      try {
        await stores.readStore.defineCollections([{ name: 'things' }]);
        await stores.readStore.commit([{ op: 'upsert', collection: 'things', doc: { id: 't1', n: 1 } }], {
          projection: 'things',
          position: 7,
        });
        const raw = await openPostgresReadStore({
          url,
          poolSize: 1,
          statementTimeoutMs: 5000,
          applicationName: 'test',
        });
        await raw.defineCollections([{ name: 'things' }]);
        expect(await raw.get('things', 't1')).toEqual({ id: 't1', n: 1 });
        expect(await raw.getCheckpoint('things')).toBe(7);
        await raw.close();
      } finally {
        await stores.close();
        dir.cleanup();
      }
    });
  });

  it('given the embedded selection, when the stores are opened, then they work in the data directory', async () => {
    const dir = tempDir('store-selection-');
    const stores = await openStores(embedded(dir.path));
    try {
      await stores.eventStore.append('s-1', [{ type: 'X', data: {} }], 'no_stream');
      expect(await stores.eventStore.headPosition()).toBeGreaterThan(0);
      await stores.readStore.defineCollections([{ name: 'things' }]);
      expect(await stores.readStore.count('things')).toBe(0);
    } finally {
      await stores.close();
      dir.cleanup();
    }
  });

  it("given STORE_BUSY_BUDGET_MS, when another connection holds each embedded store's write lock, then an append and a commit fail as unavailable after that budget, not the default 10 s", async () => {
    const dir = tempDir('store-selection-');
    const stores = await openStores(loadConfig({ DATA_DIR: dir.path, STORE_BUSY_BUDGET_MS: '100' }));
    const lockers = ['events.sqlite', 'read-models.sqlite'].map((file) => new Database(join(dir.path, file)));
    try {
      await stores.readStore.defineCollections([{ name: 'things' }]);
      for (const locker of lockers) locker.exec('BEGIN EXCLUSIVE');
      const started = performance.now();
      await expect(stores.eventStore.append('s-1', [{ type: 'X', data: {} }], 'no_stream')).rejects.toBeInstanceOf(
        EventStoreUnavailableError,
      );
      await expect(
        stores.readStore.commit([{ op: 'upsert', collection: 'things', doc: { id: 't1' } }], {
          projection: 'things',
          position: 1,
        }),
      ).rejects.toBeInstanceOf(ReadStoreUnavailableError);
      expect(performance.now() - started, 'both within far less than one default budget').toBeLessThan(5_000);
      for (const locker of lockers) locker.exec('ROLLBACK');
      await stores.eventStore.append('s-1', [{ type: 'X', data: {} }], 'no_stream');
      expect(await stores.eventStore.headPosition()).toBeGreaterThan(0);
    } finally {
      for (const locker of lockers) {
        if (locker.inTransaction) locker.exec('ROLLBACK');
        locker.close();
      }
      await stores.close();
      dir.cleanup();
    }
  });

  it('given a read store that cannot be opened, when the stores are opened, then it fails and the event store it had opened is closed again', async () => {
    const dir = tempDir('store-selection-');
    try {
      mkdirSync(join(dir.path, 'read-models.sqlite')); // a directory where the read store's file should be
      let closed = 0;
      const counted = {
        eventStore: (store: EventStore): EventStore => {
          const close = store.close.bind(store);
          store.close = async () => {
            closed += 1;
            await close();
          };
          return store;
        },
      };
      await expect(openStores(embedded(dir.path), counted)).rejects.toThrow();
      expect(closed).toBe(1);
    } finally {
      dir.cleanup();
    }
  });
});

/**
 * A damaged SQLite file is corrupted, not unavailable: the embedded adapters report SQLITE_CORRUPT and
 * SQLITE_NOTADB as StoreCorruptedError naming the file, never as the retryable unavailable error (which
 * the consumers would retry for ever and the API would answer with "retry later"). The files are copies of
 * a real events.sqlite written by the event store, with bytes flipped.
 */
import { randomUUID } from 'node:crypto';
import { copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { embedded, openStores } from '../../src/adapters/open-stores.ts';
import { EventStoreUnavailableError } from '../../src/ports/event-store.ts';
import { StoreCorruptedError } from '../../src/ports/store-corrupted.ts';
import { checkSqliteIntegrity } from '../../src/adapters/sqlite/sqlite-database.ts';
import { tempDir } from '../support/temp-dir.ts';
import { flipBytes, tablePages } from '../support/corrupt-sqlite.ts';
import { startTestSystem } from '../support/system.ts';

describe('a corrupted embedded event store', () => {
  const source = tempDir();
  beforeAll(async () => {
    const stores = await openStores(embedded(source.path));
    for (let i = 0; i < 20; i++) {
      await stores.eventStore.append(
        `wallet-test-${i}`,
        Array.from({ length: 100 }, () => ({ type: 'WalletCredited', data: { amount: '1.00', note: randomUUID() } })),
        'any',
      );
    }
    await stores.close(); // the last connection checkpoints the WAL into events.sqlite
  });
  afterAll(() => source.cleanup());

  /** A data directory holding a copy of the real events.sqlite, damaged by `damage`. */
  function damagedCopy(damage: (file: string) => void) {
    const dir = tempDir();
    const file = join(dir.path, 'events.sqlite');
    copyFileSync(join(source.path, 'events.sqlite'), file);
    damage(file);
    return dir;
  }

  it('given a copy whose events pages have flipped bytes, when the history is read, then it fails with StoreCorruptedError naming events.sqlite, not as unavailable', async () => {
    const dir = damagedCopy((file) => {
      const { pageSize, pages } = tablePages(file, 'events');
      expect(pages.length).toBeGreaterThan(10);
      for (const page of pages.slice(2, 6)) flipBytes(file, (page - 1) * pageSize, 16);
    });
    const stores = await openStores(embedded(dir.path));
    try {
      const reading = stores.eventStore.readAll();
      await expect(reading).rejects.toBeInstanceOf(StoreCorruptedError);
      await expect(reading).rejects.not.toBeInstanceOf(EventStoreUnavailableError);
      await expect(reading).rejects.toThrow(/events\.sqlite is corrupted: .*\(SQLITE_CORRUPT/);
    } finally {
      await stores.close();
      dir.cleanup();
    }
  });

  it("given a copy whose events pages have flipped bytes, when the check of a start runs (quick or full), then it throws StoreCorruptedError naming events.sqlite and SQLite's findings; an intact copy passes", () => {
    const damaged = damagedCopy((file) => {
      const { pageSize, pages } = tablePages(file, 'events');
      for (const page of pages.slice(2, 6)) flipBytes(file, (page - 1) * pageSize, 16);
    });
    const intact = damagedCopy(() => {});
    try {
      for (const mode of ['quick', 'full'] as const) {
        expect(() => checkSqliteIntegrity(join(damaged.path, 'events.sqlite'), mode)).toThrow(StoreCorruptedError);
        expect(() => checkSqliteIntegrity(join(damaged.path, 'events.sqlite'), mode)).toThrow(
          new RegExp(
            `^events\\.sqlite is corrupted: PRAGMA ${mode === 'quick' ? 'quick_check' : 'integrity_check'}: \\S`,
          ),
        );
        expect(() => checkSqliteIntegrity(join(intact.path, 'events.sqlite'), mode)).not.toThrow();
      }
      expect(() => checkSqliteIntegrity(join(damaged.path, 'events.sqlite'), 'off')).not.toThrow();
      expect(() => checkSqliteIntegrity(join(damaged.path, 'absent.sqlite'), 'quick')).not.toThrow();
    } finally {
      damaged.cleanup();
      intact.cleanup();
    }
  });

  it('given an events.sqlite damaged where a start reads nothing (the index of event ids), when the server starts on it, then the check refuses it with StoreCorruptedError; without the check it would have started and served', async () => {
    const dir = damagedCopy((file) => {
      const { pageSize, pages } = tablePages(file, 'sqlite_autoindex_events_1');
      expect(pages.length).toBeGreaterThan(2);
      for (const page of pages.slice(1, 3)) flipBytes(file, (page - 1) * pageSize, 16);
    });
    try {
      const env = { DATA_DIR: dir.path, EVENT_STORE: 'embedded', READ_STORE: 'embedded' };
      const start = startTestSystem(env);
      await expect(start).rejects.toBeInstanceOf(StoreCorruptedError);
      await expect(start).rejects.toThrow(/^events\.sqlite is corrupted: PRAGMA quick_check: \S/);
      // What the probe saw: nothing a start reads meets the damage.
      const unchecked = await startTestSystem({ ...env, EVENT_STORE_INTEGRITY_CHECK: 'off' });
      await unchecked.close();
    } finally {
      dir.cleanup();
    }
  });

  it('given a copy whose header has flipped bytes, when it is opened, then it fails with StoreCorruptedError naming events.sqlite (SQLITE_NOTADB)', async () => {
    const dir = damagedCopy((file) => flipBytes(file, 0, 16));
    try {
      await expect(openStores(embedded(dir.path))).rejects.toThrow(StoreCorruptedError);
      await expect(openStores(embedded(dir.path))).rejects.toThrow(/events\.sqlite is corrupted: .*\(SQLITE_NOTADB\)/);
    } finally {
      dir.cleanup();
    }
  });
});

/**
 * `events import` at the EventStore boundary: the embedded store, recorded, stands in for the target. What is
 * checked is how the import groups events into appends, against KurrentDB's request limit (its MaxAppendSize,
 * 1 MiB by default, over the events' data and metadata): this proves the import's batching, not KurrentDB's
 * behaviour, which no server here can show.
 */
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openSqliteEventStore } from '../../src/adapters/sqlite/sqlite-event-store.ts';
import { exportEvents, importEvents, MAX_APPEND_BYTES } from '../../src/audit/export-import.ts';
import { withHashChain } from '../../src/audit/hash-chain.ts';
import type { EventStore, StreamAppend } from '../../src/ports/event-store.ts';
import { tempDir } from '../support/temp-dir.ts';

const KURRENTDB_MAX_APPEND_SIZE = 1024 * 1024;

let dir: ReturnType<typeof tempDir>;
beforeEach(() => {
  dir = tempDir('export-import-');
});
afterEach(() => dir.cleanup());

/** What KurrentDB counts of an append, near enough: each event's data and metadata as sent. */
const appendBytes = (requests: StreamAppend[]) =>
  requests.flatMap((request) => request.events).reduce((sum, event) => sum + Buffer.byteLength(JSON.stringify(event.data)) + Buffer.byteLength(JSON.stringify(event.metadata ?? {})), 0);

/** The store, recording the size of every appendMulti it is given. */
function recording(store: EventStore): { store: EventStore; sizes: Array<{ events: number; bytes: number }> } {
  const sizes: Array<{ events: number; bytes: number }> = [];
  return {
    sizes,
    store: {
      ...store,
      headPosition: () => store.headPosition(),
      readAll: (options) => store.readAll(options),
      readStream: (stream, options) => store.readStream(stream, options),
      append: (stream, events, expected) => store.append(stream, events, expected),
      appendMulti: (requests) => {
        sizes.push({ events: requests.reduce((n, request) => n + request.events.length, 0), bytes: appendBytes(requests) });
        return store.appendMulti(requests);
      },
      subscribeToAll: (options) => store.subscribeToAll(options),
      close: () => store.close(),
    },
  };
}

describe('events import: appends within the store\'s request size', () => {
  it('given fewer than 1,000 events whose data add up to several MiB, when imported, then every append stays under half of KurrentDB\'s 1 MiB limit and the history arrives whole', async () => {
    const source = withHashChain(openSqliteEventStore({ file: join(dir.path, 'source.sqlite') }));
    const blob = 'x'.repeat(8 * 1024);
    for (let i = 0; i < 10; i++) {
      await source.append('wallet-a', Array.from({ length: 30 }, (_, j) => ({ type: 'Noted', data: { i, j, blob } })), 'any');
    }
    await source.close();
    const file = join(dir.path, 'export.jsonl');
    const raw = openSqliteEventStore({ file: join(dir.path, 'source.sqlite') });
    await exportEvents(raw, file);
    await raw.close();

    const target = recording(openSqliteEventStore({ file: join(dir.path, 'target.sqlite') }));
    try {
      const result = await importEvents(target.store, file);
      expect(result.events).toBe(300);
      expect(target.sizes.length).toBeGreaterThan(4);
      for (const { bytes } of target.sizes) expect(bytes).toBeLessThanOrEqual(MAX_APPEND_BYTES);
      expect(MAX_APPEND_BYTES).toBeLessThanOrEqual(KURRENTDB_MAX_APPEND_SIZE / 2);
      expect(target.sizes.reduce((n, size) => n + size.events, 0)).toBe(300);
      expect((await target.store.readAll()).length).toBe(300);
    } finally {
      await target.store.close();
    }
  });

  it('given one event larger than the batch budget, when imported, then it goes alone in its own append (the store decides whether it fits)', async () => {
    const source = withHashChain(openSqliteEventStore({ file: join(dir.path, 'source.sqlite') }));
    await source.append('wallet-a', [{ type: 'Noted', data: { n: 1 } }], 'no_stream');
    await source.append('wallet-a', [{ type: 'Noted', data: { blob: 'y'.repeat(600 * 1024) } }], 0);
    await source.append('wallet-b', [{ type: 'Noted', data: { n: 3 } }], 'no_stream');
    await source.close();
    const file = join(dir.path, 'export.jsonl');
    const raw = openSqliteEventStore({ file: join(dir.path, 'source.sqlite') });
    await exportEvents(raw, file);
    await raw.close();

    const target = recording(openSqliteEventStore({ file: join(dir.path, 'target.sqlite') }));
    try {
      await importEvents(target.store, file);
      expect(target.sizes.map((size) => size.events)).toEqual([1, 1, 1]);
    } finally {
      await target.store.close();
    }
  });
});

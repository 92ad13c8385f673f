/**
 * `events import` at the EventStore boundary: the embedded store, recorded, stands in for the target. What is
 * checked is how the import groups events into appends, against KurrentDB's request limit (its MaxAppendSize,
 * 1 MiB by default, over the events' data and metadata): this proves the import's batching, not KurrentDB's
 * behaviour, which no server here can show.
 */
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openSqliteEventStore } from '../../src/adapters/sqlite/sqlite-event-store.ts';
import { readFileSync, writeFileSync } from 'node:fs';
import { exportEvents, importEvents, MAX_APPEND_BYTES, readEndOfExport } from '../../src/audit/export-import.ts';
import { unwrapHashChain, withHashChain } from '../../src/audit/hash-chain.ts';
import { verifyHistory } from '../../src/audit/verify.ts';
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
  requests
    .flatMap((request) => request.events)
    .reduce(
      (sum, event) =>
        sum + Buffer.byteLength(JSON.stringify(event.data)) + Buffer.byteLength(JSON.stringify(event.metadata ?? {})),
      0,
    );

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
        sizes.push({
          events: requests.reduce((n, request) => n + request.events.length, 0),
          bytes: appendBytes(requests),
        });
        return store.appendMulti(requests);
      },
      subscribeToAll: (options) => store.subscribeToAll(options),
      close: () => store.close(),
    },
  };
}

describe("events import: appends within the store's request size", () => {
  it("given fewer than 1,000 events whose data add up to several MiB, when imported, then every append stays under half of KurrentDB's 1 MiB limit and the history arrives whole", async () => {
    const source = withHashChain(openSqliteEventStore({ file: join(dir.path, 'source.sqlite') }));
    const blob = 'x'.repeat(8 * 1024);
    for (let i = 0; i < 10; i++) {
      await source.append(
        'wallet-a',
        Array.from({ length: 30 }, (_, j) => ({ type: 'Noted', data: { i, j, blob } })),
        'any',
      );
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

describe('events export and import: complete or refused, resumable', () => {
  const SOURCE_EVENTS = 250;
  async function exported(): Promise<string> {
    const source = withHashChain(openSqliteEventStore({ file: join(dir.path, 'source.sqlite') }));
    for (let i = 0; i < SOURCE_EVENTS / 5; i++)
      await source.append(
        `wallet-${i % 7}`,
        Array.from({ length: 5 }, (_, j) => ({ type: 'Noted', data: { i, j } })),
        'any',
      );
    await source.close();
    const raw = openSqliteEventStore({ file: join(dir.path, 'source.sqlite') });
    const file = join(dir.path, 'export.jsonl');
    await exportEvents(raw, file);
    await raw.close();
    return file;
  }
  const history = async (file: string) => {
    const store = openSqliteEventStore({ file });
    try {
      return (await store.readAll()).map((e) => ({
        id: e.id,
        stream: e.stream,
        revision: e.revision,
        type: e.type,
        data: e.data,
        metadata: e.metadata,
      }));
    } finally {
      await store.close();
    }
  };

  it('when an export is cut short (its end marker and last events lost), then import refuses it and writes nothing', async () => {
    const file = await exported();
    const lines = readFileSync(file, 'utf8').trimEnd().split('\n');
    expect(JSON.parse(lines.at(-1)!)).toMatchObject({ endOfExport: { events: SOURCE_EVENTS, whole: true } });
    writeFileSync(file, `${lines.slice(0, 100).join('\n')}\n`);
    const target = openSqliteEventStore({ file: join(dir.path, 'target.sqlite') });
    try {
      await expect(importEvents(target, file)).rejects.toThrow(/completeness.*no end marker/);
      expect(await target.headPosition()).toBe(0);
    } finally {
      await target.close();
    }
  });

  it('when an import is killed half way, then running it again resumes and gives the whole identical history', async () => {
    const file = await exported();
    const targetFile = join(dir.path, 'target.sqlite');
    const target = openSqliteEventStore({ file: targetFile });
    let appends = 0;
    const dying: EventStore = {
      ...recording(target).store,
      appendMulti: (requests) => (++appends > 2 ? Promise.reject(new Error('killed')) : target.appendMulti(requests)),
    };
    await expect(importEvents(dying, file)).rejects.toThrow('killed');
    const partial = await target.headPosition();
    expect(partial).toBeGreaterThan(0);
    expect(partial).toBeLessThan(SOURCE_EVENTS);

    const resumed = await importEvents(target, file);
    await target.close();
    expect(resumed.skipped).toBe(partial);
    expect(resumed.events).toBe(SOURCE_EVENTS);
    expect(await history(targetFile)).toEqual(await history(join(dir.path, 'source.sqlite')));
  });

  it('when the target holds another history, then import refuses it', async () => {
    const file = await exported();
    const target = withHashChain(openSqliteEventStore({ file: join(dir.path, 'target.sqlite') }));
    await target.append('other', [{ type: 'Noted', data: {} }], 'any');
    try {
      await expect(importEvents(unwrapHashChain(target), file)).rejects.toThrow(
        /not empty and does not hold the start of this export/,
      );
    } finally {
      await target.close();
    }
  });

  it('given a copy that lost its tail, when verified against the export, then verify reports it incomplete (and without it, it passes)', async () => {
    const file = await exported();
    const target = openSqliteEventStore({ file: join(dir.path, 'target.sqlite') });
    let appends = 0;
    const dying: EventStore = {
      ...recording(target).store,
      appendMulti: (requests) => (++appends > 1 ? Promise.reject(new Error('killed')) : target.appendMulti(requests)),
    };
    await expect(importEvents(dying, file, { onProgress: () => {} })).rejects.toThrow('killed');
    try {
      const plain = await verifyHistory({ eventStore: target, ledger: null, assetScale: 2 });
      expect(plain.problems.filter((p) => p.check !== 'outcome')).toEqual([]);
      const end = readEndOfExport(file)!;
      const report = await verifyHistory({
        eventStore: target,
        ledger: null,
        assetScale: 2,
        expected: { ...end, source: file },
      });
      expect(report.ok).toBe(false);
      expect(report.problems.map((p) => p.check)).toContain('completeness');
      expect(report.problems.find((p) => p.check === 'completeness')!.detail).toMatch(/truncated/);
    } finally {
      await target.close();
    }
  });
});

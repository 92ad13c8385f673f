import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DuplicateEventIdError } from '../../src/adapters/sqlite/sqlite-append.ts';
import { openSqliteEventStore } from '../../src/adapters/sqlite/sqlite-event-store.ts';
import {
  type EventStore,
  EventStoreUnavailableError,
  type RecordedEvent,
  WrongExpectedVersionError,
} from '../../src/ports/event-store.ts';
import { describeEventStoreContract } from '../contracts/event-store.contract.ts';
import { tempDir } from '../support/temp-dir.ts';

const PROJECT_ROOT = fileURLToPath(new URL('../..', import.meta.url));
const APPEND_CHILD = fileURLToPath(new URL('../support/append-events.child.ts', import.meta.url));
const POLL_MS = 10;

// Commits on the event loop (the default), or moved to the store's commit thread from the second batch on: the same contract.
for (const commitOn of ['event-loop', 'thread'] as const) {
  describeEventStoreContract(
    commitOn === 'event-loop' ? 'embedded SQLite' : 'embedded SQLite, committed on its commit thread',
    async () => {
      const dir = tempDir('event-store-');
      const file = join(dir.path, 'events.sqlite');
      const store = openSqliteEventStore({ file, pollIntervalMs: POLL_MS, commitOn });
      return {
        store,
        cleanup: async () => {
          await store.close();
          dir.cleanup();
        },
        openSecondHandle: async () => openSqliteEventStore({ file, pollIntervalMs: POLL_MS, commitOn }),
      };
    },
  );
}

describe('SQLite event store, embedded specifics', () => {
  let dir: ReturnType<typeof tempDir>;
  let file: string;
  const opened: EventStore[] = [];
  const children: ChildProcess[] = [];
  const open = () => {
    const store = openSqliteEventStore({ file, pollIntervalMs: POLL_MS });
    opened.push(store);
    return store;
  };
  const event = (seq: number) => ({ type: 'Seq', data: { seq } });

  beforeEach(() => {
    dir = tempDir('event-store-');
    file = join(dir.path, 'events.sqlite');
  });
  afterEach(async () => {
    for (const child of children.splice(0)) if (child.exitCode === null) child.kill();
    await Promise.all(opened.splice(0).map((store) => store.close()));
    dir.cleanup();
  });

  it('given a new file, when it is opened, then the store is empty at head position 0', async () => {
    const store = open();
    expect(await store.headPosition()).toBe(0);
    expect(await store.readAll()).toEqual([]);
  });

  it('given appended events, when the store is closed and reopened, then they are all there and appends continue after them', async () => {
    const first = open();
    await first.append('a', [event(0), event(1)], 'no_stream');
    await first.appendMulti([{ stream: 'b', events: [event(2)], expectedRevision: 'no_stream' }]);
    const before = await first.readAll();
    await first.close();

    const reopened = open();
    expect(await reopened.readAll()).toEqual(before);
    expect(await reopened.headPosition()).toBe(3);
    await expect(reopened.append('a', [event(3)], 0)).rejects.toMatchObject({ actual: 1 });
    expect(await reopened.append('a', [event(3)], 1)).toEqual({ nextExpectedRevision: 2, position: 4 });
  });

  it('given appends queued but not yet committed, when the store is closed, then they are committed first', async () => {
    const store = open();
    const pending = [store.append('a', [event(0)], 'no_stream'), store.append('b', [event(1)], 'no_stream')];
    await store.close();
    await expect(Promise.all(pending)).resolves.toHaveLength(2);
    expect((await open().readAll()).map((e) => e.stream)).toEqual(['a', 'b']);
  });

  it('given a closed store, when it is used, then it reports itself unavailable', async () => {
    const store = open();
    await store.close();
    await store.close();
    await expect(store.append('a', [event(0)], 'any')).rejects.toBeInstanceOf(EventStoreUnavailableError);
    await expect(store.readAll()).rejects.toBeInstanceOf(EventStoreUnavailableError);
    await expect(store.headPosition()).rejects.toBeInstanceOf(EventStoreUnavailableError);
    expect(() => store.subscribeToAll({ from: 'start' })).toThrow(EventStoreUnavailableError);
  });

  describe('subscriptions', () => {
    it('given a poll interval of a minute, when this same store appends, then a caught-up subscriber gets the event at once', async () => {
      const store = openSqliteEventStore({ file, pollIntervalMs: 60_000 });
      opened.push(store);
      const iterator = store.subscribeToAll({ from: 'start' })[Symbol.asyncIterator]();
      const pending = iterator.next();
      await new Promise((resolve) => setTimeout(resolve, 20));
      const started = Date.now();
      await store.append('a', [event(0)], 'no_stream');
      expect((await pending).value).toMatchObject({ stream: 'a', data: { seq: 0 } });
      expect(Date.now() - started).toBeLessThan(200);
    });

    it('given a subscriber to streams this store does not write, when this store appends elsewhere, then it still gets what another connection committed just before, and its own later match', async () => {
      const store = openSqliteEventStore({ file, pollIntervalMs: 60_000 });
      opened.push(store);
      const other = open();
      await store.append('x-0', [event(0)], 'no_stream');
      const iterator = store
        .subscribeToAll({ from: 'start', filter: { streamPrefixes: ['k-'] } })
        [Symbol.asyncIterator]();
      const first = iterator.next();
      await new Promise((resolve) => setTimeout(resolve, 20));
      // Position 2 is the other connection's: this store's commit at 3 must not move the subscriber past it.
      await other.append('k-1', [event(1)], 'no_stream');
      await store.append('x-1', [event(2)], 'no_stream');
      expect((await first).value).toMatchObject({ stream: 'k-1', position: 2 });
      for (let i = 0; i < 5; i++) await store.append(`x-${i + 2}`, [event(i + 3)], 'no_stream');
      await store.append('k-2', [event(8)], 'no_stream');
      expect((await iterator.next()).value).toMatchObject({ stream: 'k-2', position: 9 });
    });

    it('given a poll interval of a minute, when another process appends, then a caught-up subscriber gets the events without waiting for its poll', async () => {
      // Only the watch on the data directory can deliver them: the test's own timeout is half the poll interval.
      const store = openSqliteEventStore({ file, pollIntervalMs: 60_000 });
      opened.push(store);
      await store.append('mine', [event(-1)], 'no_stream');
      const iterator = store.subscribeToAll({ from: 'start' })[Symbol.asyncIterator]();
      expect((await iterator.next()).value).toMatchObject({ stream: 'mine' });
      const child = spawn(process.execPath, [APPEND_CHILD, file, '300'], {
        cwd: PROJECT_ROOT,
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      children.push(child);
      const seqs: number[] = [];
      while (seqs.length < 300)
        seqs.push(((await iterator.next()).value as RecordedEvent<string, { seq: number }>).data.seq);
      expect(seqs).toEqual(Array.from({ length: 300 }, (_, i) => i));
    }, 30_000);

    it('given a rare event type spread over 25,000 events, when subscribing with a type filter, then exactly the matching events arrive in order', async () => {
      const store = open();
      const rare = new Set([0, 999, 1000, 9999, 10_000, 10_001, 19_999, 24_999]);
      for (let start = 0; start < 25_000; start += 1000) {
        const events = Array.from({ length: 1000 }, (_, i) => ({
          type: rare.has(start + i) ? 'Rare' : 'Common',
          data: { seq: start + i },
        }));
        await store.append(`s-${start % 3}`, events, 'any');
      }
      const iterator = store
        .subscribeToAll({ from: 'start', filter: { eventTypes: ['Rare'] } })
        [Symbol.asyncIterator]();
      const received: number[] = [];
      for (let i = 0; i < rare.size; i++)
        received.push(((await iterator.next()).value as RecordedEvent<string, { seq: number }>).data.seq);
      expect(received).toEqual([...rare]);
      await store.append('late', [{ type: 'Rare', data: { seq: 25_000 } }], 'any');
      expect((await iterator.next()).value).toMatchObject({ stream: 'late', data: { seq: 25_000 } });
    });
  });

  describe('group commit', () => {
    /** Frames written to the WAL since the last TRUNCATE checkpoint: every commit writes at least one. */
    const walFrames = (raw: Database.Database) =>
      (raw.pragma('wal_checkpoint(PASSIVE)') as Array<{ log: number }>)[0]!.log;

    it('when 100 appends to distinct streams and one conflicting append are issued together, then they share one transaction and only the conflict fails', async () => {
      const store = open();
      await store.append('taken', [event(-1)], 'no_stream');
      const raw = new Database(file);
      try {
        raw.pragma('wal_checkpoint(TRUNCATE)');
        const appends = Array.from({ length: 100 }, (_, i) => store.append(`s-${i}`, [event(i)], 'no_stream'));
        const conflicting = store.append('taken', [event(100)], 'no_stream');
        const results = await Promise.all(appends);
        await expect(conflicting).rejects.toBeInstanceOf(WrongExpectedVersionError);
        // Queue order is commit order: positions follow the calls.
        expect(results.map((r) => r.position)).toEqual(Array.from({ length: 100 }, (_, i) => i + 2));
        const batchedFrames = walFrames(raw);

        raw.pragma('wal_checkpoint(TRUNCATE)');
        for (let i = 0; i < 100; i++) await store.append(`t-${i}`, [event(i)], 'no_stream');
        const sequentialFrames = walFrames(raw);
        // One transaction writes each touched page once; 100 transactions write at least one frame each.
        expect(batchedFrames).toBeLessThan(40);
        expect(sequentialFrames).toBeGreaterThanOrEqual(100);
      } finally {
        raw.close();
      }
      expect(await store.readStream('taken')).toHaveLength(1);
    });

    it('when two appends in one batch reuse an event id, then the second fails alone and nothing is deduplicated', async () => {
      const store = open();
      const id = '3f0e6e55-2f4e-4bb4-9a43-6c1f3a1f0c11';
      const first = store.append('a', [{ ...event(0), id }], 'any');
      const second = store.append('b', [event(1), { ...event(2), id }], 'any');
      const third = store.append('c', [event(3)], 'any');
      await expect(first).resolves.toMatchObject({ nextExpectedRevision: 0 });
      await expect(second).rejects.toBeInstanceOf(DuplicateEventIdError);
      await expect(third).resolves.toMatchObject({ nextExpectedRevision: 0 });
      await expect(store.append('a', [{ ...event(4), id }], 'any')).rejects.toThrow(/already stored/);
      expect((await store.readAll()).map((e) => e.stream)).toEqual(['a', 'c']);
    });

    it('when an append alone in its batch reuses an id in its second stream, then nothing of it is written and the next append commits', async () => {
      const store = open();
      const id = '5b8c1f0e-7a43-4c2d-9e1a-2d4b6f8a0c13';
      await store.append('a', [{ ...event(0), id }], 'no_stream');
      const lone = store.appendMulti([
        { stream: 'b', events: [event(1)], expectedRevision: 'no_stream' },
        { stream: 'c', events: [{ ...event(2), id }], expectedRevision: 'no_stream' },
      ]);
      await expect(lone).rejects.toBeInstanceOf(DuplicateEventIdError);
      await expect(store.append('b', [event(3)], 'no_stream')).resolves.toMatchObject({
        nextExpectedRevision: 0,
        position: 2,
      });
      expect((await store.readAll()).map((e) => [e.stream, e.data])).toEqual([
        ['a', { seq: 0 }],
        ['b', { seq: 3 }],
      ]);
    });

    it('when an event id is not a uuid, then the append is rejected', async () => {
      await expect(open().append('a', [{ ...event(0), id: 'evt-1' }], 'any')).rejects.toThrow(/not a uuid/);
    });
  });

  it('given another process holding the write lock for a moment, when appending, then the append waits for it and succeeds', async () => {
    const store = open();
    await store.append('a', [event(0)], 'no_stream');
    const holdLock = `
      const db = new (require('better-sqlite3'))(process.argv[1]);
      db.exec('BEGIN IMMEDIATE');
      process.stdout.write('locked\\n');
      setTimeout(() => { db.exec('COMMIT'); db.close(); }, 300);`;
    const child = spawn(process.execPath, ['-e', holdLock, file], {
      cwd: PROJECT_ROOT,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    children.push(child);
    await once(child.stdout!, 'data');
    const started = Date.now();
    await expect(store.append('a', [event(1)], 0)).resolves.toMatchObject({ nextExpectedRevision: 1 });
    expect(Date.now() - started).toBeGreaterThanOrEqual(150);
  });

  it('given a subscriber from position 0, when another process appends 10,000 events, then each arrives exactly once and in order', async () => {
    const store = open();
    const total = 10_000;
    const subscription = store.subscribeToAll({ from: 0 });
    const child = spawn(process.execPath, [APPEND_CHILD, file, String(total)], {
      cwd: PROJECT_ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child);
    let output = '';
    child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;

    // Stop the subscription if the events do not all come in time, so the test fails instead of hanging.
    const deadline = setTimeout(() => void subscription.stop(), 15_000);
    const received: RecordedEvent[] = [];
    for await (const e of subscription) {
      received.push(e);
      if (received.length === total) break;
    }
    clearTimeout(deadline);

    // The child must end by itself once closed: close() leaves no timer or handle behind.
    const [code] = await exited;
    expect(code, output).toBe(0);
    expect(received).toHaveLength(total);
    received.forEach((e, i) => {
      if (i > 0 && e.position <= received[i - 1]!.position)
        throw new Error(`position ${e.position} after ${received[i - 1]!.position}`);
      if ((e.data as { seq: number }).seq !== i)
        throw new Error(`event ${i} carries seq ${(e.data as { seq: number }).seq}`);
    });
    expect(await store.headPosition()).toBe(received[total - 1]!.position);
    expect(received[0]!.metadata).toEqual({ actor: 'system:child' });
  });
});

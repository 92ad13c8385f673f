/**
 * The embedded event store's commit thread (src/adapters/sqlite/sqlite-commit-thread.ts): batches commit on the
 * event loop until the thread is up, then on the thread, with the same outcomes; a thread that dies fails only the
 * batch it had not answered, and commits go on.
 */
import { join } from 'node:path';
import type { Worker } from 'node:worker_threads';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  AppendWriter,
  DuplicateEventIdError,
  isAppendRequestError,
  type PreparedAppend,
  prepareAppends,
} from '../../src/adapters/sqlite/sqlite-append.ts';
import { CommitThread } from '../../src/adapters/sqlite/sqlite-commit-thread.ts';
import { openSqliteDatabase } from '../../src/adapters/sqlite/sqlite-database.ts';
import { ensureEventSchema } from '../../src/adapters/sqlite/sqlite-event-schema.ts';
import { type Outcome, SavepointBatch } from '../../src/adapters/sqlite/sqlite-group-commit.ts';
import { type AppendResult, WrongExpectedVersionError } from '../../src/ports/event-store.ts';
import { tempDir } from '../support/temp-dir.ts';

describe('the event store commit thread', () => {
  let dir: ReturnType<typeof tempDir>;
  let db: ReturnType<typeof openSqliteDatabase>;
  let thread: CommitThread;
  let onEventLoop: ReturnType<typeof vi.fn<(requests: PreparedAppend[][]) => Array<Outcome<AppendResult[]>>>>;

  const append = (stream: string, expectedRevision: 'no_stream' | number, n = 1) =>
    prepareAppends([
      { stream, expectedRevision, events: Array.from({ length: n }, (_, i) => ({ type: 'Written', data: { i } })) },
    ]);
  const streamRows = (stream: string) =>
    db.prepare('SELECT revision FROM events WHERE stream = ? ORDER BY revision').pluck().all(stream);

  /** Runs batches until one is committed by the thread (the event loop's transaction was not called for it). */
  let warmed = 0;
  async function untilOnThread(): Promise<number> {
    for (let i = 0; i < 500; i++) {
      const calls = onEventLoop.mock.calls.length;
      const [outcome] = await thread.run([append(`warm-${warmed++}`, 'no_stream')]);
      expect(outcome).toMatchObject({ ok: true });
      if (onEventLoop.mock.calls.length === calls) return i;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    throw new Error('the thread never took over');
  }

  beforeEach(() => {
    dir = tempDir('commit-thread-');
    const file = join(dir.path, 'events.sqlite');
    db = openSqliteDatabase(file, ensureEventSchema);
    const writer = new AppendWriter(db);
    const batch = new SavepointBatch(db, (requests: PreparedAppend[]) => writer.write(requests), isAppendRequestError);
    onEventLoop = vi.fn((requests: PreparedAppend[][]) => batch.run(requests));
    thread = new CommitThread(file, onEventLoop);
  });

  afterEach(async () => {
    await thread.close();
    db.close();
    dir.cleanup();
  });

  it('given a process that appends once, when the batch commits, then it commits on the event loop and no thread is waited for', async () => {
    const [outcome] = await thread.run([append('once', 'no_stream')]);
    expect(outcome).toMatchObject({ ok: true, result: [{ nextExpectedRevision: 0 }] });
    expect(onEventLoop).toHaveBeenCalledTimes(1);
  });

  it('given the thread is up, when a batch mixes good appends, a conflict and a duplicate id, then each gets the outcome the event loop would give, with the same error classes', async () => {
    await untilOnThread();
    const [first] = append('mixed', 'no_stream');
    const duplicate = prepareAppends([
      {
        stream: 'other',
        expectedRevision: 'no_stream',
        events: [{ id: first!.events[0]!.id, type: 'Written', data: {} }],
      },
    ]);
    const outcomes = await thread.run([[first!], append('mixed', 'no_stream'), duplicate, append('mixed', 0, 2)]);

    expect(outcomes[0]).toMatchObject({ ok: true, result: [{ nextExpectedRevision: 0 }] });
    expect(outcomes[1]).toMatchObject({ ok: false });
    const conflict = (outcomes[1] as { error: unknown }).error;
    expect(conflict).toBeInstanceOf(WrongExpectedVersionError);
    expect(conflict).toMatchObject({ stream: 'mixed', expected: 'no_stream', actual: 0 });
    expect((outcomes[2] as { error: unknown }).error).toBeInstanceOf(DuplicateEventIdError);
    expect(outcomes[3]).toMatchObject({ ok: true, result: [{ nextExpectedRevision: 2 }] });
    // Committed by the thread's connection before the answer: this connection sees it.
    expect(streamRows('mixed')).toEqual([0, 1, 2]);
  });

  it('given the thread dies while a batch is on it, then that batch fails as of unknown outcome, the next ones commit on the event loop, and a new thread takes over later', async () => {
    await untilOnThread();
    const worker = (thread as unknown as { worker: Worker }).worker;
    // This connection holds the write lock, so the thread's commit waits on it: the batch is surely unanswered
    // when the thread dies, however fast the file system (on tmpfs a commit could otherwise beat terminate()).
    db.exec('BEGIN IMMEDIATE');
    const inFlight = thread.run([append('lost', 'no_stream')]);
    await worker.terminate();
    db.exec('ROLLBACK');
    // The group commit turns it into the port's unavailable error (sqlite-group-commit.ts).
    await expect(inFlight).rejects.toThrow(/whether the batch was committed is not known/);

    const calls = onEventLoop.mock.calls.length;
    const [next] = await thread.run([append('after', 'no_stream')]);
    expect(next, String((next as { error?: unknown }).error)).toMatchObject({ ok: true });
    expect(onEventLoop.mock.calls.length).toBe(calls + 1);
    await untilOnThread();
    expect((thread as unknown as { worker: Worker }).worker).not.toBe(worker);
  });
});

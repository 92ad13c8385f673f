import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openSqliteEventStore } from '../../src/adapters/sqlite/sqlite-event-store.ts';
import {
  InFlightStates,
  runDecision,
  type CommandContext,
  type CommandPipelineDeps,
  type StreamRead,
} from '../../src/commands/pipeline.ts';
import { DomainError } from '../../src/domain/errors.ts';
import { EventStoreUnavailableError, type EventStore, type StreamAppend } from '../../src/ports/event-store.ts';
import { KeyedMutex } from '../../src/shared/keyed-mutex.ts';
import { tempDir } from '../support/temp-dir.ts';

/**
 * A decision with a deadline (CREATE_DEADLINE_MS) is answered by it whatever it waits on: a store that does not
 * answer a read or a commit, the per-process mutex behind such a decision, conflicts decided again. Past it the
 * answer is the store unavailable (503), and says whether the append may still commit.
 */

type Added = { type: 'Added'; data: { total: number } };
const counter = (stream: string): StreamRead<{ total: number }> => ({
  stream,
  initialState: () => ({ total: 0 }),
  evolve: (_state, event: Added) => ({ total: event.data.total }),
});
const context: CommandContext = { actor: 'user:u-1', correlationId: 'corr-1' };
const add = (stream: string, total: number, expectedRevision?: number) => ({
  stream,
  events: [{ type: 'Added', data: { total } }],
  ...(expectedRevision === undefined ? {} : { expectedRevision }),
});

async function caught(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

/** A store whose calls can be held until released (a locked table, a server that stopped answering). */
function holdable(inner: EventStore) {
  let gate: Promise<void> | null = null;
  let open: () => void = () => {};
  const appends: StreamAppend[][] = [];
  const held = <T>(call: () => Promise<T>) => (gate ? gate.then(call) : call());
  const store: EventStore = {
    ...inner,
    append: (stream, events, expected) => held(() => inner.append(stream, events, expected)),
    appendMulti: (requests) => {
      appends.push(requests);
      return held(() => inner.appendMulti(requests));
    },
    readStream: (stream, options) => held(() => inner.readStream(stream, options)),
    readAll: (options) => inner.readAll(options),
    headPosition: () => inner.headPosition(),
    subscribeToAll: (options) => inner.subscribeToAll(options),
    close: () => inner.close(),
  };
  return {
    store,
    appends,
    hold: () => {
      gate = new Promise<void>((resolve) => (open = resolve));
    },
    release: () => {
      gate = null;
      open();
    },
  };
}

describe('a decision with a deadline', () => {
  let dir: ReturnType<typeof tempDir>;
  let inner: EventStore;
  let held: ReturnType<typeof holdable>;
  let deps: CommandPipelineDeps;
  const DEADLINE_MS = 300;

  beforeEach(() => {
    dir = tempDir('pipeline-deadline-');
    inner = openSqliteEventStore({ file: join(dir.path, 'events.sqlite') });
    held = holdable(inner);
    deps = {
      store: held.store,
      serialize: { mutex: new KeyedMutex(), inFlight: new InFlightStates() },
      deadlineMs: DEADLINE_MS,
    };
  });
  afterEach(async () => {
    held.release();
    await inner.close();
    dir.cleanup();
  });

  const decideAdd = (stream: string, total: number) =>
    runDecision(deps, {
      read: { c: counter(stream) },
      decide: () => ({ writes: [add(stream, total)], result: total }),
      context,
    });
  const totalsOf = async (stream: string) =>
    (await inner.readStream(stream)).map((event) => (event.data as Added['data']).total);

  it('when the commit is not answered by the deadline, then it fails as unavailable with the outcome unknown, by the deadline', async () => {
    await decideAdd('counter-a', 1);
    const started = performance.now();
    // Held after the read: the decision reads, submits its append, and the store keeps the commit.
    const holding = runDecision(deps, {
      read: { c: counter('counter-a') },
      decide: () => (held.hold(), { writes: [add('counter-a', 2)], result: 2 }),
      context,
    });
    const error = await caught(holding);
    const tookMs = performance.now() - started;
    expect(error).toBeInstanceOf(EventStoreUnavailableError);
    expect((error as EventStoreUnavailableError).outcomeUnknown).toBe(true);
    expect(tookMs).toBeGreaterThanOrEqual(DEADLINE_MS - 5);
    expect(tookMs).toBeLessThan(DEADLINE_MS + 200);
    // It was unknown indeed: the append commits once the store answers again.
    held.release();
    await expect.poll(() => totalsOf('counter-a')).toEqual([1, 2]);
  });

  it('when a read holds the stream\'s mutex past the deadline, then the decisions queued behind it answer "not done" by their deadline and never append later', async () => {
    held.hold(); // the first decision's read of the stream hangs
    const first = caught(decideAdd('counter-b', 1));
    const queued = Array.from({ length: 5 }, (_, i) => caught(decideAdd('counter-b', 10 + i)));
    const started = performance.now();
    const errors = await Promise.all(queued);
    expect(performance.now() - started).toBeLessThan(DEADLINE_MS + 200);
    for (const error of [...errors, await first]) {
      expect(error).toBeInstanceOf(EventStoreUnavailableError);
      expect((error as EventStoreUnavailableError).outcomeUnknown).toBe(false);
    }
    held.release();
    // Their turns of the mutex come now: each sees it was abandoned and appends nothing.
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(held.appends).toEqual([]);
    expect(await totalsOf('counter-b')).toEqual([]);
  });

  it('when every attempt conflicts, then conflicts are decided again until the deadline and then answered unavailable, not 409', async () => {
    let decisions = 0;
    const error = await caught(
      runDecision(deps, {
        read: { c: counter('counter-c') },
        decide: () => (decisions++, { writes: [add('counter-c', 1, 7)], result: null }),
        context,
      }),
    );
    expect(error).toBeInstanceOf(EventStoreUnavailableError);
    expect(error).not.toBeInstanceOf(DomainError);
    // Its outcome is unknown only if the deadline caught the last attempt's append in flight (refused, as all are).
    expect(decisions).toBeGreaterThan(2);
    expect(held.appends.length).toBeGreaterThanOrEqual(decisions - 1);
  });

  it('when a decision that writes nothing built on an append not committed yet (a repeat of an idempotent request), then it is answered once that append commits', async () => {
    held.hold();
    const original = decideAdd('counter-d', 5); // its read is held: released below
    held.release();
    await new Promise((resolve) => setImmediate(resolve));
    held.hold(); // now its append is held
    let originalDone = false;
    void original.then(
      () => (originalDone = true),
      () => {},
    );
    const repeat = runDecision(deps, {
      read: { c: counter('counter-d') },
      decide: ({ c }) => ({ writes: [], result: c.total }),
      context,
    });
    let repeatDone = false;
    void repeat.then(
      () => (repeatDone = true),
      () => {},
    );
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(repeatDone).toBe(false); // not answered from a state that may never commit
    held.release();
    expect(await repeat).toBe(5);
    expect(await original).toBe(5);
    expect(originalDone).toBe(true);
  });
});

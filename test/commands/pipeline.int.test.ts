import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openSqliteEventStore } from '../../src/adapters/sqlite/sqlite-event-store.ts';
import type { Decider } from '../../src/commands/decider.ts';
import {
  InFlightStates,
  LOAD_PAGE,
  loadState,
  runCommand,
  runDecision,
  StateCache,
  type CommandContext,
  type CommandPipelineDeps,
  type StreamRead,
} from '../../src/commands/pipeline.ts';
import { DomainError } from '../../src/domain/errors.ts';
import {
  EventStoreUnavailableError,
  WrongExpectedVersionError,
  type EventStore,
  type ReadStreamOptions,
  type StreamAppend,
} from '../../src/ports/event-store.ts';
import { KeyedMutex } from '../../src/shared/keyed-mutex.ts';
import { tempDir } from '../support/temp-dir.ts';

/**
 * The command pipeline against the real embedded event store: read, fold, decide, append atomically at
 * the revisions read, and decide again when another writer got there first.
 */

// A counter: each event carries the total it leads to, so the events show which state a decision saw.
type Added = { type: 'Added'; data: { by: number; total: number } };
interface Counter {
  total: number;
  count: number;
}
const counter: StreamRead<Counter> = {
  stream: 'counter-a',
  initialState: () => ({ total: 0, count: 0 }),
  evolve: (state: Counter, event: Added) => ({ total: event.data.total, count: state.count + 1 }),
};
const readOf = (stream: string): StreamRead<Counter> => ({ ...counter, stream });
const added = (by: number, total: number): Added => ({ type: 'Added', data: { by, total } });
const addTo = (stream: string, state: Counter, by: number) => ({ stream, events: [added(by, state.total + by)] });

type AddCommand = { type: 'Add'; by: number };
const counterDecider: Decider<AddCommand, Counter, Added> = {
  initialState: counter.initialState,
  evolve: counter.evolve,
  decide: (command, state) => {
    if (command.by <= 0) throw new DomainError('INVALID_INPUT', 'by must be positive', 'by');
    return [added(command.by, state.total + command.by)];
  },
};

const context: CommandContext = { actor: 'user:u-1', correlationId: 'corr-1', causationId: 'cause-1' };

/** The real store, with every readStream and appendMulti call recorded (appends are passed on synchronously, keeping queue order). */
function recording(inner: EventStore) {
  const reads: Array<{ stream: string; fromRevision: number | undefined; count: number }> = [];
  const appends: StreamAppend[][] = [];
  const store: EventStore = {
    append: (stream, events, expectedRevision) => inner.append(stream, events, expectedRevision),
    appendMulti: (requests) => {
      appends.push(requests);
      return inner.appendMulti(requests);
    },
    readStream: async (stream: string, options?: ReadStreamOptions) => {
      const events = await inner.readStream(stream, options);
      reads.push({ stream, fromRevision: options?.fromRevision, count: events.length });
      return events;
    },
    readAll: (options) => inner.readAll(options),
    headPosition: () => inner.headPosition(),
    subscribeToAll: (options) => inner.subscribeToAll(options),
    close: () => inner.close(),
  };
  return { store, reads, appends };
}

async function caught(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

describe('the command pipeline', () => {
  let dir: ReturnType<typeof tempDir>;
  let store: EventStore;
  let rec: ReturnType<typeof recording>;
  /** Appends by "another writer" started inside decide: awaited before the store closes. */
  let others: Array<Promise<unknown>>;

  beforeEach(() => {
    dir = tempDir('pipeline-');
    store = openSqliteEventStore({ file: join(dir.path, 'events.sqlite') });
    rec = recording(store);
    others = [];
  });
  afterEach(async () => {
    await Promise.allSettled(others);
    await store.close();
    dir.cleanup();
  });

  /** Another writer appends to a stream now: its append is queued before any append the decision makes. */
  const anotherWriterAdds = (stream: string, total: number) => {
    others.push(
      store.append(stream, [{ type: 'Added', data: { by: 0, total }, metadata: { actor: 'user:other' } }], 'any'),
    );
  };
  const seed = async (stream: string, totals: number[]) => {
    if (totals.length > 0)
      await store.append(
        stream,
        totals.map((total) => ({ type: 'Added', data: { by: 1, total } })),
        'any',
      );
  };
  const totalsOf = async (stream: string) =>
    (await store.readStream(stream)).map((e) => (e.data as Added['data']).total);

  describe('runDecision', () => {
    it('when a decision writes several streams, then one atomic append carries them all, each at the revision read ("any" for a stream not read)', async () => {
      await seed('counter-a', [1, 2]);
      const result = await runDecision(
        { store: rec.store },
        {
          read: { a: readOf('counter-a'), b: readOf('counter-b') },
          decide: ({ a, b }) => ({
            writes: [
              addTo('counter-a', a, 10),
              addTo('counter-b', b, 5),
              addTo('counter-c', counter.initialState(), 7),
            ],
            result: 'done',
          }),
          context,
        },
      );
      expect(result).toBe('done');
      expect(rec.appends).toHaveLength(1);
      expect(rec.appends[0]!.map((r) => [r.stream, r.expectedRevision])).toEqual([
        ['counter-a', 1],
        ['counter-b', 'no_stream'],
        ['counter-c', 'any'],
      ]);
      expect(await totalsOf('counter-a')).toEqual([1, 2, 12]);
      expect(await totalsOf('counter-b')).toEqual([5]);
      expect(await totalsOf('counter-c')).toEqual([7]);
    });

    it('when a write names its own expected revision, then that revision is used instead of the one read', async () => {
      await seed('counter-a', [1]);
      await runDecision(
        { store: rec.store },
        {
          read: { a: readOf('counter-a') },
          decide: ({ a }) => ({
            writes: [
              { ...addTo('counter-a', a, 1), expectedRevision: 'any' },
              { ...addTo('claim-x', counter.initialState(), 1), expectedRevision: 'no_stream' },
            ],
            result: null,
          }),
          context,
        },
      );
      expect(rec.appends[0]!.map((r) => r.expectedRevision)).toEqual(['any', 'no_stream']);
    });

    it('when one stream of a decision conflicts for good, then nothing of the decision is appended (all or nothing)', async () => {
      await seed('counter-a', [1]);
      await seed('claim-x', [1]);
      const taken = new Error('claim taken');
      const error = await caught(
        runDecision(
          { store },
          {
            read: { a: readOf('counter-a') },
            decide: ({ a }) => ({
              writes: [
                addTo('counter-a', a, 1),
                addTo('counter-b', counter.initialState(), 1),
                { ...addTo('claim-x', counter.initialState(), 1), expectedRevision: 'no_stream' },
              ],
              result: null,
            }),
            context,
            finalConflict: (conflict) => (conflict.stream === 'claim-x' ? taken : undefined),
          },
        ),
      );
      expect(error).toBe(taken);
      expect(await totalsOf('counter-a')).toEqual([1]);
      expect(await totalsOf('counter-b')).toEqual([]);
    });

    it('when another writer appends to a read stream between the read and the append, then the decision is taken again from the newer state', async () => {
      await seed('counter-a', [1]);
      const seen: number[] = [];
      const result = await runDecision(
        { store: rec.store },
        {
          read: { a: readOf('counter-a') },
          decide: ({ a }) => {
            seen.push(a.total);
            if (seen.length === 1) anotherWriterAdds('counter-a', 100);
            return { writes: [addTo('counter-a', a, 1)], result: a.total + 1 };
          },
          context,
        },
      );
      expect(seen).toEqual([1, 100]);
      expect(result).toBe(101);
      expect(await totalsOf('counter-a')).toEqual([1, 100, 101]);
      expect(rec.appends.map((requests) => requests[0]!.expectedRevision)).toEqual([0, 1]);
    });

    it('when the conflict is on a stream finalConflict does not claim, then it is retried', async () => {
      const calls: string[] = [];
      await runDecision(
        { store },
        {
          read: { a: readOf('counter-a') },
          decide: ({ a }) => {
            if (calls.length === 0) anotherWriterAdds('counter-a', 50);
            calls.push('decide');
            return { writes: [addTo('counter-a', a, 1)], result: null };
          },
          context,
          finalConflict: (conflict) => {
            calls.push(`finalConflict ${conflict.stream}`);
            return conflict.stream === 'claim-x' ? new Error('taken') : undefined;
          },
        },
      );
      expect(calls).toEqual(['decide', 'finalConflict counter-a', 'decide']);
      expect(await totalsOf('counter-a')).toEqual([50, 51]);
    });

    it('when finalConflict names an error, then it is thrown at once, with the conflict it was given, and the decision is not retried', async () => {
      await seed('claim-x', [1]);
      let decisions = 0;
      let given: unknown;
      const taken = new DomainError('SHORT_CODE_TAKEN', 'short code taken');
      const error = await caught(
        runDecision(
          { store },
          {
            read: {},
            decide: () => {
              decisions++;
              return {
                writes: [{ stream: 'claim-x', events: [added(1, 1)], expectedRevision: 'no_stream' }],
                result: null,
              };
            },
            context,
            finalConflict: (conflict) => {
              given = conflict;
              return taken;
            },
          },
        ),
      );
      expect(error).toBe(taken);
      expect(decisions).toBe(1);
      expect(given).toBeInstanceOf(WrongExpectedVersionError);
      expect(given).toMatchObject({ stream: 'claim-x', expected: 'no_stream', actual: 0 });
    });

    it('when another writer gets there first at every attempt, then after maxAttempts it throws CONCURRENCY_CONFLICT naming the stream', async () => {
      let decisions = 0;
      const error = await caught(
        runDecision(
          { store },
          {
            read: { a: readOf('counter-a') },
            decide: ({ a }) => {
              decisions++;
              anotherWriterAdds('counter-a', 1000 + decisions);
              return { writes: [addTo('counter-a', a, 1)], result: null };
            },
            context,
            maxAttempts: 3,
          },
        ),
      );
      expect(error).toBeInstanceOf(DomainError);
      expect((error as DomainError).code).toBe('CONCURRENCY_CONFLICT');
      expect((error as DomainError).message).toMatch(/counter-a/);
      expect(decisions).toBe(3);
      expect(await totalsOf('counter-a')).toEqual([1001, 1002, 1003]);
    });

    it('when every attempt conflicts and no maxAttempts is given, then it decides again, pausing longer each time, until the deadline', async () => {
      await seed('counter-a', [1]);
      const decidedAt: number[] = [];
      const error = await caught(
        runDecision(
          { store },
          {
            read: { a: readOf('counter-a') },
            decide: ({ a }) => {
              decidedAt.push(performance.now());
              return { writes: [{ ...addTo('counter-a', a, 1), expectedRevision: 5 }], result: null };
            },
            context,
            conflictDeadlineMs: 300,
          },
        ),
      );
      expect((error as DomainError).code).toBe('CONCURRENCY_CONFLICT');
      // More than the former fixed 8 attempts, and not a busy loop: the pauses add up to the deadline.
      expect(decidedAt.length).toBeGreaterThan(8);
      expect(decidedAt.at(-1)! - decidedAt[0]!).toBeGreaterThanOrEqual(100);
      expect(await totalsOf('counter-a')).toEqual([1]);
    });

    it('when the store fails for another reason, then the error is passed on and the decision is not retried', async () => {
      const unavailable = new EventStoreUnavailableError('disk full');
      const failing: EventStore = { ...rec.store, appendMulti: () => Promise.reject(unavailable) };
      let decisions = 0;
      const error = await caught(
        runDecision(
          { store: failing },
          {
            read: { a: readOf('counter-a') },
            decide: ({ a }) => {
              decisions++;
              return { writes: [addTo('counter-a', a, 1)], result: null };
            },
            context,
          },
        ),
      );
      expect(error).toBe(unavailable);
      expect(decisions).toBe(1);
    });

    it('when the decision is refused, then the refusal is thrown and nothing is appended', async () => {
      const refusal = new DomainError('INSUFFICIENT_BALANCE', 'no');
      const error = await caught(
        runDecision(
          { store: rec.store },
          {
            read: { a: readOf('counter-a') },
            decide: () => {
              throw refusal;
            },
            context,
          },
        ),
      );
      expect(error).toBe(refusal);
      expect(rec.appends).toEqual([]);
    });

    it('when the decision writes no events, then nothing is appended and its result is returned', async () => {
      const result = await runDecision(
        { store: rec.store },
        {
          read: { a: readOf('counter-a') },
          decide: () => ({ writes: [{ stream: 'counter-a', events: [] }], result: 'replayed' }),
          context,
        },
      );
      expect(result).toBe('replayed');
      expect(rec.appends).toEqual([]);
      expect(await store.headPosition()).toBe(0);
    });

    it('when some writes have no events, then only the others are appended', async () => {
      await runDecision(
        { store: rec.store },
        {
          read: { a: readOf('counter-a') },
          decide: ({ a }) => ({
            writes: [{ stream: 'counter-b', events: [] }, addTo('counter-a', a, 2)],
            result: null,
          }),
          context,
        },
      );
      expect(rec.appends[0]!.map((r) => r.stream)).toEqual(['counter-a']);
    });

    it('when a decision is appended, then every event of every stream carries the context: actor, correlationId, causationId', async () => {
      await runDecision(
        { store },
        {
          read: { a: readOf('counter-a') },
          decide: ({ a }) => ({
            writes: [
              { stream: 'counter-a', events: [added(1, a.total + 1), added(1, a.total + 2)] },
              addTo('counter-b', counter.initialState(), 1),
            ],
            result: null,
          }),
          context,
        },
      );
      const events = [...(await store.readStream('counter-a')), ...(await store.readStream('counter-b'))];
      expect(events).toHaveLength(3);
      for (const event of events)
        expect(event.metadata).toEqual({ actor: 'user:u-1', correlationId: 'corr-1', causationId: 'cause-1' });
    });

    it('when the context has no causationId, then the events carry the actor and correlationId', async () => {
      await runDecision(
        { store },
        {
          read: { a: readOf('counter-a') },
          decide: ({ a }) => ({ writes: [addTo('counter-a', a, 1)], result: null }),
          context: { actor: 'apikey:key_AAAAAAAAAAAAAAAA', correlationId: 'req-9' },
        },
      );
      const [event] = await store.readStream('counter-a');
      expect(event!.metadata).toMatchObject({ actor: 'apikey:key_AAAAAAAAAAAAAAAA', correlationId: 'req-9' });
      expect(event!.metadata.causationId).toBeUndefined();
    });

    it('when the decision is retried after a conflict, then the events appended carry the context too', async () => {
      await runDecision(
        { store },
        {
          read: { a: readOf('counter-a') },
          decide: ({ a }) => {
            if (a.count === 0) anotherWriterAdds('counter-a', 7);
            return { writes: [addTo('counter-a', a, 1)], result: null };
          },
          context,
        },
      );
      const events = await store.readStream('counter-a');
      expect(events.map((e) => e.metadata.actor)).toEqual(['user:other', 'user:u-1']);
      expect(events[1]!.metadata).toEqual({ actor: 'user:u-1', correlationId: 'corr-1', causationId: 'cause-1' });
    });
  });

  describe('runCommand', () => {
    it('when a command is decided on an existing stream, then its events are appended at the revision read and the state after them is returned', async () => {
      await seed('counter-a', [1, 2]);
      const result = await runCommand(
        { store: rec.store },
        { stream: 'counter-a', decider: counterDecider, command: { type: 'Add', by: 5 }, context },
      );
      // The position is where the event landed: what a reader of this write waits for.
      const [appended] = await store.readStream('counter-a', { direction: 'backwards', maxCount: 1 });
      expect(result).toEqual({ events: [added(5, 7)], state: { total: 7, count: 3 }, position: appended!.position });
      expect(rec.appends[0]!.map((r) => [r.stream, r.expectedRevision])).toEqual([['counter-a', 1]]);
      expect(await totalsOf('counter-a')).toEqual([1, 2, 7]);
    });

    it('when a command is the first on its stream, then the stream must not exist yet', async () => {
      await runCommand(
        { store: rec.store },
        { stream: 'counter-new', decider: counterDecider, command: { type: 'Add', by: 1 }, context },
      );
      expect(rec.appends[0]![0]!.expectedRevision).toBe('no_stream');
    });

    it('when the decider refuses the command, then the refusal is thrown and nothing is appended', async () => {
      const error = await caught(
        runCommand(
          { store: rec.store },
          { stream: 'counter-a', decider: counterDecider, command: { type: 'Add', by: 0 }, context },
        ),
      );
      expect((error as DomainError).code).toBe('INVALID_INPUT');
      expect(rec.appends).toEqual([]);
    });

    it("when another writer appends to the command's stream first, then the command is decided again on the newer state", async () => {
      let decisions = 0;
      const decider: Decider<AddCommand, Counter, Added> = {
        ...counterDecider,
        decide: (command, state) => {
          if (decisions++ === 0) anotherWriterAdds('counter-a', 40);
          return counterDecider.decide(command, state);
        },
      };
      const result = await runCommand(
        { store },
        { stream: 'counter-a', decider, command: { type: 'Add', by: 2 }, context },
      );
      expect(decisions).toBe(2);
      expect(result.state.total).toBe(42);
      expect(await totalsOf('counter-a')).toEqual([40, 42]);
    });

    it("when a claim appended alongside is already taken, then onConflict's error is thrown and the command's stream is untouched", async () => {
      await seed('claim-x', [1]);
      const taken = new DomainError('SHORT_CODE_TAKEN', 'taken');
      let decisions = 0;
      const decider = {
        ...counterDecider,
        decide: (command: AddCommand, state: Counter) => (decisions++, counterDecider.decide(command, state)),
      };
      const error = await caught(
        runCommand(
          { store },
          {
            stream: 'counter-a',
            decider,
            command: { type: 'Add', by: 1 },
            context,
            alsoAppend: (events) => [{ stream: 'claim-x', events, expectedRevision: 'no_stream' }],
            onConflict: (conflict) => (conflict.stream === 'claim-x' ? taken : conflict),
          },
        ),
      );
      expect(error).toBe(taken);
      expect(decisions).toBe(1);
      expect(await totalsOf('counter-a')).toEqual([]);
    });

    it('when a claim is taken and there is no onConflict, then the version conflict itself is thrown', async () => {
      await seed('claim-x', [1]);
      const error = await caught(
        runCommand(
          { store },
          {
            stream: 'counter-a',
            decider: counterDecider,
            command: { type: 'Add', by: 1 },
            context,
            alsoAppend: (events) => [{ stream: 'claim-x', events, expectedRevision: 'no_stream' }],
          },
        ),
      );
      expect(error).toBeInstanceOf(WrongExpectedVersionError);
      expect((error as WrongExpectedVersionError).stream).toBe('claim-x');
    });

    it('when the claim is free, then the command and the claim are appended together with the context', async () => {
      await runCommand(
        { store },
        {
          stream: 'counter-a',
          decider: counterDecider,
          command: { type: 'Add', by: 3 },
          context,
          alsoAppend: (events) => [{ stream: 'claim-x', events, expectedRevision: 'no_stream' }],
        },
      );
      const [own] = await store.readStream('counter-a');
      const [claim] = await store.readStream('claim-x');
      expect(own!.data).toEqual({ by: 3, total: 3 });
      expect(claim!.data).toEqual({ by: 3, total: 3 });
      expect(claim!.metadata).toEqual(own!.metadata);
    });

    it("when every attempt conflicts on the command's own stream, then after maxAttempts it throws CONCURRENCY_CONFLICT", async () => {
      let decisions = 0;
      const decider = {
        ...counterDecider,
        decide: (command: AddCommand, state: Counter) => {
          anotherWriterAdds('counter-a', ++decisions);
          return counterDecider.decide(command, state);
        },
      };
      const error = await caught(
        runCommand(
          { store },
          { stream: 'counter-a', decider, command: { type: 'Add', by: 1 }, context, maxAttempts: 2 },
        ),
      );
      expect((error as DomainError).code).toBe('CONCURRENCY_CONFLICT');
      expect(decisions).toBe(2);
    });
  });

  describe('the state cache', () => {
    it('when a stream is loaded a second time after others appended, then only the newer events are read and the state is the full fold', async () => {
      await seed('counter-a', [1, 2, 3]);
      const deps: CommandPipelineDeps = { store: rec.store, cache: new StateCache() };
      const first = await loadState(deps, 'counter-a', counter);
      expect(first).toEqual({ state: { total: 3, count: 3 }, revision: 2 });

      await seed('counter-a', [4, 5]);
      const second = await loadState(deps, 'counter-a', counter);
      expect(rec.reads).toEqual([
        { stream: 'counter-a', fromRevision: 0, count: 3 },
        { stream: 'counter-a', fromRevision: 3, count: 2 },
      ]);
      expect(second).toEqual({ state: { total: 5, count: 5 }, revision: 4 });
      expect(second).toEqual(await loadState({ store }, 'counter-a', counter));
    });

    it('when nothing was appended since, then the load reads nothing and returns the cached state', async () => {
      await seed('counter-a', [1, 2]);
      const deps: CommandPipelineDeps = { store: rec.store, cache: new StateCache() };
      const first = await loadState(deps, 'counter-a', counter);
      const second = await loadState(deps, 'counter-a', counter);
      expect(second).toEqual(first);
      expect(rec.reads[1]).toEqual({ stream: 'counter-a', fromRevision: 2, count: 0 });
    });

    it('when a decision runs on a cached stream that others appended to, then its append at the cached revision fails and it decides again on the full state', async () => {
      await seed('counter-a', [1]);
      const deps: CommandPipelineDeps = { store: rec.store, cache: new StateCache() };
      await loadState(deps, 'counter-a', counter);
      await seed('counter-a', [2, 3]);
      const seen: Counter[] = [];
      await runDecision(deps, {
        read: { a: readOf('counter-a') },
        decide: ({ a }) => {
          seen.push(a);
          return { writes: [addTo('counter-a', a, 1)], result: null };
        },
        context,
        // The stale cache is no one's move: not counted as an attempt.
        maxAttempts: 1,
      });
      expect(seen).toEqual([
        { total: 1, count: 1 },
        { total: 3, count: 3 },
      ]);
      expect(rec.appends.map((append) => append[0]!.expectedRevision)).toEqual([0, 2]);
      expect(await totalsOf('counter-a')).toEqual([1, 2, 3, 4]);
    });

    it('when this process is the only writer of a cached stream, then a decision on it reads nothing before its append', async () => {
      await seed('counter-a', [1]);
      // As the composition root runs them: a committed decision leaves its state in the cache.
      const deps: CommandPipelineDeps = {
        store: rec.store,
        cache: new StateCache(),
        serialize: { mutex: new KeyedMutex(), inFlight: new InFlightStates() },
      };
      await runCommand(deps, {
        stream: 'counter-a',
        decider: counterDecider,
        command: { type: 'Add', by: 1 },
        context,
      });
      const readsBefore = rec.reads.length;
      await runCommand(deps, {
        stream: 'counter-a',
        decider: counterDecider,
        command: { type: 'Add', by: 1 },
        context,
      });
      expect(rec.reads.length).toBe(readsBefore);
      expect(await totalsOf('counter-a')).toEqual([1, 2, 3]);
    });

    it('when a decision refuses on a cached state that others have moved, then it is decided again on fresh reads, not refused on the stale state', async () => {
      await seed('counter-a', [1]);
      const deps: CommandPipelineDeps = { store: rec.store, cache: new StateCache() };
      await loadState(deps, 'counter-a', counter);
      await seed('counter-a', [50]);
      const seen: Counter[] = [];
      const result = await runDecision(deps, {
        read: { a: readOf('counter-a') },
        decide: ({ a }) => {
          seen.push(a);
          if (a.total < 10) throw new DomainError('INSUFFICIENT_BALANCE', 'below 10');
          return { writes: [], result: a.total };
        },
        context,
      });
      expect(result).toBe(50);
      expect(seen).toEqual([
        { total: 1, count: 1 },
        { total: 50, count: 2 },
      ]);
    });

    it('when a decision refuses on a cached state nobody moved, then the refusal stands after one check of the stream', async () => {
      await seed('counter-a', [1]);
      const deps: CommandPipelineDeps = { store: rec.store, cache: new StateCache() };
      await loadState(deps, 'counter-a', counter);
      const readsBefore = rec.reads.length;
      const refused = runDecision(deps, {
        read: { a: readOf('counter-a') },
        decide: () => {
          throw new DomainError('INSUFFICIENT_BALANCE', 'below 10');
        },
        context,
      });
      await expect(refused).rejects.toMatchObject({ code: 'INSUFFICIENT_BALANCE' });
      expect(rec.reads.slice(readsBefore)).toEqual([{ stream: 'counter-a', fromRevision: 1, count: 0 }]);
    });

    it('given a state the caller has just read (a missing stream), when the decision writes it, then it is not read again; created meanwhile, the decision is taken again on it', async () => {
      const deps: CommandPipelineDeps = { store: rec.store, cache: new StateCache() };
      const known = await loadState(deps, 'counter-k', readOf('counter-k'));
      const readsBefore = rec.reads.length;
      const decide =
        (stream: string) =>
        ({ k }: { k: Counter }) => ({ writes: [addTo(stream, k, 1)], result: k.total });
      expect(
        await runDecision(deps, {
          read: { k: { ...readOf('counter-k'), known } },
          decide: decide('counter-k'),
          context,
        }),
      ).toBe(0);
      expect(rec.reads.length).toBe(readsBefore);

      const stale = await loadState(deps, 'counter-z', readOf('counter-z'));
      await seed('counter-z', [7]);
      expect(
        await runDecision(deps, {
          read: { k: { ...readOf('counter-z'), known: stale } },
          decide: decide('counter-z'),
          context,
          maxAttempts: 1,
        }),
      ).toBe(7);
      expect(await totalsOf('counter-z')).toEqual([7, 8]);
    });

    it('when decisions follow each other through the cache, then each state is right and the stream is read only from where the cache stands', async () => {
      await seed('counter-a', [0]);
      const deps: CommandPipelineDeps = { store: rec.store, cache: new StateCache() };
      for (let i = 1; i <= 4; i++) {
        await runCommand(deps, {
          stream: 'counter-a',
          decider: counterDecider,
          command: { type: 'Add', by: 1 },
          context,
        });
        if (i === 2) await seed('counter-a', [100]);
      }
      expect(await totalsOf('counter-a')).toEqual([0, 1, 2, 100, 101, 102]);
      const uncached = await loadState({ store }, 'counter-a', counter);
      expect(await loadState(deps, 'counter-a', counter)).toEqual(uncached);
      // Never a full re-read of the stream after the first one.
      expect(rec.reads.filter((r) => r.fromRevision === 0)).toHaveLength(1);
    });

    it('when the cache is full, then the oldest stream is evicted and read again from the start', async () => {
      await seed('counter-a', [1]);
      await seed('counter-b', [1]);
      const deps: CommandPipelineDeps = { store: rec.store, cache: new StateCache(1) };
      await loadState(deps, 'counter-a', counter);
      await loadState(deps, 'counter-b', counter);
      const again = await loadState(deps, 'counter-a', counter);
      expect(again).toEqual({ state: { total: 1, count: 1 }, revision: 0 });
      expect(rec.reads.map((r) => [r.stream, r.fromRevision])).toEqual([
        ['counter-a', 0],
        ['counter-b', 0],
        ['counter-a', 0],
      ]);
    });

    it('given a stream longer than a page, when loaded cold, then it is read in pages of LOAD_PAGE events and the state is the full fold', async () => {
      const totals = Array.from({ length: 2 * LOAD_PAGE + 5 }, (_, i) => i + 1);
      for (let i = 0; i < totals.length; i += 500) await seed('counter-a', totals.slice(i, i + 500));
      const deps: CommandPipelineDeps = { store: rec.store, cache: new StateCache() };

      const loaded = await loadState(deps, 'counter-a', counter);

      expect(loaded).toEqual({ state: { total: totals.length, count: totals.length }, revision: totals.length - 1 });
      expect(rec.reads).toEqual([
        { stream: 'counter-a', fromRevision: 0, count: LOAD_PAGE },
        { stream: 'counter-a', fromRevision: LOAD_PAGE, count: LOAD_PAGE },
        { stream: 'counter-a', fromRevision: 2 * LOAD_PAGE, count: 5 },
      ]);
      expect(deps.cache!.get('counter-a')?.revision).toBe(totals.length - 1);
    });

    it('when an older state is set after a newer one, then the cache keeps the newer', () => {
      const cache = new StateCache();
      cache.set('counter-a', { revision: 5, state: { total: 5, count: 6 } });
      cache.set('counter-a', { revision: 3, state: { total: 3, count: 4 } });
      expect(cache.get('counter-a')).toEqual({ revision: 5, state: { total: 5, count: 6 } });
    });
  });

  describe('serialized decisions in one process', () => {
    it('when two decisions on the same stream run at once, then the second builds on the first, both commit in one atomic append, and neither is retried', async () => {
      const deps: CommandPipelineDeps = {
        store: rec.store,
        cache: new StateCache(),
        serialize: { mutex: new KeyedMutex(), inFlight: new InFlightStates() },
      };
      let decisions = 0;
      const add = (by: number) =>
        runDecision(deps, {
          read: { a: readOf('counter-a') },
          decide: ({ a }) => {
            decisions++;
            return { writes: [addTo('counter-a', a, by)], result: a.total + by };
          },
          context,
        });
      const results = await Promise.all([add(1), add(10)]);
      expect(results).toEqual([1, 11]);
      expect(decisions).toBe(2);
      expect(await totalsOf('counter-a')).toEqual([1, 11]);
      // One append: the second decision's event joined the first's, so it cannot commit without it.
      expect(rec.appends.map((requests) => [requests[0]!.expectedRevision, requests[0]!.events.length])).toEqual([
        ['no_stream', 2],
      ]);
    });

    it('when the first of two serialized decisions fails to commit, then the second is decided again on what really happened', async () => {
      await seed('claim-x', [1]);
      const deps: CommandPipelineDeps = {
        store,
        cache: new StateCache(),
        serialize: { mutex: new KeyedMutex(), inFlight: new InFlightStates() },
      };
      const seen: number[] = [];
      const first = runDecision(deps, {
        read: { a: readOf('counter-a') },
        decide: ({ a }) => ({
          writes: [
            addTo('counter-a', a, 1),
            { ...addTo('claim-x', counter.initialState(), 1), expectedRevision: 'no_stream' },
          ],
          result: null,
        }),
        context,
        finalConflict: () => new Error('claim taken'),
      });
      const second = runDecision(deps, {
        read: { a: readOf('counter-a') },
        decide: ({ a }) => {
          seen.push(a.total);
          return { writes: [addTo('counter-a', a, 10)], result: a.total + 10 };
        },
        context,
      });
      await expect(first).rejects.toThrow('claim taken');
      expect(await second).toBe(10);
      expect(await totalsOf('counter-a')).toEqual([10]);
      expect(seen.at(-1)).toBe(0);
    });
  });
});

/**
 * The EventStore port's behaviour, written once and run against every adapter (embedded SQLite, KurrentDB).
 * Only what the port promises is tested here; adapter internals (files, transactions, batching) belong to
 * adapter tests.
 *
 * Every test writes to streams under its own random prefix and reads the global log through that prefix (or
 * drops foreign events), so the suite also holds on a server shared with other tests or holding system events.
 * For the same reason positions are only assumed to increase, never to be contiguous.
 */
import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  type EventFilter,
  type EventStore,
  type ExpectedRevision,
  type NewEvent,
  type RecordedEvent,
  type Subscription,
  WrongExpectedVersionError,
} from '../../src/ports/event-store.ts';

export interface EventStoreFixture {
  store: EventStore;
  /** Closes `store` (if the test did not) and removes whatever the fixture created. */
  cleanup: () => Promise<void>;
  /** Optional: opens a second, independent handle on the same store, as another process would have one. */
  openSecondHandle?: () => Promise<EventStore>;
}

export function describeEventStoreContract(adapterName: string, open: () => Promise<EventStoreFixture>): void {
  describe(`EventStore contract: ${adapterName}`, () => {
    let fixture: EventStoreFixture;
    let store: EventStore;
    /** This test's stream-name prefix. */
    let ns: string;
    let mine: EventFilter;
    const extraHandles: EventStore[] = [];

    beforeEach(async () => {
      fixture = await open();
      store = fixture.store;
      ns = `t${randomUUID().slice(0, 8)}-`;
      mine = { streamPrefixes: [ns] };
    });
    afterEach(async () => {
      await Promise.all(extraHandles.splice(0).map((handle) => handle.close()));
      await fixture.cleanup();
    });

    const s = (name: string) => `${ns}${name}`;
    const secondHandle = async () => {
      const handle = await fixture.openSecondHandle!();
      extraHandles.push(handle);
      return handle;
    };
    /** Appends events carrying data {seq} for seq in [from, to). */
    const appendSeq = (stream: string, from: number, to: number, expected: ExpectedRevision = 'any', on = store) =>
      on.append(
        stream,
        range(from, to).map((seq) => event('Seq', { seq })),
        expected,
      );
    const readMine = async (options: Parameters<EventStore['readAll']>[0] = {}) =>
      store.readAll({ ...options, filter: { ...options.filter, streamPrefixes: [ns] } });

    describe('append with an expected revision', () => {
      it('given no stream, when appending with no_stream, then the stream is created at revision 0', async () => {
        const result = await store.append(s('a'), [event('Opened')], 'no_stream');
        expect(result.nextExpectedRevision).toBe(0);
        const [stored] = await store.readStream(s('a'));
        expect(stored).toMatchObject({ stream: s('a'), revision: 0, type: 'Opened', position: result.position });
      });

      it('given an existing stream, when appending with no_stream, then it fails with the current revision', async () => {
        await appendSeq(s('a'), 0, 2, 'no_stream');
        await expectWrongVersion(store.append(s('a'), [event('X')], 'no_stream'), s('a'), 'no_stream', 1);
      });

      it('given an existing stream, when appending with stream_exists, then it succeeds', async () => {
        await appendSeq(s('a'), 0, 1, 'no_stream');
        const result = await store.append(s('a'), [event('X')], 'stream_exists');
        expect(result.nextExpectedRevision).toBe(1);
      });

      it('given no stream, when appending with stream_exists, then it fails with actual no_stream', async () => {
        await expectWrongVersion(
          store.append(s('a'), [event('X')], 'stream_exists'),
          s('a'),
          'stream_exists',
          'no_stream',
        );
        expect(await store.readStream(s('a'))).toEqual([]);
      });

      it('given a missing or an existing stream, when appending with any, then it succeeds', async () => {
        expect((await store.append(s('a'), [event('X')], 'any')).nextExpectedRevision).toBe(0);
        expect((await store.append(s('a'), [event('X'), event('Y')], 'any')).nextExpectedRevision).toBe(2);
      });

      it('given a stream at revision 2, when appending with expected revision 2, then it succeeds at revision 3', async () => {
        await appendSeq(s('a'), 0, 3, 'no_stream');
        const result = await store.append(s('a'), [event('X')], 2);
        expect(result.nextExpectedRevision).toBe(3);
        expect((await store.readStream(s('a'))).map((e) => e.revision)).toEqual([0, 1, 2, 3]);
      });

      it('given a stream at revision 2, when appending with a stale or a future revision, then it fails with actual 2 and writes nothing', async () => {
        await appendSeq(s('a'), 0, 3, 'no_stream');
        await expectWrongVersion(store.append(s('a'), [event('X')], 1), s('a'), 1, 2);
        await expectWrongVersion(store.append(s('a'), [event('X')], 5), s('a'), 5, 2);
        expect(await store.readStream(s('a'))).toHaveLength(3);
      });

      it('given no stream, when appending with an exact revision, then it fails with actual no_stream', async () => {
        await expectWrongVersion(store.append(s('a'), [event('X')], 0), s('a'), 0, 'no_stream');
      });

      it('when appending several events, then they are stored together with contiguous revisions and increasing positions', async () => {
        await appendSeq(s('a'), 0, 1, 'no_stream');
        const result = await appendSeq(s('a'), 1, 6, 0);
        const stored = await store.readStream(s('a'));
        expect(stored.map((e) => e.revision)).toEqual([0, 1, 2, 3, 4, 5]);
        expect(stored.map((e) => (e.data as { seq: number }).seq)).toEqual([0, 1, 2, 3, 4, 5]);
        expectStrictlyIncreasing(stored.map((e) => e.position));
        expect(result).toEqual({ nextExpectedRevision: 5, position: stored[5]!.position });
      });

      it('when appending zero events, then it is rejected and the stream is not created', async () => {
        await expect(store.append(s('a'), [], 'any')).rejects.toThrow(/zero events/);
        expect(await store.readStream(s('a'))).toEqual([]);
      });
    });

    describe('appendMulti', () => {
      it('given streams at their expected revisions, when appending to all, then all are written and results follow the request order', async () => {
        await appendSeq(s('b'), 0, 2, 'no_stream');
        const results = await store.appendMulti([
          { stream: s('a'), events: [event('A1'), event('A2')], expectedRevision: 'no_stream' },
          { stream: s('b'), events: [event('B3')], expectedRevision: 1 },
          { stream: s('c'), events: [event('C1')], expectedRevision: 'any' },
        ]);
        expect(results.map((r) => r.nextExpectedRevision)).toEqual([1, 2, 0]);
        const [a, b, c] = await Promise.all([s('a'), s('b'), s('c')].map((name) => store.readStream(name)));
        expect(a!.map((e) => e.type)).toEqual(['A1', 'A2']);
        expect(b!.map((e) => e.type)).toEqual(['Seq', 'Seq', 'B3']);
        expect(c!.map((e) => e.type)).toEqual(['C1']);
        expect(results.map((r) => r.position)).toEqual([a![1]!.position, b![2]!.position, c![0]!.position]);
      });

      it('given one stream not at its expected revision, when appending to several, then nothing is written to any of them', async () => {
        await appendSeq(s('b'), 0, 2, 'no_stream');
        const before = await readMine();
        const attempt = store.appendMulti([
          { stream: s('a'), events: [event('A1')], expectedRevision: 'no_stream' },
          { stream: s('b'), events: [event('B')], expectedRevision: 0 },
          { stream: s('c'), events: [event('C1')], expectedRevision: 'any' },
        ]);
        await expectWrongVersion(attempt, s('b'), 0, 1);
        expect(await readMine()).toEqual(before);
        expect(await store.readStream(s('a'))).toEqual([]);
        expect(await store.readStream(s('c'))).toEqual([]);
      });

      it('when a request names the same stream twice, then it is rejected and nothing is written', async () => {
        const attempt = store.appendMulti([
          { stream: s('a'), events: [event('A1')], expectedRevision: 'any' },
          { stream: s('a'), events: [event('A2')], expectedRevision: 'any' },
        ]);
        await expect(attempt).rejects.toThrow(/more than once/);
        expect(await store.readStream(s('a'))).toEqual([]);
      });

      it('when a request has no streams or a stream with no events, then it is rejected and nothing is written', async () => {
        await expect(store.appendMulti([])).rejects.toThrow(/at least one stream/);
        const attempt = store.appendMulti([
          { stream: s('a'), events: [event('A1')], expectedRevision: 'any' },
          { stream: s('b'), events: [], expectedRevision: 'any' },
        ]);
        await expect(attempt).rejects.toThrow(/zero events/);
        expect(await store.readStream(s('a'))).toEqual([]);
      });
    });

    describe('global positions', () => {
      it('when appending to many streams one after another, then positions strictly increase in commit order', async () => {
        const appended: number[] = [];
        for (let i = 0; i < 12; i++) appended.push((await appendSeq(s(`p-${i % 4}`), i, i + 1)).position);
        expectStrictlyIncreasing(appended);
        const all = await readMine();
        expect(all.map((e) => e.position)).toEqual(appended);
        expect(all.map((e) => (e.data as { seq: number }).seq)).toEqual(range(0, 12));
      });

      it('when events are appended, then headPosition reaches the last one', async () => {
        const { position } = await appendSeq(s('a'), 0, 3);
        expect(await store.headPosition()).toBeGreaterThanOrEqual(position);
      });
    });

    describe('readStream', () => {
      beforeEach(async () => {
        await appendSeq(s('acc-1'), 0, 6, 'no_stream');
        // A stream whose name extends the other's must not leak into it.
        await appendSeq(s('acc-10'), 100, 102, 'no_stream');
      });
      const seqs = (events: RecordedEvent[]) => events.map((e) => (e.data as { seq: number }).seq);

      it('given a missing stream, when reading it, then it returns no events', async () => {
        expect(await store.readStream(s('missing'))).toEqual([]);
        expect(await store.readStream(s('missing'), { direction: 'backwards' })).toEqual([]);
      });

      it('when reading forwards, then every event of the stream comes in revision order', async () => {
        const events = await store.readStream(s('acc-1'));
        expect(events.map((e) => e.revision)).toEqual([0, 1, 2, 3, 4, 5]);
        expect(seqs(events)).toEqual([0, 1, 2, 3, 4, 5]);
        expect(new Set(events.map((e) => e.stream))).toEqual(new Set([s('acc-1')]));
      });

      it('when reading backwards, then events come newest first', async () => {
        expect((await store.readStream(s('acc-1'), { direction: 'backwards' })).map((e) => e.revision)).toEqual([
          5, 4, 3, 2, 1, 0,
        ]);
      });

      it('when reading from a revision, then that revision is included, in either direction', async () => {
        expect((await store.readStream(s('acc-1'), { fromRevision: 2 })).map((e) => e.revision)).toEqual([2, 3, 4, 5]);
        expect(
          (await store.readStream(s('acc-1'), { fromRevision: 2, direction: 'backwards' })).map((e) => e.revision),
        ).toEqual([2, 1, 0]);
        expect(await store.readStream(s('acc-1'), { fromRevision: 6 })).toEqual([]);
      });

      it('when reading with maxCount, then at most that many events come back, from the start point', async () => {
        expect((await store.readStream(s('acc-1'), { maxCount: 2 })).map((e) => e.revision)).toEqual([0, 1]);
        expect(
          (await store.readStream(s('acc-1'), { maxCount: 2, direction: 'backwards' })).map((e) => e.revision),
        ).toEqual([5, 4]);
        expect(
          (await store.readStream(s('acc-1'), { fromRevision: 3, maxCount: 2, direction: 'backwards' })).map(
            (e) => e.revision,
          ),
        ).toEqual([3, 2]);
        expect((await store.readStream(s('acc-1'), { fromRevision: 4, maxCount: 10 })).map((e) => e.revision)).toEqual([
          4, 5,
        ]);
      });
    });

    describe('readAll', () => {
      let positions: number[];
      beforeEach(async () => {
        positions = [];
        const plan: Array<[string, string]> = [
          ['wallet-1', 'Opened'],
          ['wallet-2', 'Opened'],
          ['payment-1', 'Requested'],
          ['wallet-1', 'Credited'],
          ['payment-1', 'Settled'],
          ['wallet-2', 'Debited'],
        ];
        for (const [stream, type] of plan)
          positions.push((await store.append(s(stream), [event(type)], 'any')).position);
      });
      const shape = (events: RecordedEvent[]) => events.map((e) => `${e.stream.slice(ns.length)}:${e.type}`);

      it('when reading everything, then every event comes in position order', async () => {
        const events = (await store.readAll()).filter((e) => e.stream.startsWith(ns));
        expect(events.map((e) => e.position)).toEqual(positions);
      });

      it('when reading between two positions, then both ends are included', async () => {
        const events = await store.readAll({ fromPosition: positions[1], toPosition: positions[4] });
        expect(events.filter((e) => e.stream.startsWith(ns)).map((e) => e.position)).toEqual(positions.slice(1, 5));
        for (const e of events) expect(e.position >= positions[1]! && e.position <= positions[4]!).toBe(true);
      });

      it('when reading with maxCount, then the first events from the start point come back', async () => {
        const events = await store.readAll({ fromPosition: positions[2], maxCount: 3 });
        expect(events).toHaveLength(3);
        expect(events[0]!.position).toBe(positions[2]);
        expectStrictlyIncreasing(events.map((e) => e.position));
        expect((await readMine({ fromPosition: positions[2], maxCount: 2 })).map((e) => e.position)).toEqual(
          positions.slice(2, 4),
        );
      });

      it('when filtering by event type, then only those types come back', async () => {
        expect(shape(await readMine({ filter: { eventTypes: ['Opened', 'Settled'] } }))).toEqual([
          'wallet-1:Opened',
          'wallet-2:Opened',
          'payment-1:Settled',
        ]);
      });

      it('when filtering by stream prefixes, then only streams starting with one of them come back', async () => {
        const events = await store.readAll({ filter: { streamPrefixes: [s('payment-'), s('wallet-2')] } });
        expect(shape(events)).toEqual([
          'wallet-2:Opened',
          'payment-1:Requested',
          'payment-1:Settled',
          'wallet-2:Debited',
        ]);
      });

      it('when filtering by prefix and type together, then both must match', async () => {
        const events = await store.readAll({
          filter: { streamPrefixes: [s('wallet-')], eventTypes: ['Opened', 'Settled'] },
        });
        expect(shape(events)).toEqual(['wallet-1:Opened', 'wallet-2:Opened']);
      });

      it('when a prefix holds pattern characters or non-ASCII text, then it is matched literally', async () => {
        for (const name of ['a_b-1', 'axb-1', 'a%c-1', 'abc-1', 'é😀-1', 'é-1'])
          await store.append(s(name), [event('X')], 'any');
        const streamsFor = async (prefix: string) =>
          (await store.readAll({ filter: { streamPrefixes: [s(prefix)] } })).map((e) => e.stream.slice(ns.length));
        expect(await streamsFor('a_')).toEqual(['a_b-1']);
        expect(await streamsFor('a%')).toEqual(['a%c-1']);
        expect(await streamsFor('é😀')).toEqual(['é😀-1']);
        expect(await streamsFor('é')).toEqual(['é😀-1', 'é-1']);
      });
    });

    describe('event content', () => {
      it('when an event is stored, then its id, type, data and metadata read back unchanged', async () => {
        const id = randomUUID();
        const data = {
          amount: '1250.50',
          currency: 'KES',
          lines: [1, 2.5, -3],
          nested: { ok: true, none: null },
          text: 'é "q" \\ 😀',
        };
        const metadata = {
          correlationId: randomUUID(),
          causationId: randomUUID(),
          actor: 'operator:alice',
          reason: 'test',
        };
        const before = Date.now();
        await store.append(s('a'), [{ id, type: 'Credited', data, metadata }], 'no_stream');
        const [stored] = await store.readStream(s('a'));
        expect(stored).toMatchObject({ id, type: 'Credited', data, metadata, stream: s('a'), revision: 0 });
        const [fromAll] = await readMine();
        expect(fromAll).toEqual(stored);
        expect(new Date(stored!.createdAt).toISOString()).toBe(stored!.createdAt);
        expect(Date.parse(stored!.createdAt)).toBeGreaterThanOrEqual(before - 1000);
      });

      it('when an event has no metadata or id, then it reads back with empty metadata and a generated uuid', async () => {
        await store.append(
          s('a'),
          [
            { type: 'X', data: 7 },
            { type: 'X', data: 'text' },
          ],
          'no_stream',
        );
        const stored = await store.readStream(s('a'));
        expect(stored.map((e) => e.data)).toEqual([7, 'text']);
        for (const e of stored) {
          expect(e.metadata).toEqual({});
          expect(e.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i);
        }
        expect(stored[0]!.id).not.toBe(stored[1]!.id);
      });
    });

    describe('concurrent writers', () => {
      it('when two writers append with the same expected revision, then exactly one wins', async () => {
        await appendSeq(s('a'), 0, 1, 'no_stream');
        const outcomes = await Promise.allSettled([
          store.append(s('a'), [event('W1')], 0),
          store.append(s('a'), [event('W2')], 0),
        ]);
        expectOneWinner(outcomes, s('a'), 1);
        expect(await store.readStream(s('a'))).toHaveLength(2);
      });

      it('when 20 writers append with the same expected revision, then exactly one wins and the others see its revision', async () => {
        await appendSeq(s('a'), 0, 1, 'no_stream');
        const outcomes = await Promise.allSettled(
          range(0, 20).map((i) => store.append(s('a'), [event(`W${i}`), event('More')], 0)),
        );
        expectOneWinner(outcomes, s('a'), 2);
        expect(await store.readStream(s('a'))).toHaveLength(3);
      });

      it('when 20 writers race to create the same stream, then exactly one wins', async () => {
        const outcomes = await Promise.allSettled(
          range(0, 20).map((i) => store.append(s('a'), [event(`W${i}`)], 'no_stream')),
        );
        expectOneWinner(outcomes, s('a'), 0);
      });

      it('when writers on two handles race on the same revision, then exactly one wins each round', async (context) => {
        if (!fixture.openSecondHandle) return context.skip();
        const other = await secondHandle();
        await appendSeq(s('a'), 0, 1, 'no_stream');
        for (let revision = 0; revision < 10; revision++) {
          const outcomes = await Promise.allSettled([
            store.append(s('a'), [event('Here')], revision),
            other.append(s('a'), [event('There')], revision),
          ]);
          expectOneWinner(outcomes, s('a'), revision + 1);
        }
        expect((await store.readStream(s('a'))).map((e) => e.revision)).toEqual(range(0, 11));
      });
    });

    describe('subscribeToAll', () => {
      const seqsOf = (events: RecordedEvent[]) => events.map((e) => (e.data as { seq: number }).seq);

      it('given stored events, when subscribing from the start, then they all arrive in order', async () => {
        await appendSeq(s('a'), 0, 5);
        await appendSeq(s('b'), 5, 8);
        const iterator = iterate(store.subscribeToAll({ from: 'start', filter: mine }));
        const events = await take(iterator, 8);
        expect(seqsOf(events)).toEqual(range(0, 8));
        expectStrictlyIncreasing(events.map((e) => e.position));
        expect(events).toEqual(await readMine());
      });

      it('given a checkpoint, when subscribing from it, then delivery starts with the first event after it', async () => {
        await appendSeq(s('a'), 0, 4);
        const checkpoint = (await appendSeq(s('a'), 4, 5)).position;
        await appendSeq(s('b'), 5, 9);
        const iterator = iterate(store.subscribeToAll({ from: checkpoint, filter: mine }));
        expect(seqsOf(await take(iterator, 4))).toEqual([5, 6, 7, 8]);
        await appendSeq(s('c'), 9, 10);
        expect(seqsOf(await take(iterator, 1))).toEqual([9]);
      });

      it('given a filter, when subscribing, then only matching stored and live events arrive', async () => {
        await store.append(s('wallet-1'), [event('Opened'), event('Credited')], 'any');
        await store.append(s('payment-1'), [event('Requested')], 'any');
        const iterator = iterate(
          store.subscribeToAll({
            from: 'start',
            filter: { streamPrefixes: [s('wallet-')], eventTypes: ['Opened', 'Debited'] },
          }),
        );
        const stored = await take(iterator, 1);
        await store.append(s('payment-1'), [event('Opened')], 'any');
        await store.append(s('wallet-2'), [event('Credited'), event('Opened')], 'any');
        await store.append(s('wallet-1'), [event('Debited')], 'any');
        const live = await take(iterator, 2);
        expect([...stored, ...live].map((e) => `${e.stream.slice(ns.length)}:${e.type}`)).toEqual([
          'wallet-1:Opened',
          'wallet-2:Opened',
          'wallet-1:Debited',
        ]);
      });

      it('given a caught-up subscription, when an event is appended, then it arrives promptly', async () => {
        await appendSeq(s('a'), 0, 3);
        const iterator = iterate(store.subscribeToAll({ from: 'start', filter: mine }));
        await take(iterator, 3);
        const pending = iterator.next();
        const started = Date.now();
        await appendSeq(s('a'), 3, 4);
        const next = await pending;
        expect(next.done).toBe(false);
        expect(seqsOf([next.value as RecordedEvent])).toEqual([3]);
        expect(Date.now() - started).toBeLessThan(1000);
      });

      it('when events keep being appended during catch-up, then every event arrives exactly once and in commit order', async () => {
        for (let seq = 0; seq < 400; seq += 50) await appendSeq(s(`old-${seq % 3}`), seq, seq + 50);
        const iterator = iterate(store.subscribeToAll({ from: 'start', filter: mine }));
        // Two writers, each waiting for its own appends: within a writer, commit order is seq order.
        const writer = async (name: string, seqs: number[]) => {
          for (let i = 0; i < seqs.length;) {
            const size = [1, 7, 3, 20, 1, 12][i % 6]!;
            const batch = seqs.slice(i, i + size);
            await store.append(
              s(`${name}-${i % 4}`),
              batch.map((seq) => event('Seq', { seq })),
              'any',
            );
            i += batch.length;
          }
        };
        const writers = Promise.all([writer('w1', range(400, 600)), writer('w2', range(600, 800))]);
        const events = await take(iterator, 800, 20_000);
        await writers;
        expectStrictlyIncreasing(events.map((e) => e.position));
        const seqs = seqsOf(events);
        expect([...seqs].sort((x, y) => x - y)).toEqual(range(0, 800));
        expect(seqs.filter((seq) => seq < 400)).toEqual(range(0, 400));
        expect(seqs.filter((seq) => seq >= 400 && seq < 600)).toEqual(range(400, 600));
        expect(seqs.filter((seq) => seq >= 600)).toEqual(range(600, 800));
        expect(events.map((e) => e.position)).toEqual((await readMine()).map((e) => e.position));
        await expectNothingWithin(iterator, 150);
      });

      it('given a second handle, when it appends, then a subscription on the first handle receives the events', async (context) => {
        if (!fixture.openSecondHandle) return context.skip();
        const other = await secondHandle();
        const iterator = iterate(store.subscribeToAll({ from: 'start', filter: mine }));
        await appendSeq(s('a'), 0, 3, 'any', other);
        expect(seqsOf(await take(iterator, 3))).toEqual(range(0, 3));
        // Now caught up and waiting: only the first handle's own way of noticing foreign appends can deliver these.
        const waiting = take(iterator, 2);
        await appendSeq(s('a'), 3, 5, 'any', other);
        expect(seqsOf(await waiting)).toEqual([3, 4]);
      });

      it('given a next() waiting for events, when stop() is called, then it resolves done promptly and so does every later next()', async () => {
        const subscription = store.subscribeToAll({ from: 'start', filter: mine });
        const iterator = iterate(subscription);
        const pending = iterator.next();
        const started = Date.now();
        await subscription.stop();
        expect(await pending).toEqual({ done: true, value: undefined });
        expect(Date.now() - started).toBeLessThan(500);
        expect((await iterator.next()).done).toBe(true);
        await subscription.stop();
      });

      it('given a for-await loop, when stop() is called, then the loop ends without error after the events it got', async () => {
        await appendSeq(s('a'), 0, 2);
        const subscription = store.subscribeToAll({ from: 'start', filter: mine });
        const seen: RecordedEvent[] = [];
        const loop = (async () => {
          for await (const e of subscription) seen.push(e);
        })();
        await waitUntil(() => seen.length === 2);
        await subscription.stop();
        await loop;
        expect(seqsOf(seen)).toEqual([0, 1]);
      });

      it('when breaking out of a for-await loop, then the subscription is stopped', async () => {
        await appendSeq(s('a'), 0, 3);
        const subscription = store.subscribeToAll({ from: 'start', filter: mine });
        for await (const e of subscription) {
          if ((e.data as { seq: number }).seq === 1) break;
        }
        await appendSeq(s('a'), 3, 4);
        expect((await subscription[Symbol.asyncIterator]().next()).done).toBe(true);
        await subscription.stop();
      });
    });
  });
}

function event(type: string, data: unknown = {}): NewEvent {
  return { type, data };
}

function range(from: number, to: number): number[] {
  return Array.from({ length: to - from }, (_, i) => from + i);
}

function expectStrictlyIncreasing(values: number[]): void {
  values.forEach((value, i) => {
    if (i > 0 && !(value > values[i - 1]!))
      throw new Error(`not strictly increasing at index ${i}: ${values[i - 1]} then ${value}`);
  });
}

async function expectWrongVersion(
  attempt: Promise<unknown>,
  stream: string,
  expected: ExpectedRevision,
  actual: number | 'no_stream',
): Promise<void> {
  const error = await attempt.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(WrongExpectedVersionError);
  expect(error).toMatchObject({ stream, expected, actual, code: 'WRONG_EXPECTED_VERSION' });
}

/** One fulfilled append; every other failed with the winner's revision as the actual one. */
function expectOneWinner(outcomes: Array<PromiseSettledResult<unknown>>, stream: string, winnerRevision: number): void {
  const won = outcomes.filter((o) => o.status === 'fulfilled');
  expect(won).toHaveLength(1);
  expect((won[0] as PromiseFulfilledResult<{ nextExpectedRevision: number }>).value.nextExpectedRevision).toBe(
    winnerRevision,
  );
  for (const outcome of outcomes.filter((o): o is PromiseRejectedResult => o.status === 'rejected')) {
    expect(outcome.reason).toBeInstanceOf(WrongExpectedVersionError);
    expect(outcome.reason).toMatchObject({ stream, actual: winnerRevision });
  }
}

function iterate(subscription: Subscription): AsyncIterator<RecordedEvent> {
  return subscription[Symbol.asyncIterator]();
}

const TIMED_OUT = Symbol('timed out');

function within<T>(promise: Promise<T>, ms: number): Promise<T | typeof TIMED_OUT> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<typeof TIMED_OUT>((resolve) => (timer = setTimeout(() => resolve(TIMED_OUT), ms)));
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** The next `count` events, failing with how many arrived if they do not all come within `timeoutMs`. */
async function take(iterator: AsyncIterator<RecordedEvent>, count: number, timeoutMs = 5000): Promise<RecordedEvent[]> {
  const events: RecordedEvent[] = [];
  const deadline = Date.now() + timeoutMs;
  while (events.length < count) {
    const result = await within(iterator.next(), Math.max(0, deadline - Date.now()));
    if (result === TIMED_OUT) throw new Error(`received ${events.length} of ${count} events within ${timeoutMs} ms`);
    if (result.done) throw new Error(`the subscription ended after ${events.length} of ${count} events`);
    events.push(result.value);
  }
  return events;
}

/** Asserts no further event arrives for a while (the pending next() is settled when the subscription stops). */
async function expectNothingWithin(iterator: AsyncIterator<RecordedEvent>, ms: number): Promise<void> {
  const result = await within(iterator.next(), ms);
  if (result !== TIMED_OUT) throw new Error(`unexpected extra event: ${JSON.stringify(result)}`);
}

async function waitUntil(condition: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

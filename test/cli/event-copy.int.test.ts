/**
 * `wallet-ops events copy`: the resumable planning (pure), then the copy loop between two embedded stores
 * (the loop only uses the EventStore port, so the target's kind does not change what is tested here).
 */
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openSqliteEventStore } from '../../src/adapters/sqlite/sqlite-event-store.ts';
import {
  CopyGapError,
  asNewEvent,
  copyEvents,
  planCopy,
  unknownStreams,
  type TargetRevision,
} from '../../src/cli/event-commands.ts';
import type { EventStore, RecordedEvent } from '../../src/ports/event-store.ts';
import { tempDir } from '../support/temp-dir.ts';

let nextPosition = 1;
const event = (stream: string, revision: number, type = 'Seq'): RecordedEvent => ({
  id: `00000000-0000-4000-8000-${String(nextPosition).padStart(12, '0')}`,
  type,
  data: { n: nextPosition },
  metadata: { actor: 'operator:test' },
  stream,
  revision,
  position: nextPosition++,
  createdAt: '2025-01-01T00:00:00.000Z',
});
const revisions = (entries: Array<[string, TargetRevision]>) => new Map(entries);

describe('events copy: planning', () => {
  it('given an empty target, when a page is planned, then every event is appended at the revision before it, consecutive ones of a stream together', () => {
    const page = [event('a', 0), event('a', 1), event('b', 0), event('a', 2)];
    const plan = planCopy(
      page,
      revisions([
        ['a', 'no_stream'],
        ['b', 'no_stream'],
      ]),
    );
    expect(plan.appends.map((a) => [a.stream, a.expectedRevision, a.events.map((e) => e.revision)])).toEqual([
      ['a', 'no_stream', [0, 1]],
      ['b', 'no_stream', [0]],
      ['a', 1, [2]],
    ]);
    expect(plan.skipped).toBe(0);
    expect([...plan.revisions]).toEqual([
      ['a', 2],
      ['b', 0],
    ]);
  });

  it('given a target that already holds part of the streams (a copy that stopped), when planned, then what is there is skipped and the rest follows it', () => {
    const page = [event('a', 0), event('b', 0), event('a', 1), event('b', 1), event('c', 0)];
    const plan = planCopy(
      page,
      revisions([
        ['a', 1],
        ['b', 0],
        ['c', 'no_stream'],
      ]),
    );
    expect(plan.skipped).toBe(3);
    expect(plan.appends.map((a) => [a.stream, a.expectedRevision, a.events.map((e) => e.revision)])).toEqual([
      ['b', 0, [1]],
      ['c', 'no_stream', [0]],
    ]);
  });

  it('given a target that holds everything, when planned again, then nothing is appended', () => {
    const page = [event('a', 0), event('a', 1)];
    const plan = planCopy(page, revisions([['a', 1]]));
    expect(plan.appends).toEqual([]);
    expect(plan.skipped).toBe(2);
  });

  it('given a target stream behind the page (events missing in between), when planned, then it is a gap, not a renumbering', () => {
    const page = [event('a', 5)];
    expect(() => planCopy(page, revisions([['a', 2]]))).toThrow(CopyGapError);
    expect(() => planCopy(page, revisions([['a', 'no_stream']]))).toThrow(
      /revision no_stream in the target.*revision 5/,
    );
  });

  it('given a stream whose target revision was not looked up, when planned, then it is refused; unknownStreams names what to look up', () => {
    const page = [event('a', 0), event('b', 0), event('a', 1)];
    expect(unknownStreams(page, revisions([['b', 0]]))).toEqual(['a']);
    expect(() => planCopy(page, revisions([['b', 0]]))).toThrow(/not known/);
  });

  it('given the revisions passed in, when planned, then they are not changed (the plan returns the new ones)', () => {
    const before = revisions([['a', 'no_stream']]);
    planCopy([event('a', 0)], before);
    expect(before.get('a')).toBe('no_stream');
  });

  it('given a recorded event, when made an event to append, then id, type, data and metadata are kept', () => {
    const recorded = event('a', 0, 'Opened');
    expect(asNewEvent(recorded)).toEqual({
      id: recorded.id,
      type: 'Opened',
      data: recorded.data,
      metadata: recorded.metadata,
    });
  });
});

describe('events copy: the copy loop', () => {
  let dir: ReturnType<typeof tempDir>;
  let source: EventStore;
  let target: EventStore;

  beforeEach(async () => {
    dir = tempDir('events-copy-');
    source = openSqliteEventStore({ file: join(dir.path, 'source.sqlite') });
    target = openSqliteEventStore({ file: join(dir.path, 'target.sqlite') });
    for (let i = 0; i < 30; i++) {
      await source.append(
        `wallet-${i % 4}`,
        [{ type: 'Credited', data: { i }, metadata: { actor: 'operator:test', correlationId: `c${i}` } }],
        'any',
      );
    }
    await source.appendMulti([
      {
        stream: 'operation-1',
        events: [
          { type: 'OperationRequested', data: {} },
          { type: 'OperationApproved', data: {} },
        ],
        expectedRevision: 'no_stream',
      },
      { stream: 'wallet-0', events: [{ type: 'FundsHeld', data: {} }], expectedRevision: 7 },
    ]);
  });
  afterEach(async () => {
    await Promise.all([source.close(), target.close()]);
    dir.cleanup();
  });

  const shape = (events: RecordedEvent[]) =>
    events.map((e) => ({
      id: e.id,
      type: e.type,
      data: e.data,
      metadata: e.metadata,
      stream: e.stream,
      revision: e.revision,
    }));

  it('when the history is copied, then the target holds the same events, in the same order, with the same revisions', async () => {
    const progress: Array<[number, number]> = [];
    const result = await copyEvents(source, target, {
      pageSize: 7,
      onProgress: (position, head) => progress.push([position, head]),
    });
    expect(result).toMatchObject({ copied: 33, skipped: 0, streams: 5 });
    expect(shape(await target.readAll())).toEqual(shape(await source.readAll()));
    expect(progress.at(-1)).toEqual([await source.headPosition(), await source.headPosition()]);
  });

  it('given a copy that stopped halfway, when run again, then it skips what is there and completes the history', async () => {
    const all = await source.readAll();
    const half = all[16]!.position;
    // A target holding only the first half, as if a first run had died there.
    const firstHalf = all.filter((e) => e.position <= half);
    for (const e of firstHalf)
      await target.append(e.stream, [asNewEvent(e)], e.revision === 0 ? 'no_stream' : e.revision - 1);
    const result = await copyEvents(source, target, { pageSize: 4 });
    expect(result).toMatchObject({ copied: all.length - firstHalf.length, skipped: firstHalf.length });
    expect(shape(await target.readAll())).toEqual(shape(all));
    expect(await copyEvents(source, target)).toMatchObject({ copied: 0, skipped: all.length });
  });

  it('given a start position past the beginning of streams not in the target, when copied, then it stops at the gap instead of renumbering', async () => {
    const all = await source.readAll();
    await expect(copyEvents(source, target, { fromPosition: all[10]!.position })).rejects.toBeInstanceOf(CopyGapError);
  });
});

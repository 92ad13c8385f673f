import { describe, expect, it } from 'vitest';
import { foldInMemory } from '../../src/projections/fold.ts';
import type { Document } from '../../src/ports/read-store.ts';
import type { Positioned, ProjectedEvent, Projection } from '../../src/projections/projection.ts';

/** A counter per key: `Counted` adds one, `Cleared` removes the document. */
type CounterDoc = Document & Positioned & { count: number };
const counters: Projection<CounterDoc> = {
  name: 'counters',
  collection: { name: 'counters', indexes: [] },
  eventTypes: ['Counted', 'Cleared'],
  documentIds: (event) => (event.data as { keys: string[] }).keys,
  evolve: (doc, event, id) =>
    event.type === 'Cleared' ? null : { id, count: (doc?.count ?? 0) + 1, position: event.position },
};
const event = (type: string, position: number, ...keys: string[]): ProjectedEvent => ({
  type,
  data: { keys },
  position,
  createdAt: '2026-11-26T00:00:00.000Z',
});

describe('foldInMemory', () => {
  it('when events touch several documents, then each holds what evolve made of its events, with its id and the last position', () => {
    const docs = foldInMemory(counters, [
      event('Counted', 1, 'a', 'b'),
      event('Counted', 2, 'a'),
      event('Counted', 3, 'c'),
    ]);
    expect(Object.fromEntries(docs)).toEqual({
      a: { id: 'a', count: 2, position: 2 },
      b: { id: 'b', count: 1, position: 1 },
      c: { id: 'c', count: 1, position: 3 },
    });
  });

  it('when evolve returns a document without its id and position, then the fold stamps them as the runner stores them', () => {
    const bare: Projection<CounterDoc> = {
      ...counters,
      evolve: (doc) => ({ count: (doc?.count ?? 0) + 1 }) as CounterDoc,
    };
    expect(foldInMemory(bare, [event('Counted', 7, 'a')]).get('a')).toEqual({ id: 'a', count: 1, position: 7 });
  });

  it('when an event is not of the projection’s types, then it changes nothing', () => {
    expect(foldInMemory(counters, [event('Counted', 1, 'a'), event('Renamed', 2, 'a')]).get('a')).toEqual({
      id: 'a',
      count: 1,
      position: 1,
    });
  });

  it('when an event reaches a document that has seen its position, then it is skipped, so a replay changes nothing', () => {
    const once = foldInMemory(counters, [event('Counted', 1, 'a'), event('Counted', 2, 'a')]);
    const replayed = foldInMemory(counters, [event('Counted', 1, 'a'), event('Counted', 2, 'a')], new Map(once));
    expect(replayed).toEqual(once);
  });

  it('when one event comes twice in a fold, then it is applied once', () => {
    expect(foldInMemory(counters, [event('Counted', 1, 'a'), event('Counted', 1, 'a')]).get('a')).toEqual({
      id: 'a',
      count: 1,
      position: 1,
    });
  });

  it('when evolve removes a document, then it is null, and it counts as changed only if it existed', () => {
    const changed = new Set<string>();
    const docs = foldInMemory(counters, [event('Counted', 1, 'a'), event('Cleared', 2, 'a', 'b')], new Map(), changed);
    expect(docs.get('a')).toBeNull();
    expect(docs.has('b')).toBe(false);
    expect([...changed]).toEqual(['a']);
  });

  it('when documents are given, then the events fold onto them and the changed ids are recorded', () => {
    const changed = new Set<string>();
    const docs = new Map<string, CounterDoc | null>([
      ['a', { id: 'a', count: 5, position: 10 }],
      ['b', { id: 'b', count: 1, position: 3 }],
    ]);
    foldInMemory(counters, [event('Counted', 11, 'a')], docs, changed);
    expect(docs.get('a')).toEqual({ id: 'a', count: 6, position: 11 });
    expect([...changed]).toEqual(['a']);
  });
});

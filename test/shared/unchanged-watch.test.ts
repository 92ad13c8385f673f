import { describe, expect, it } from 'vitest';
import { UnchangedWatch } from '../../src/shared/unchanged-watch.ts';

describe("the unchanged watch (this process's monotonic clock)", () => {
  const watchAt = (limit?: number) => {
    let now = 1_000;
    return { watch: new UnchangedWatch<number>(() => now, limit), advance: (ms: number) => (now += ms) };
  };

  it('when a thing is first seen, then it has stood unchanged for 0 ms', () => {
    expect(watchAt().watch.unchangedForMs('op_1', 3)).toBe(0);
  });

  it('when the same value is seen again later, then the time since it was first seen is counted', () => {
    const { watch, advance } = watchAt();
    watch.unchangedForMs('op_1', 3);
    advance(700);
    expect(watch.unchangedForMs('op_1', 3)).toBe(700);
  });

  it('when the value moved (its owner is alive), then the count starts afresh', () => {
    const { watch, advance } = watchAt();
    watch.unchangedForMs('op_1', 3);
    advance(700);
    expect(watch.unchangedForMs('op_1', 4)).toBe(0);
    advance(100);
    expect(watch.unchangedForMs('op_1', 4)).toBe(100);
  });

  it('when things are watched side by side, then each is counted on its own', () => {
    const { watch, advance } = watchAt();
    watch.unchangedForMs('a', 1);
    advance(300);
    watch.unchangedForMs('b', 1);
    advance(200);
    expect([watch.unchangedForMs('a', 1), watch.unchangedForMs('b', 1)]).toEqual([500, 200]);
  });

  it('when a lease is asked of a first look, then it is not unchanged for it, even a lease of 0 ms', () => {
    const { watch } = watchAt();
    expect(watch.unchangedFor('beat', 7, 0)).toBe(false);
    expect(watch.unchangedFor('beat', 7, 0)).toBe(true);
  });

  it('when a value stood for the lease, then it is unchanged for it; a moment less, then not', () => {
    const { watch, advance } = watchAt();
    watch.unchangedFor('beat', 7, 1_000);
    advance(999);
    expect(watch.unchangedFor('beat', 7, 1_000)).toBe(false);
    advance(1);
    expect(watch.unchangedFor('beat', 7, 1_000)).toBe(true);
  });

  it('when this process made the change itself, then it counts from when it made it', () => {
    const { watch, advance } = watchAt();
    watch.see('delivery_1', 2, 400);
    expect(watch.unchangedForMs('delivery_1', 2)).toBe(600);
    advance(50);
    expect(watch.unchangedForMs('delivery_1', 2)).toBe(650);
  });

  it('when null is the value (nothing written yet), then it is watched like any other', () => {
    let now = 0;
    const watch = new UnchangedWatch<number | null>(() => now);
    watch.unchangedForMs('checkpoint', null);
    now = 30;
    expect(watch.unchangedForMs('checkpoint', null)).toBe(30);
    expect(watch.unchangedForMs('checkpoint', 5)).toBe(0);
  });

  it('when a thing is forgotten (settled), then nothing of it is kept and it is seen afresh', () => {
    const { watch, advance } = watchAt();
    watch.unchangedForMs('op_1', 3);
    watch.forget('op_1');
    expect(watch.size).toBe(0);
    advance(500);
    expect(watch.unchangedForMs('op_1', 3)).toBe(0);
  });

  it('when the limit is reached, then the longest watched is forgotten first', () => {
    const { watch, advance } = watchAt(2);
    watch.unchangedForMs('a', 1);
    watch.unchangedForMs('b', 1);
    watch.see('a', 2);
    advance(100);
    watch.unchangedForMs('c', 1);
    expect(watch.keys()).toEqual(['a', 'c']);
  });
});

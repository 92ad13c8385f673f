import { describe, expect, it } from 'vitest';
import { ClaimWatch } from '../../src/executor/claim-watch.ts';

describe('the watch on claims (this process\'s monotonic clock)', () => {
  const watchAt = () => {
    let now = 1_000;
    return { watch: new ClaimWatch(() => now), advance: (ms: number) => (now += ms) };
  };

  it('when a claim is first seen, then it has stood unchanged for 0 ms', () => {
    expect(watchAt().watch.unchangedForMs('op_1', 3)).toBe(0);
  });

  it('when the same revision is seen again later, then the time since it was first seen is counted', () => {
    const { watch, advance } = watchAt();
    watch.unchangedForMs('op_1', 3);
    advance(700);
    expect(watch.unchangedForMs('op_1', 3)).toBe(700);
  });

  it('when the stream moved (its holder claimed again), then the count starts afresh', () => {
    const { watch, advance } = watchAt();
    watch.unchangedForMs('op_1', 3);
    advance(700);
    expect(watch.unchangedForMs('op_1', 4)).toBe(0);
    advance(100);
    expect(watch.unchangedForMs('op_1', 4)).toBe(100);
  });

  it('when an operation is forgotten (settled), then nothing of it is kept', () => {
    const { watch } = watchAt();
    watch.unchangedForMs('op_1', 3);
    watch.forget('op_1');
    expect(watch.size).toBe(0);
  });
});

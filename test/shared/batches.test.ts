import { describe, expect, it } from 'vitest';
import type { RecordedEvent } from '../../src/ports/event-store.ts';
import { batches } from '../../src/shared/follower.ts';

/** Batching a subscription: what arrived together goes together; a failure never swallows what was read. */
const event = (position: number): RecordedEvent => ({
  id: String(position),
  type: 'T',
  data: {},
  metadata: {},
  stream: 's',
  revision: position,
  position,
  createdAt: '',
});

async function* breaking(count: number): AsyncGenerator<RecordedEvent> {
  for (let i = 1; i <= count; i++) yield event(i);
  throw new Error('subscription dropped');
}

describe('batches', () => {
  it('given events that are all there at once, then they come as one batch, cut at the maximum size', async () => {
    async function* five() {
      for (let i = 1; i <= 5; i++) yield event(i);
    }
    const seen: number[][] = [];
    for await (const batch of batches(five(), 3)) seen.push(batch.map((e) => e.position));
    expect(seen).toEqual([
      [1, 2, 3],
      [4, 5],
    ]);
  });

  it('given a subscription that fails in the middle of a batch, then the events read are yielded before the failure', async () => {
    const seen: number[][] = [];
    await expect(
      (async () => {
        for await (const batch of batches(breaking(4), 100)) seen.push(batch.map((e) => e.position));
      })(),
    ).rejects.toThrow('subscription dropped');
    expect(seen).toEqual([[1, 2, 3, 4]]);
  });
});

describe('batches over a long catch-up', () => {
  it('when many batches are taken without the event loop turning, then no timer is left waiting per event', async () => {
    async function* many() {
      for (let i = 1; i <= 5000; i++) yield event(i);
    }
    const immediates = () => process.getActiveResourcesInfo().filter((name) => name === 'Immediate').length;
    const before = immediates();
    let batchesSeen = 0;
    // for await over an async generator settles in microtasks only: the loop does not turn until the end.
    for await (const batch of batches(many(), 100)) {
      batchesSeen += 1;
      expect(batch.length).toBe(100);
    }
    expect(batchesSeen).toBe(50);
    // One deadline per batch at most, cleared when the batch is cut: a waiting immediate per event holds that event.
    expect(immediates() - before).toBeLessThanOrEqual(1);
  });
});

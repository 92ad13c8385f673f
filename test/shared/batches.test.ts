import { describe, expect, it } from 'vitest';
import type { RecordedEvent } from '../../src/ports/event-store.ts';
import { batches } from '../../src/shared/follower.ts';

/** Batching a subscription: what arrived together goes together; a failure never swallows what was read. */
const event = (position: number): RecordedEvent => ({ id: String(position), type: 'T', data: {}, metadata: {}, stream: 's', revision: position, position, createdAt: '' });

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
    expect(seen).toEqual([[1, 2, 3], [4, 5]]);
  });

  it('given a subscription that fails in the middle of a batch, then the events read are yielded before the failure', async () => {
    const seen: number[][] = [];
    await expect((async () => {
      for await (const batch of batches(breaking(4), 100)) seen.push(batch.map((e) => e.position));
    })()).rejects.toThrow('subscription dropped');
    expect(seen).toEqual([[1, 2, 3, 4]]);
  });
});

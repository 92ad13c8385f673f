import { describe, expect, it } from 'vitest';
import { allCommitted, ReadYourWrites, type CommittedPositions } from '../../src/projections/read-your-writes.ts';

/** A follower whose committed position the test moves; it records what each read waited for. */
function follower(): CommittedPositions & { asked: number[]; commit(position: number): void } {
  let committed = 0;
  const waiting: Array<{ position: number; resolve: (reached: boolean) => void }> = [];
  return {
    asked: [],
    get position() {
      return committed;
    },
    untilCommitted(position) {
      this.asked.push(position);
      if (committed >= position) return Promise.resolve(true);
      return new Promise((resolve) => waiting.push({ position, resolve }));
    },
    commit(position) {
      committed = position;
      for (const waiter of waiting.splice(0)) {
        if (waiter.position <= position) waiter.resolve(true);
        else waiting.push(waiter);
      }
    },
  };
}

/** Whether the wait is over by the next turn of the loop; undefined is no wait at all. */
const settled = async (promise: Promise<unknown> | undefined) => {
  if (promise === undefined) return true;
  let done = false;
  void promise.then(() => (done = true));
  await new Promise((resolve) => setImmediate(resolve));
  return done;
};

describe('read-your-writes', () => {
  it("when a party wrote, then its read of the model waits until the model's follower committed that position", async () => {
    const lists = follower();
    const reads = new ReadYourWrites({ followers: new Map([['lists', lists]]), timeoutMs: 1000 });
    reads.wrote(['lists'], 'distributor:d1', 7);
    const read = reads.untilReadable('lists', 'distributor:d1');
    expect(await settled(read)).toBe(false);
    lists.commit(6);
    expect(await settled(read)).toBe(false);
    lists.commit(7);
    expect(await settled(read)).toBe(true);
  });

  it('when the write is committed, then the read and the next ones go on in the same tick, asking nobody', () => {
    const lists = follower();
    const reads = new ReadYourWrites({ followers: new Map([['lists', lists]]), timeoutMs: 1000 });
    reads.wrote(['lists'], 'distributor:d1', 7);
    lists.commit(7);
    expect(reads.untilReadable('lists', 'distributor:d1')).toBeUndefined();
    expect(reads.untilReadable('lists', 'distributor:d1')).toBeUndefined();
    expect(lists.asked).toEqual([]);
    reads.wrote(['lists'], 'distributor:d1', 9);
    void reads.untilReadable('lists', 'distributor:d1');
    expect(lists.asked).toEqual([9]);
  });

  it('when another party reads, or the party wrote nothing, then the read does not wait', () => {
    const lists = follower();
    const reads = new ReadYourWrites({ followers: new Map([['lists', lists]]), timeoutMs: 1000 });
    reads.wrote(['lists'], 'distributor:d1', 7);
    expect(reads.untilReadable('lists', 'distributor:d2')).toBeUndefined();
    expect(reads.untilReadable('balances', 'distributor:d1')).toBeUndefined();
    expect(lists.asked).toEqual([]);
  });

  it('when a party wrote twice, then a read waits for the later write, whatever order they were told in', () => {
    const lists = follower();
    const reads = new ReadYourWrites({ followers: new Map([['lists', lists]]), timeoutMs: 1000 });
    reads.wrote(['lists'], 'merchant:m1', 9);
    reads.wrote(['lists'], 'merchant:m1', 8);
    void reads.untilReadable('lists', 'merchant:m1');
    expect(lists.asked).toEqual([9]);
  });

  it('when no follower of this process builds the model, or the bound is 0, then nothing is remembered or waited for', () => {
    const lists = follower();
    const none = new ReadYourWrites({ followers: new Map(), timeoutMs: 1000 });
    none.wrote(['lists'], 'distributor:d1', 7);
    expect(none.untilReadable('lists', 'distributor:d1')).toBeUndefined();
    const off = new ReadYourWrites({ followers: new Map([['lists', lists]]), timeoutMs: 0 });
    off.wrote(['lists'], 'distributor:d1', 7);
    expect(off.untilReadable('lists', 'distributor:d1')).toBeUndefined();
    expect(lists.asked).toEqual([]);
  });

  it('when two followers build one model (the balances), then a read waits for both', async () => {
    const store = follower();
    const view = follower();
    const reads = new ReadYourWrites({
      followers: new Map([['balances', allCommitted([store, view])]]),
      timeoutMs: 1000,
    });
    reads.wrote(['balances'], 'distributor:d1', 3);
    const read = reads.untilReadable('balances', 'distributor:d1');
    view.commit(3);
    expect(await settled(read)).toBe(false);
    store.commit(3);
    expect(await settled(read)).toBe(true);
  });
});

import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openSqliteEventStore } from '../../src/adapters/sqlite/sqlite-event-store.ts';
import { createLogger } from '../../src/logger.ts';
import type { EventStore } from '../../src/ports/event-store.ts';
import { batched, Follower, retryCommits, type CheckpointPolicy } from '../../src/shared/follower.ts';
import { tempDir } from '../support/temp-dir.ts';

/**
 * What the follower grew for key revocations and the executor: a follower that commits its checkpoint only now
 * and then (a batched policy) still commits at once the batch whose handler acted and asks for it (commitNow); and
 * a follower whose work does not need the checkpoint's store goes on while that store is down
 * (retryCommits), and resumes from what it handled after a failed session.
 */
describe('a follower with a batched checkpoint', () => {
  let dir: ReturnType<typeof tempDir>;
  let eventStore: EventStore;
  let follower: Follower | undefined;
  const commits: number[] = [];
  const recorded: CheckpointPolicy = {
    load: async () => null,
    commit: async (position) => {
      commits.push(position);
      return { kind: 'committed' };
    },
  };

  beforeEach(() => {
    dir = tempDir('follower-');
    eventStore = openSqliteEventStore({ file: join(dir.path, 'events.sqlite') });
    commits.length = 0;
    follower = new Follower({
      name: 'test',
      eventStore,
      checkpoint: batched(recorded, { positions: 1_000_000, ms: 3_600_000 }),
      handle: async (batch, context) => {
        if (batch.some((event) => event.type === 'Acted')) context.commitNow();
      },
      logger: createLogger('silent'),
    });
    follower.start();
  });
  afterEach(async () => {
    await follower?.stop();
    await eventStore.close();
    dir.cleanup();
  });

  const until = async (condition: () => boolean) => {
    for (const deadline = Date.now() + 5_000; !condition(); await new Promise((resolve) => setTimeout(resolve, 5))) {
      if (Date.now() > deadline) throw new Error('condition not met in time');
    }
  };

  it('when a batch asks for nothing, then its checkpoint waits; when a handler calls commitNow, then its batch is committed at once', async () => {
    const quiet = await eventStore.append('s-1', [{ type: 'Seen', data: {}, metadata: { actor: 'test' } }], 'any');
    await until(() => (follower!.handledPosition ?? 0) >= quiet.position);
    expect(commits).toEqual([]);

    const acted = await eventStore.append('s-1', [{ type: 'Acted', data: {}, metadata: { actor: 'test' } }], 'any');
    await until(() => commits.length > 0);
    expect(commits).toEqual([acted.position]);
  });
});

describe('a follower with a best-effort checkpoint', () => {
  let dir: ReturnType<typeof tempDir>;
  let eventStore: EventStore;
  let follower: Follower | undefined;
  afterEach(async () => {
    await follower?.stop();
    await eventStore.close();
    dir.cleanup();
  });

  it('when its checkpoint cannot be committed, then it goes on handling events without failing; a failed session resumes from what it handled, not from the store', async () => {
    dir = tempDir('follower-');
    eventStore = openSqliteEventStore({ file: join(dir.path, 'events.sqlite') });
    let storeDown = false;
    const commits: number[] = [];
    let loads = 0;
    const flaky: CheckpointPolicy = {
      load: async () => {
        loads += 1;
        if (storeDown) throw new Error('read store down');
        return null;
      },
      commit: async (position) => {
        if (storeDown) throw new Error('read store down');
        commits.push(position);
        return { kind: 'committed' };
      },
    };
    const handled: number[] = [];
    let failNext = false;
    follower = new Follower({
      name: 'test',
      eventStore,
      checkpoint: flaky,
      settling: retryCommits(),
      handle: async (batch) => {
        if (failNext) {
          failNext = false;
          throw new Error('handler failed once');
        }
        handled.push(...batch.map((event) => event.position));
      },
      logger: createLogger('silent'),
      supervision: { baseDelayMs: 5, maxDelayMs: 10 },
    });
    follower.start();
    const append = async () =>
      (await eventStore.append('s-1', [{ type: 'Seen', data: {}, metadata: { actor: 'test' } }], 'any')).position;
    const until = async (condition: () => boolean) => {
      for (const deadline = Date.now() + 5_000; !condition(); await new Promise((resolve) => setTimeout(resolve, 5))) {
        if (Date.now() > deadline) throw new Error('condition not met in time');
      }
    };
    const first = await append();
    await until(() => commits.includes(first));

    storeDown = true;
    const during = [await append(), await append()];
    await until(() => during.every((position) => handled.includes(position)));
    expect(follower.consumer.status()).toMatchObject({ state: 'running', totalFailures: 0 });

    failNext = true;
    const afterFailure = await append();
    await until(() => handled.includes(afterFailure));
    expect(follower.consumer.status().totalFailures).toBe(1);
    expect(loads).toBe(1); // resumed from what it handled: the store was not asked
    expect(handled.filter((position) => position === during[1])).toHaveLength(1);

    storeDown = false;
    await until(() => commits.includes(afterFailure));
  });
});

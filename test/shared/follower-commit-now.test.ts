import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openSqliteEventStore } from '../../src/adapters/sqlite/sqlite-event-store.ts';
import { createLogger } from '../../src/logger.ts';
import type { EventStore } from '../../src/ports/event-store.ts';
import { Follower, type CheckpointPolicy } from '../../src/shared/follower.ts';
import { tempDir } from '../support/temp-dir.ts';

/**
 * A follower that commits its checkpoint only now and then (commitEvery) still commits at once the batch
 * whose handler acted and asks for it (commitNow): a restart then does not act again (key revocations).
 */
describe('a follower with commitEvery', () => {
  let dir: ReturnType<typeof tempDir>;
  let eventStore: EventStore;
  let follower: Follower | undefined;
  const commits: number[] = [];
  const recorded: CheckpointPolicy = { load: async () => null, commit: async (position) => void commits.push(position) };

  beforeEach(() => {
    dir = tempDir('follower-');
    eventStore = openSqliteEventStore({ file: join(dir.path, 'events.sqlite') });
    commits.length = 0;
    follower = new Follower({
      name: 'test',
      eventStore,
      checkpoint: recorded,
      commitEvery: { positions: 1_000_000, ms: 3_600_000 },
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

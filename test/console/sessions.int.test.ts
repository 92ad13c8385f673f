import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openSqliteReadStore } from '../../src/adapters/sqlite/sqlite-read-store.ts';
import { ConsoleSessions, SESSIONS_COLLECTION } from '../../src/console/sessions.ts';
import type { ReadStore } from '../../src/ports/read-store.ts';
import { tempDir } from '../support/temp-dir.ts';

/** The navigation's poll reads the session with `peek`: it must never stretch an idle session's life. */
describe('console sessions: peek', () => {
  let dir: ReturnType<typeof tempDir>;
  let store: ReadStore;
  let now = Date.parse('2026-03-01T08:00:00Z');
  const sessions = () =>
    new ConsoleSessions(store, () => new Date(now), { idleMs: 3_600_000, absoluteMs: 24 * 3_600_000 });

  beforeEach(async () => {
    dir = tempDir('sessions-');
    store = openSqliteReadStore({ file: join(dir.path, 'read-models.sqlite') });
    await store.defineCollections([SESSIONS_COLLECTION]);
  });
  afterEach(async () => {
    await store.close();
    dir.cleanup();
  });

  it('when a session is peeked at for longer than its idle limit, then it is not refreshed and ends on time', async () => {
    const { token } = await sessions().create('u1');
    for (let minute = 10; minute <= 50; minute += 10) {
      now += 10 * 60_000;
      expect((await sessions().peek(token))?.userID).toBe('u1');
    }
    now += 11 * 60_000; // 61 minutes after the last real request
    expect(await sessions().peek(token)).toBeNull();
    expect(await sessions().resume(token)).toBeNull();
  });

  it('when a session is resumed by a page view, then a later peek sees it alive past the first hour', async () => {
    const { token } = await sessions().create('u2');
    now += 50 * 60_000;
    expect(await sessions().resume(token)).not.toBeNull();
    now += 50 * 60_000;
    expect((await sessions().peek(token))?.userID).toBe('u2');
    expect(await sessions().peek('not-a-token-at-all-0000')).toBeNull();
  });
});

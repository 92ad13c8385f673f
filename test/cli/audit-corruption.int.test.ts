/**
 * `audit verify` on a damaged events.sqlite names what is wrong: the file, SQLite's finding, and the position
 * from which the history is unreadable, and exits 1; it does not report the store as merely unavailable.
 */
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { embedded, openStores } from '../../src/adapters/open-stores.ts';
import { flipBytes, tablePages } from '../support/corrupt-sqlite.ts';
import { runCli } from '../support/cli.ts';
import { tempDir } from '../support/temp-dir.ts';

describe('audit verify on a corrupted events.sqlite', () => {
  const dir = tempDir();
  beforeAll(async () => {
    const stores = await openStores(embedded(dir.path));
    for (let i = 0; i < 20; i++) {
      await stores.eventStore.append(
        `wallet-test-${i}`,
        Array.from({ length: 100 }, () => ({ type: 'WalletCredited', data: { amount: '1.00', note: randomUUID() } })),
        'any',
      );
    }
    await stores.close();
    const file = join(dir.path, 'events.sqlite');
    const { pageSize, pages } = tablePages(file, 'events');
    for (const page of pages.slice(2, 6)) flipBytes(file, (page - 1) * pageSize, 16);
  });
  afterAll(() => dir.cleanup());

  it('when it runs, then it exits 1 naming the file, the corruption and where the history becomes unreadable', async () => {
    const result = await runCli(['audit', 'verify', '--ledger', 'skip', '--data-dir', dir.path]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(
      /^corrupted: events\.sqlite is corrupted: .*\(SQLITE_CORRUPT[A-Z_]*\); the history is unreadable from position \d+ \(of 2000\)/m,
    );
    expect(result.stderr).not.toMatch(/could not read the event store/);
  });
});

import { chmodSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openLedger, openStores } from '../../src/adapters/open-stores.ts';
import { runCli, runCliJson } from '../support/cli.ts';
import { tempDir } from '../support/temp-dir.ts';

/**
 * What wallet-ops writes to disk holds the whole history, password hashes included: its files are the owner's
 * alone (0600), and a data directory it creates is too (0700), whatever the umask. Checked on the embedded
 * stores and ledger (with their WAL and shared-memory files) and on `events export`.
 */
const mode = (path: string) => statSync(path).mode & 0o777;
const octal = (m: number) => `0${m.toString(8)}`;

describe('owner-only files', () => {
  const root = tempDir();
  afterAll(() => root.cleanup());

  it('when the embedded stores and ledger create their files, then every file is 0600 and the data directory 0700', async () => {
    const dataDir = join(root.path, 'fresh', 'data');
    const stores = await openStores({ dataDir });
    const ledger = await openLedger({ dataDir });
    try {
      await stores.eventStore.append('test-1', [{ type: 'Tested', data: {} }], 'no_stream');
      await stores.readStore.defineCollections([{ name: 'things' }]);
      await stores.readStore.commit([{ op: 'upsert', collection: 'things', doc: { id: 'a' } }]);
      const files = readdirSync(dataDir);
      for (const name of ['events.sqlite', 'events.sqlite-wal', 'events.sqlite-shm', 'read-models.sqlite', 'read-models.sqlite-wal', 'ledger.sqlite']) {
        expect(files, name).toContain(name);
      }
      for (const name of files) expect(octal(mode(join(dataDir, name))), name).toBe('0600');
      expect(octal(mode(dataDir))).toBe('0700');
    } finally {
      await ledger.close();
      await stores.close();
    }
  });

  it('when the files already exist readable by others (an older wallet-ops made them), then opening them makes them owner-only', async () => {
    const dataDir = join(root.path, 'older');
    const first = await openStores({ dataDir });
    await first.eventStore.append('test-1', [{ type: 'Tested', data: {} }], 'no_stream');
    await first.close();
    for (const name of readdirSync(dataDir)) chmodSync(join(dataDir, name), 0o644);

    const again = await openStores({ dataDir });
    try {
      for (const name of readdirSync(dataDir)) expect(octal(mode(join(dataDir, name))), name).toBe('0600');
    } finally {
      await again.close();
    }
  });

  it('when events are exported through the CLI, then the file is 0600, also when it replaced a file readable by others', async () => {
    const dataDir = join(root.path, 'exported');
    await runCliJson(['party', 'add-individual', '--phone', '+2348123456781', '--name', 'Ada', '--data-dir', dataDir]);
    const out = join(root.path, 'history.jsonl');
    writeFileSync(out, 'old\n', { mode: 0o644 });
    chmodSync(out, 0o644);
    const result = await runCli(['events', 'export', '--out', out, '--json', '--data-dir', dataDir]);
    expect(result.code, result.stderr).toBe(0);
    expect(octal(mode(out))).toBe('0600');
    const fresh = join(root.path, 'fresh-history.jsonl');
    expect((await runCli(['events', 'export', '--out', fresh, '--data-dir', dataDir])).code).toBe(0);
    expect(octal(mode(fresh))).toBe('0600');
  }, 120_000); // three CLI processes
});

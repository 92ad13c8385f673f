import { spawn } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
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
/** A uid that is not ours (nobody): the tests run as root, which can give a directory away. */
const OTHER_UID = process.getuid?.() === 65534 ? 65533 : 65534;
const MAIN = fileURLToPath(new URL('../../src/main.ts', import.meta.url));
const ROOT = fileURLToPath(new URL('../../', import.meta.url));

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
      for (const name of [
        'events.sqlite',
        'events.sqlite-wal',
        'events.sqlite-shm',
        'read-models.sqlite',
        'read-models.sqlite-wal',
        'ledger.sqlite',
      ]) {
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

  it('when the data directory exists and others may enter it (0777, made by hand), then opening the stores or the ledger narrows it to 0700', async () => {
    for (const [name, open] of [
      ['stores', async (dataDir: string) => (await openStores({ dataDir })).close()],
      ['ledger', async (dataDir: string) => (await openLedger({ dataDir })).close()],
    ] as const) {
      const dataDir = join(root.path, `loose-${name}`);
      mkdirSync(dataDir);
      chmodSync(dataDir, 0o777);
      await open(dataDir);
      expect(octal(mode(dataDir)), name).toBe('0700');
    }
  });

  it('when the data directory belongs to another user, then opening the stores or the ledger is refused naming the directory and its owner, and nothing is written in it', async () => {
    const dataDir = join(root.path, 'theirs');
    mkdirSync(dataDir, { mode: 0o755 });
    chownSync(dataDir, OTHER_UID, OTHER_UID);
    const refusal = expect.objectContaining({
      name: 'DataDirError',
      message: expect.stringMatching(
        new RegExp(`DATA_DIR ${dataDir} belongs to uid ${OTHER_UID}, not to uid ${process.getuid?.()}.*chown`),
      ),
    });
    await expect(openStores({ dataDir })).rejects.toThrow(refusal);
    await expect(openLedger({ dataDir })).rejects.toThrow(refusal);
    expect(readdirSync(dataDir)).toEqual([]);
    expect(octal(mode(dataDir))).toBe('0755');
  });

  it('when the data directory is a shared one (sticky bit, like /tmp), then it is refused rather than narrowed', async () => {
    const dataDir = join(root.path, 'shared');
    mkdirSync(dataDir);
    chmodSync(dataDir, 0o1777);
    await expect(openStores({ dataDir })).rejects.toThrow(/DATA_DIR .*shared directory/);
    expect(statSync(dataDir).mode & 0o7777).toBe(0o1777);
  });

  it('when npm start meets a data directory of another user, then it exits 1 with one line saying so, not a stack trace', async () => {
    const dataDir = join(root.path, 'theirs-started');
    mkdirSync(dataDir, { mode: 0o700 });
    chownSync(dataDir, OTHER_UID, OTHER_UID);
    const child = spawn(process.execPath, [MAIN], {
      cwd: ROOT,
      env: { ...process.env, DATA_DIR: dataDir, PORT: '0', LOG_LEVEL: 'silent' },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000); // should it start after all (the defect)
    const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
    clearTimeout(timer);
    expect(code, stderr).toBe(1);
    expect(stderr).toMatch(new RegExp(`^DATA_DIR ${dataDir} belongs to uid ${OTHER_UID}.*\n$`));
    expect(stderr.trim().split('\n')).toHaveLength(1);
  }, 60_000);

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
  }, 120_000);
});

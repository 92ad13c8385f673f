import { spawn } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { embeddedSecretsKey } from '../../src/adapters/secrets-key-file.ts';
import { tempDir } from '../support/temp-dir.ts';

/** The embedded deployment's secrets key: DATA_DIR/secrets.key, made once, owner-only. */
/** A uid that is not ours (nobody): the tests run as root, which can give a file away. */
const OTHER_UID = process.getuid?.() === 65534 ? 65533 : 65534;
const MODULE = fileURLToPath(new URL('../../src/adapters/secrets-key-file.ts', import.meta.url));

describe('embedded secrets key file', () => {
  const dirs: Array<ReturnType<typeof tempDir>> = [];
  const dir = () => {
    const made = tempDir('secrets-key-');
    dirs.push(made);
    return made.path;
  };
  afterEach(() => dirs.splice(0).forEach((d) => d.cleanup()));

  it('given a data directory without a key, when the key is asked for, then 32 random bytes are written owner-only (0600), and later calls return the same key', () => {
    const path = join(dir(), 'nested');
    const key = embeddedSecretsKey(path);
    expect(key).toHaveLength(32);
    const file = join(path, 'secrets.key');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(Buffer.from(readFileSync(file, 'utf8').trim(), 'base64')).toEqual(key);
    expect(embeddedSecretsKey(path)).toEqual(key);
    expect(readdirSync(path)).toEqual(['secrets.key']); // no temporary file left behind
    expect(embeddedSecretsKey(dir())).not.toEqual(key);
  });

  it('given a key file that others can read, when the key is asked for, then it is refused with the fix', () => {
    const path = dir();
    embeddedSecretsKey(path);
    chmodSync(join(path, 'secrets.key'), 0o644);
    expect(() => embeddedSecretsKey(path)).toThrow(/can be read by other users \(mode 644\).*chmod 600/);
  });

  it('given a key file owned by another user, when the key is asked for, then it is refused naming the file and its owner, even at 0600', () => {
    const path = dir();
    embeddedSecretsKey(path);
    const file = join(path, 'secrets.key');
    chownSync(file, OTHER_UID, OTHER_UID);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(() => embeddedSecretsKey(path)).toThrow(expect.objectContaining({ name: 'DataDirError', message: expect.stringMatching(new RegExp(`secrets\\.key belongs to uid ${OTHER_UID}.*chown`)) }));
  });

  it('given a key file owned by another user and readable by others, when the key is asked for, then it is refused', () => {
    const path = dir();
    embeddedSecretsKey(path);
    const file = join(path, 'secrets.key');
    chownSync(file, OTHER_UID, OTHER_UID);
    chmodSync(file, 0o644);
    expect(() => embeddedSecretsKey(path)).toThrow(/secrets\.key/);
  });

  it('given an existing data directory that others can enter (0777), when the key is asked for, then the directory is narrowed to 0700', () => {
    const path = join(dir(), 'data');
    mkdirSync(path);
    chmodSync(path, 0o777);
    embeddedSecretsKey(path);
    expect(statSync(path).mode & 0o777).toBe(0o700);
  });

  it('given a data directory owned by another user, when the key is asked for, then it is refused naming the directory, and no key is written', () => {
    const path = join(dir(), 'data');
    mkdirSync(path, { mode: 0o700 });
    chownSync(path, OTHER_UID, OTHER_UID);
    expect(() => embeddedSecretsKey(path)).toThrow(expect.objectContaining({ name: 'DataDirError', message: expect.stringContaining(`${path} belongs to uid ${OTHER_UID}`) }));
    expect(readdirSync(path)).toEqual([]);
  });

  it('given a key file that does not hold 32 bytes, when the key is asked for, then it is refused', () => {
    const path = dir();
    writeFileSync(join(path, 'secrets.key'), 'c2hvcnQ=\n', { mode: 0o600 });
    expect(() => embeddedSecretsKey(path)).toThrow(/does not hold a 32-byte key/);
  });

  it('given four processes starting at once on a new data directory, when each asks for the key, then they all get one and the same key', async () => {
    const path = dir();
    const script = `import { embeddedSecretsKey } from ${JSON.stringify(MODULE)}; process.stdout.write(embeddedSecretsKey(process.argv[1]).toString('hex'));`;
    const keys = await Promise.all(
      Array.from(
        { length: 4 },
        () =>
          new Promise<string>((resolve, reject) => {
            const child = spawn(process.execPath, ['--input-type=module', '-e', script, path], { stdio: ['ignore', 'pipe', 'inherit'] });
            let out = '';
            child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
            child.once('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`exit ${code}`))));
          }),
      ),
    );
    expect(new Set(keys).size).toBe(1);
    expect(keys[0]).toMatch(/^[0-9a-f]{64}$/);
  }, 60_000);
});

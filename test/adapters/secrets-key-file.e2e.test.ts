import { spawn } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { defaultSecretsKeyFile, embeddedSecretsKey } from '../../src/adapters/secrets-key-file.ts';
import { tempDir } from '../support/temp-dir.ts';

/** The embedded deployment's secrets key: <DATA_DIR>.secrets/secrets.key beside DATA_DIR, made once, owner-only. */
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

  it('given a data directory without a key, when the key is asked for, then 32 random bytes are written owner-only (0600) beside it, not in it, and later calls return the same key', () => {
    const path = join(dir(), 'nested');
    const key = embeddedSecretsKey(path);
    expect(key).toHaveLength(32);
    const file = join(`${path}.secrets`, 'secrets.key');
    expect(defaultSecretsKeyFile(path)).toBe(file);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(`${path}.secrets`).mode & 0o777).toBe(0o700);
    expect(Buffer.from(readFileSync(file, 'utf8').trim(), 'base64')).toEqual(key);
    expect(embeddedSecretsKey(path)).toEqual(key);
    expect(readdirSync(`${path}.secrets`)).toEqual(['secrets.key']); // no temporary file left behind
    expect(readdirSync(path)).toEqual([]);
    expect(embeddedSecretsKey(dir())).not.toEqual(key);
  });

  it('given SECRETS_KEY_FILE, when the key is asked for, then it is made there; a key file inside DATA_DIR is refused', () => {
    const root = dir();
    const path = join(root, 'data');
    const file = join(root, 'keys', 'wallet.key');
    const key = embeddedSecretsKey(path, { keyFile: file });
    expect(Buffer.from(readFileSync(file, 'utf8').trim(), 'base64')).toEqual(key);
    expect(existsSync(defaultSecretsKeyFile(path))).toBe(false);
    expect(() => embeddedSecretsKey(path, { keyFile: join(path, 'sub', 'secrets.key') })).toThrow(
      /inside DATA_DIR.*SECRETS_KEY_FILE/,
    );
    expect(() => embeddedSecretsKey(path, { keyFile: join(path, 'secrets.key') })).toThrow(/inside DATA_DIR/);
  });

  it('given a key file whose directory cannot be made, when the key is asked for, then the start stops naming SECRETS_KEY_FILE and SECRETS_KEY', () => {
    const root = dir();
    writeFileSync(join(root, 'a-file'), '');
    expect(() =>
      embeddedSecretsKey(join(root, 'data'), { keyFile: join(root, 'a-file', 'keys', 'secrets.key') }),
    ).toThrow(
      expect.objectContaining({
        name: 'DataDirError',
        message: expect.stringMatching(
          /cannot make the secrets key directory .*\(ENOTDIR\).*SECRETS_KEY_FILE.*SECRETS_KEY/,
        ),
      }),
    );
  });

  it('given a key an older version left in DATA_DIR/secrets.key, when the key is asked for, then it is moved out (same key, said once) and DATA_DIR keeps no key', () => {
    const path = join(dir(), 'data');
    mkdirSync(path, { mode: 0o700 });
    const old = Buffer.alloc(32, 7);
    writeFileSync(join(path, 'secrets.key'), `${old.toString('base64')}\n`, { mode: 0o600 });
    const moves: Array<[string, string]> = [];
    expect(embeddedSecretsKey(path, { onMoved: (from, to) => moves.push([from, to]) })).toEqual(old);
    expect(moves).toEqual([[join(path, 'secrets.key'), defaultSecretsKeyFile(path)]]);
    expect(readdirSync(path)).toEqual([]);
    expect(statSync(defaultSecretsKeyFile(path)).mode & 0o777).toBe(0o600);
    expect(embeddedSecretsKey(path, { onMoved: (from, to) => moves.push([from, to]) })).toEqual(old);
    expect(moves).toHaveLength(1);
  });

  it('given different keys at the old place and the new one, when the key is asked for, then the start stops naming both, and neither is touched', () => {
    const path = join(dir(), 'data');
    mkdirSync(path, { mode: 0o700 });
    embeddedSecretsKey(path);
    const current = readFileSync(defaultSecretsKeyFile(path), 'utf8');
    const older = `${Buffer.alloc(32, 9).toString('base64')}\n`;
    writeFileSync(join(path, 'secrets.key'), older, { mode: 0o600 });
    expect(() => embeddedSecretsKey(path)).toThrow(
      expect.objectContaining({
        name: 'DataDirError',
        message: expect.stringMatching(/two different secrets keys.*nothing was changed/),
      }),
    );
    expect(readFileSync(join(path, 'secrets.key'), 'utf8')).toBe(older);
    expect(readFileSync(defaultSecretsKeyFile(path), 'utf8')).toBe(current);
  });

  it('given the same key at both places (a move cut short), when the key is asked for, then the old copy is removed', () => {
    const path = join(dir(), 'data');
    const key = embeddedSecretsKey(path);
    writeFileSync(join(path, 'secrets.key'), readFileSync(defaultSecretsKeyFile(path)), { mode: 0o600 });
    expect(embeddedSecretsKey(path)).toEqual(key);
    expect(readdirSync(path)).toEqual([]);
  });

  it('given a key file that others can read, when the key is asked for, then it is refused with the fix', () => {
    const path = dir();
    embeddedSecretsKey(path);
    chmodSync(defaultSecretsKeyFile(path), 0o644);
    expect(() => embeddedSecretsKey(path)).toThrow(/can be read by other users \(mode 644\).*chmod 600/);
  });

  it('given a key file owned by another user, when the key is asked for, then it is refused naming the file and its owner, even at 0600', () => {
    const path = dir();
    embeddedSecretsKey(path);
    const file = defaultSecretsKeyFile(path);
    chownSync(file, OTHER_UID, OTHER_UID);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(() => embeddedSecretsKey(path)).toThrow(
      expect.objectContaining({
        name: 'DataDirError',
        message: expect.stringMatching(new RegExp(`secrets\\.key belongs to uid ${OTHER_UID}.*chown`)),
      }),
    );
  });

  it('given a key file owned by another user and readable by others, when the key is asked for, then it is refused', () => {
    const path = dir();
    embeddedSecretsKey(path);
    const file = defaultSecretsKeyFile(path);
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
    expect(() => embeddedSecretsKey(path)).toThrow(
      expect.objectContaining({
        name: 'DataDirError',
        message: expect.stringContaining(`${path} belongs to uid ${OTHER_UID}`),
      }),
    );
    expect(readdirSync(path)).toEqual([]);
  });

  it('given a key file that does not hold 32 bytes, when the key is asked for, then it is refused', () => {
    const path = dir();
    embeddedSecretsKey(path);
    writeFileSync(defaultSecretsKeyFile(path), 'c2hvcnQ=\n', { mode: 0o600 });
    expect(() => embeddedSecretsKey(path)).toThrow(/does not hold a 32-byte key/);
  });

  const fourAtOnce = (path: string) => {
    const script = `import { embeddedSecretsKey } from ${JSON.stringify(MODULE)}; process.stdout.write(embeddedSecretsKey(process.argv[1]).toString('hex'));`;
    return Promise.all(
      Array.from(
        { length: 4 },
        () =>
          new Promise<string>((resolve, reject) => {
            const child = spawn(process.execPath, ['--input-type=module', '-e', script, path], {
              stdio: ['ignore', 'pipe', 'inherit'],
            });
            let out = '';
            child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
            child.once('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`exit ${code}`))));
          }),
      ),
    );
  };

  it('given four processes starting at once on a new data directory, when each asks for the key, then they all get one and the same key', async () => {
    const keys = await fourAtOnce(dir());
    expect(new Set(keys).size).toBe(1);
    expect(keys[0]).toMatch(/^[0-9a-f]{64}$/);
  }, 60_000);

  it('given four processes starting at once on a data directory with its key at the old place, when each asks for the key, then they all get that key, moved out', async () => {
    const path = join(dir(), 'data');
    mkdirSync(path, { mode: 0o700 });
    const old = Buffer.alloc(32, 5);
    writeFileSync(join(path, 'secrets.key'), `${old.toString('base64')}\n`, { mode: 0o600 });
    const keys = await fourAtOnce(path);
    expect(keys).toEqual(Array(4).fill(old.toString('hex')));
    expect(readdirSync(path)).toEqual([]);
  }, 60_000);
});

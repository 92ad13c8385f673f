import { randomBytes } from 'node:crypto';
import { closeSync, fsyncSync, linkSync, openSync, readFileSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { dirname, isAbsolute, join, relative, resolve } from 'node:path';
import { assertOwnedByUs, DataDirError, ownerOnlyDataDir } from './data-dir.ts';

export const SECRETS_KEY_FILE = 'secrets.key';

/**
 * Where the embedded key file lives when SECRETS_KEY_FILE does not say: `<DATA_DIR>.secrets/secrets.key`, a
 * directory of its own beside DATA_DIR, never inside it. A copy of DATA_DIR (a backup, a disk image, a
 * colleague's tarball) then holds sealed secrets and no key to open them.
 */
export function defaultSecretsKeyFile(dataDir: string): string {
  return join(`${resolve(dataDir)}.secrets`, SECRETS_KEY_FILE);
}

export interface EmbeddedKeyOptions {
  /** SECRETS_KEY_FILE; default: defaultSecretsKeyFile(dataDir). */
  keyFile?: string | undefined;
  /** Told once a key found at the old place, DATA_DIR/secrets.key, has been moved out to the key file. */
  onMoved?: (from: string, to: string) => void;
}

/**
 * The key that encrypts secrets at rest when no SECRETS_KEY is configured (the embedded stores): 32 random
 * bytes in base64, made on the first start with permissions 0600 in its own owner-only directory, and read by
 * every later start and every other process on the same data directory. A key file inside DATA_DIR is refused.
 *
 * It is written whole under a temporary name, flushed, and linked into place: a link fails when the file
 * exists, so of two processes starting at once exactly one makes the key, and no process ever reads a
 * half-written one. A key file that another user owns, that others can read, or that does not hold 32 bytes
 * stops the start (it is never narrowed in place: a key others could read is a key to replace).
 *
 * Before issue 40 the key lived in DATA_DIR/secrets.key: one found there is moved out first (see moveOut).
 */
export function embeddedSecretsKey(dataDir: string, options: EmbeddedKeyOptions = {}): Buffer {
  ownerOnlyDataDir(dataDir);
  const file = resolve(options.keyFile ?? defaultSecretsKeyFile(dataDir));
  const inside = relative(resolve(dataDir), file);
  if (!inside.startsWith('..') && !isAbsolute(inside)) {
    throw new DataDirError(
      `the secrets key file ${file} is inside DATA_DIR ${dataDir}: a copy of DATA_DIR would open every sealed ` +
        `secret; set SECRETS_KEY_FILE outside it (default ${defaultSecretsKeyFile(dataDir)})`,
    );
  }
  try {
    ownerOnlyDataDir(dirname(file), 'the secrets key directory');
  } catch (error) {
    const code = errorCode(error);
    if (!['EACCES', 'EPERM', 'EROFS', 'ENOTDIR'].includes(code ?? '')) throw error;
    throw new DataDirError(
      `cannot make the secrets key directory ${dirname(file)} (${code}): set SECRETS_KEY_FILE to a path outside ` +
        'DATA_DIR that wallet-ops may write, or set SECRETS_KEY',
    );
  }
  moveOut(join(dataDir, SECRETS_KEY_FILE), file, options.onMoved);
  return readOrCreate(file);
}

/** The key in `file`, made there first if there is none (its directory must already be owner-only). */
function readOrCreate(file: string): Buffer {
  try {
    create(file, randomBytes(32));
  } catch (error) {
    if (errorCode(error) !== 'EEXIST') throw error;
  }
  return read(file);
}

/** A key file of a tool's own folder (`wallet-ops postgres`), with no DATA_DIR to keep it apart from. */
export function secretsKeyAt(file: string): Buffer {
  ownerOnlyDataDir(dirname(file), 'the secrets key directory');
  return readOrCreate(file);
}

/**
 * Moves a key left at the old place to the key file without ever being without one: the old name is linked
 * (or, across file systems, copied and flushed) to the new one, and unlinked only once the new one holds the
 * same key. Two different keys at both places stop the start: which one opens the sealed secrets is for the
 * operator to say, and guessing wrong would lose them all. Processes starting at once may race: whoever links
 * first wins, the others find the same key at the new place, or the old one already gone.
 */
function moveOut(old: string, file: string, onMoved: EmbeddedKeyOptions['onMoved']): void {
  let key: Buffer;
  try {
    key = read(old);
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return;
    throw error;
  }
  try {
    linkSync(old, file);
  } catch (error) {
    const code = errorCode(error);
    if (code === 'ENOENT') return; // another process moved it meanwhile
    if (code === 'EXDEV') copyOrExisting(file, key);
    else if (code !== 'EEXIST') throw error;
    if (!read(file).equals(key)) {
      throw new DataDirError(
        `two different secrets keys: ${old} (the old place, inside DATA_DIR) and ${file}. Keep the one your ` +
          `sealed secrets were sealed with (the old one, unless ${file} was restored on purpose), move the other ` +
          'away, and start again: nothing was changed',
      );
    }
  }
  syncDirectory(dirname(file));
  try {
    unlinkSync(old);
  } catch (error) {
    if (errorCode(error) !== 'ENOENT') throw error;
  }
  syncDirectory(dirname(old));
  onMoved?.(old, file);
}

function copyOrExisting(file: string, key: Buffer): void {
  try {
    create(file, key);
  } catch (error) {
    if (errorCode(error) !== 'EEXIST') throw error;
  }
}

function create(file: string, key: Buffer): void {
  const temporary = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  const fd = openSync(temporary, 'wx', 0o600);
  try {
    writeSync(fd, `${key.toString('base64')}\n`);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  try {
    linkSync(temporary, file);
  } finally {
    unlinkSync(temporary);
  }
}

function read(file: string): Buffer {
  const stat = statSync(file);
  if (!stat.isFile()) throw new DataDirError(`${file} is not a file`);
  assertOwnedByUs(file, stat, 'the secrets key file');
  if ((stat.mode & 0o077) !== 0) {
    throw new DataDirError(
      `${file} can be read by other users (mode ${(stat.mode & 0o777).toString(8)}); it must be owner-only: ` +
        `chmod 600 ${file}`,
    );
  }
  const key = Buffer.from(readFileSync(file, 'utf8').trim(), 'base64');
  if (key.length !== 32) throw new DataDirError(`${file} does not hold a 32-byte key in base64`);
  return key;
}

/** A rename or link is durable once its directory is flushed (not possible on every platform: then best effort). */
function syncDirectory(dir: string): void {
  let fd: number | undefined;
  try {
    fd = openSync(dir, 'r');
    fsyncSync(fd);
  } catch {
    // Windows cannot open a directory; the link itself still happened.
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

const errorCode = (error: unknown) => (error as NodeJS.ErrnoException).code;

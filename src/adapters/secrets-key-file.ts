import { randomBytes } from 'node:crypto';
import { closeSync, fsyncSync, linkSync, openSync, readFileSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { assertOwnedByUs, DataDirError, ownerOnlyDataDir } from './data-dir.ts';

export const SECRETS_KEY_FILE = 'secrets.key';

/**
 * The key that encrypts secrets at rest when no SECRETS_KEY is configured (the embedded stores):
 * `$DATA_DIR/secrets.key`, 32 random bytes in base64, made on the first start with permissions 0600 and read
 * by every later start and every other process on the same data directory.
 *
 * It is written whole under a temporary name, flushed, and linked into place: a link fails when the file
 * exists, so of two processes starting at once exactly one makes the key, and no process ever reads a
 * half-written one. A key file that another user owns, that others can read, or that does not hold 32 bytes
 * stops the start (it is never narrowed in place: a key others could read is a key to replace).
 */
export function embeddedSecretsKey(dataDir: string): Buffer {
  ownerOnlyDataDir(dataDir);
  const file = join(dataDir, SECRETS_KEY_FILE);
  try {
    create(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  return read(file);
}

function create(file: string): void {
  const temporary = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  const fd = openSync(temporary, 'wx', 0o600);
  try {
    writeSync(fd, `${randomBytes(32).toString('base64')}\n`);
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
    throw new DataDirError(`${file} can be read by other users (mode ${(stat.mode & 0o777).toString(8)}); it must be owner-only: chmod 600 ${file}`);
  }
  const key = Buffer.from(readFileSync(file, 'utf8').trim(), 'base64');
  if (key.length !== 32) throw new DataDirError(`${file} does not hold a 32-byte key in base64`);
  return key;
}

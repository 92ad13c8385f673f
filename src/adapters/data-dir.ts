import { chmodSync, mkdirSync, statSync, type Stats } from 'node:fs';

/**
 * A data directory (or a file in it) that wallet-ops will not use: another user's, or shared. Its message is
 * the whole explanation and the fix, so a start prints it alone, without a stack trace.
 */
export class DataDirError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DataDirError';
  }
}

const ourUid = (): number | undefined => process.getuid?.();

/** Refuses a file or directory that another user owns: they could read or replace what wallet-ops keeps there. */
export function assertOwnedByUs(path: string, stat: Stats, what: string): void {
  const uid = ourUid();
  // No uids on Windows: there the directory's ACL is the operator's to set.
  if (uid === undefined || stat.uid === uid) return;
  throw new DataDirError(
    `${what} ${path} belongs to uid ${stat.uid}, not to uid ${uid} that wallet-ops runs as, so whoever owns it ` +
      `could read or replace what wallet-ops keeps there; chown -R ${uid} ${path} (or run wallet-ops as its ` +
      'owner), or choose another DATA_DIR',
  );
}

/**
 * The data directory, owner-only: created 0700 (with any missing parents), and an existing one of ours
 * narrowed to 0700 whatever it was (a directory others may enter lets them list, and with write, swap its
 * files). One of another user is refused, and so is a shared directory (sticky bit, like /tmp), which
 * narrowing would take away from everyone else. `name` is what messages call it (the secrets key's directory too).
 */
export function ownerOnlyDataDir(dir: string, name = 'DATA_DIR'): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const stat = statSync(dir);
  if (!stat.isDirectory()) throw new DataDirError(`${name} ${dir} is not a directory`);
  assertOwnedByUs(dir, stat, name);
  if ((stat.mode & 0o1000) !== 0)
    throw new DataDirError(
      `${name} ${dir} is a shared directory (sticky bit, like /tmp): give wallet-ops a directory of its own, ` +
        `such as ${dir.replace(/\/+$/, '')}/wallet-ops`,
    );
  if ((stat.mode & 0o077) !== 0) chmodSync(dir, 0o700);
}

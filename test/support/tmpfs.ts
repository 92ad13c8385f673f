import { execFileSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmdirSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * A small tmpfs to fill up: a disk-full test. Mounting needs root; where it is impossible, `mountPoint` is
 * undefined and `skipReason` says why (the tests skip with it).
 */
export function mountTmpfs(
  prefix: string,
  size: string,
): { mountPoint: string | undefined; skipReason: string; unmount(): void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', dir], { stdio: 'pipe' });
  } catch (error) {
    rmdirSync(dir);
    return {
      mountPoint: undefined,
      skipReason: `cannot mount a tmpfs here (${String((error as Error).message).split('\n')[0]})`,
      unmount() {},
    };
  }
  return {
    mountPoint: dir,
    skipReason: '',
    unmount() {
      execFileSync('umount', ['-l', dir]);
      rmdirSync(dir);
    },
  };
}

/** Fills the file system with a filler file until not one more byte fits; delete the file to free the space. */
export function fillDisk(path: string): void {
  const fd = openSync(path, 'w');
  try {
    for (const size of [1 << 20, 1 << 16, 1 << 12, 1]) {
      const chunk = Buffer.alloc(size);
      try {
        for (;;) writeSync(fd, chunk);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOSPC') throw error;
      }
    }
  } finally {
    closeSync(fd);
  }
}

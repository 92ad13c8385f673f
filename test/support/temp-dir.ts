import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * A fresh directory under the OS temp dir; `cleanup` removes it, and the embedded secrets key's directory
 * beside it (`<path>.secrets`, where a system whose DATA_DIR is this directory keeps its key).
 */
export function tempDir(prefix = 'wallet-ops-'): { path: string; cleanup: () => void } {
  const path = mkdtempSync(join(tmpdir(), prefix));
  return {
    path,
    cleanup: () => {
      rmSync(path, { recursive: true, force: true });
      rmSync(`${path}.secrets`, { recursive: true, force: true });
    },
  };
}

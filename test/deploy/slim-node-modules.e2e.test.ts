/**
 * scripts/slim-node-modules.js, which the Dockerfile runs on the image's production dependencies: it leaves
 * better-sqlite3 with the one prebuilt addon this platform loads, and better-sqlite3 still works without the
 * rest. Run on a copy of the package, never on the checkout's node_modules.
 */
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

describe("slimming the image's node_modules", () => {
  const dir = mkdtempSync(join(tmpdir(), 'wallet-ops-slim-'));
  const modules = join(dir, 'node_modules');
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("given better-sqlite3 with its prebuilt addons for every platform, when slimmed, then only this platform's remains, without the sources, and a database still opens", () => {
    cpSync(join(ROOT, 'node_modules/better-sqlite3'), join(modules, 'better-sqlite3'), { recursive: true });
    expect(readdirSync(join(modules, 'better-sqlite3/prebuilds')).length).toBeGreaterThan(1);

    const slim = spawnSync(process.execPath, [join(ROOT, 'scripts/slim-node-modules.js'), modules], {
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(slim.status, slim.stderr).toBe(0);
    expect(readdirSync(join(modules, 'better-sqlite3/prebuilds'))).toEqual([
      `${process.platform}-${process.arch}.node`,
    ]);
    expect(existsSync(join(modules, 'better-sqlite3/deps'))).toBe(false);
    expect(existsSync(join(modules, 'better-sqlite3/src'))).toBe(false);

    // A fresh process, as the image's would be: the slimmed copy is the only better-sqlite3 it can find.
    const open = spawnSync(
      process.execPath,
      [
        '-e',
        "const D = require('better-sqlite3'); console.log(require.resolve('better-sqlite3')); console.log(new D(':memory:').prepare('select 1 + 1 as two').get().two)",
      ],
      { cwd: dir, encoding: 'utf8', timeout: 30_000 },
    );
    expect(open.status, open.stderr).toBe(0);
    expect(open.stdout).toBe(`${join(modules, 'better-sqlite3/lib/index.js')}\n2\n`);
  });
});

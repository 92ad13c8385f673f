#!/usr/bin/env node
// `node scripts/slim-node-modules.js [NODE_MODULES]`, run by the Dockerfile on the production dependencies:
// removes what only a build from source would read. better-sqlite3 ships its native addon prebuilt for eight
// platforms plus the SQLite sources (about 25 MB); the image keeps only the addon that better-sqlite3 itself
// picks on this platform (its own lib/binding.js decides), then checks that it still opens a database.
import { readdirSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';

const modules = resolve(process.argv[2] ?? 'node_modules');
const dir = join(modules, 'better-sqlite3');
const require = createRequire(join(modules, 'noop.js'));
// lib/binding.js is not among the package's exports: required by path.
const keep = require(join(dir, 'lib/binding.js')).getPrebuildPath();
if (!keep)
  throw new Error(`better-sqlite3 has no prebuilt addon for ${process.platform}-${process.arch}: nothing removed`);
const removed = [];
for (const file of readdirSync(join(dir, 'prebuilds'))) {
  if (join(dir, 'prebuilds', file) === keep) continue;
  rmSync(join(dir, 'prebuilds', file));
  removed.push(`prebuilds/${file}`);
}
for (const sources of ['deps', 'src']) {
  rmSync(join(dir, sources), { recursive: true, force: true });
  removed.push(`${sources}/`);
}
const Database = require('better-sqlite3');
new Database(':memory:').close();
process.stdout.write(`better-sqlite3: kept ${keep.slice(dir.length + 1)}; removed ${removed.join(', ')}\n`);

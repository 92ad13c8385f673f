#!/usr/bin/env node
// `npm run build [-- OUT_DIR]`: compiles src/ to dist/ (or OUT_DIR) with tsconfig.build.json, then copies the
// files the compiled code reads at run time and tsc does not emit: every file under src/ that is not
// TypeScript (the console's stylesheet and script), to the same place relative to the compiled modules,
// since they are found next to them (new URL('./assets/…', import.meta.url)).
import { spawnSync } from 'node:child_process';
import { cpSync, readdirSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const src = join(root, 'src');
const out = resolve(process.argv[2] ?? join(root, 'dist'));

// A fresh output: a module deleted from src/ must not live on in dist/.
rmSync(out, { recursive: true, force: true });
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
const compiled = spawnSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json'), '--outDir', out], {
  stdio: 'inherit',
});
if (compiled.status !== 0) process.exit(compiled.status ?? 1);

let copied = 0;
for (const entry of readdirSync(src, { recursive: true, withFileTypes: true })) {
  if (!entry.isFile() || entry.name.endsWith('.ts')) continue;
  const from = join(entry.parentPath, entry.name);
  cpSync(from, join(out, relative(src, from)));
  copied += 1;
}
process.stdout.write(
  `compiled src/ to ${relative(process.cwd(), out) || '.'} (and copied ${copied} asset file${copied === 1 ? '' : 's'})\n`,
);

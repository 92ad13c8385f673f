#!/usr/bin/env node
// Builds the package: a fresh dist/ from src/ with the TypeScript of the repository this package lives in (its
// compiler is not a dependency of the package: consumers install the built JavaScript and its declarations).
// The sources import each other with .ts extensions, as the repository runs them: tsc rewrites those to .js in the
// JavaScript (rewriteRelativeImportExtensions) but not in the declarations, which are rewritten here.
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = fileURLToPath(new URL('.', import.meta.url));
const dist = join(here, 'dist');
rmSync(dist, { recursive: true, force: true });
// TypeScript 7's native compiler (the repository's `typescript-native`): a fifth of the CPU of TypeScript 5's.
const tsc = fileURLToPath(
  new URL('./bin/tsc', pathToFileURL(createRequire(import.meta.url).resolve('typescript-native/package.json'))),
);
const compiled = spawnSync(process.execPath, [tsc, '-p', here, '--singleThreaded'], { stdio: 'inherit' });
if (compiled.status !== 0) process.exit(compiled.status ?? 1);

const relativeTs = /(from\s+|import\()(['"])(\.{1,2}\/[^'"]+)\.ts\2/g;
for (const name of readdirSync(dist)) {
  if (!name.endsWith('.d.ts')) continue;
  const file = join(dist, name);
  writeFileSync(file, readFileSync(file, 'utf8').replace(relativeTs, '$1$2$3.js$2'));
}

#!/usr/bin/env node
// The operator CLI. Where the TypeScript sources are (a checkout: development, `npx wallet-ops`, the tests) it
// runs them as they are: Node erases their types itself (the sources use only syntax it can erase: tsconfig.json's
// erasableSyntaxOnly), so there is no loader to start, no build step to forget and never a stale build. Where they
// are not (the image, which ships only the compiled dist/ and production dependencies) it runs the compiled
// JavaScript. The image's default command names dist/cli/main.js itself.
import { existsSync } from 'node:fs';
import { enableCompileCache } from 'node:module';
import { unsupportedNode } from './node-version.js';

const unsupported = unsupportedNode();
if (unsupported) {
  process.stderr.write(`${unsupported}\n`);
  process.exit(1);
}
const sources = new URL('../src/cli/main.ts', import.meta.url);
if (existsSync(sources)) {
  // Erasing the types of the ~120 modules a command loads costs more than the command itself: Node's compile
  // cache (NODE_COMPILE_CACHE, else a directory under the system's temporary one) keeps the erased and compiled
  // code, keyed by each file's content, so only a changed file is erased again. It halves a CLI start's CPU.
  enableCompileCache();
  await import(sources.href);
} else {
  await import(new URL('../dist/cli/main.js', import.meta.url).href);
}

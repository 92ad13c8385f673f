#!/usr/bin/env node
// The operator CLI. Where the TypeScript sources are (a checkout: development, `npx wallet-ops`, the tests) it
// runs them through tsx, so there is no build step to forget and never a stale build; where they are not (the
// image, which ships only the compiled dist/ and production dependencies, without tsx) it runs the compiled
// JavaScript. The image's default command names dist/cli/main.js itself.
import { existsSync } from 'node:fs';
import { unsupportedNode } from './node-version.js';

const unsupported = unsupportedNode();
if (unsupported) {
  process.stderr.write(`${unsupported}\n`);
  process.exit(1);
}
const sources = new URL('../src/cli/main.ts', import.meta.url);
if (existsSync(sources)) {
  const { register } = await import('tsx/esm/api');
  register();
  await import(sources.href);
} else {
  await import(new URL('../dist/cli/main.js', import.meta.url).href);
}

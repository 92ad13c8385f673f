#!/usr/bin/env node
// `npm test` runs this first (pretest): it prints the runtime the tests run on, and stops the run at once,
// with the remedy, when that runtime is not one wallet-ops supports (a `node` other than the project's first on
// PATH) or when better-sqlite3's addon does not load on it, rather than let every test that opens a store fail.
import { createRequire } from 'node:module';
import { unsupportedNode } from '../bin/node-version.js';

process.stdout.write(`node ${process.version} (${process.execPath}, Node-API ${process.versions.napi})\n`);
const fail = (message) => {
  process.stderr.write(`${message}\n`);
  process.exit(1);
};
const unsupported = unsupportedNode();
if (unsupported) fail(unsupported);
try {
  const Database = createRequire(import.meta.url)('better-sqlite3');
  new Database(':memory:').close();
} catch (error) {
  fail(
    `better-sqlite3 does not load on ${process.version} ${process.platform}-${process.arch}: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}\n` +
      'Its prebuilt addons cover linux, darwin and win32 on x64 and arm64; docs/operations.md, "Runtime", says what to do elsewhere.',
  );
}

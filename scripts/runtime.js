#!/usr/bin/env node
// `npm test` runs this first (pretest): it prints the runtime the tests run on, and stops the run at once,
// with the remedy, when that runtime is older than package.json's engines (a `node` other than the project's
// on PATH) or when better-sqlite3 was built for another Node's ABI (which would otherwise fail every test that
// opens a store, with a dlopen error).
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
const wanted = /^>=\s*(\d+)(?:\.(\d+))?/.exec(pkg.engines?.node ?? '');
const [major, minor] = process.versions.node.split('.').map(Number);
process.stdout.write(`node ${process.version} (ABI ${process.versions.modules}, ${process.execPath})\n`);

const fail = (message) => {
  process.stderr.write(`${message}\n`);
  process.exit(1);
};
if (wanted && (major < Number(wanted[1]) || (major === Number(wanted[1]) && minor < Number(wanted[2] ?? 0)))) {
  fail(
    `wallet-ops needs Node ${pkg.engines.node} (package.json engines), not ${process.version}. Run it through npm (npm test, npm start, ` +
      'npx wallet-ops), which puts node_modules/.bin first on PATH, where the `node` devDependency installs Node 24; or install Node 24.',
  );
}
try {
  const Database = createRequire(import.meta.url)('better-sqlite3');
  new Database(':memory:').close();
} catch (error) {
  fail(
    `better-sqlite3 does not load on ${process.version}: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}\n` +
      'It was built for another Node. Rebuild it for this one from the project root: `npm rebuild better-sqlite3` ' +
      '(docs/operations.md, "Runtime").',
  );
}

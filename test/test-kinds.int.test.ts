import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * A test file's name says its kind, and vitest.config.ts picks its pool by that name (the rule is written there):
 * checked here on what each file imports and calls, and on the local modules it imports (a suite, a helper of its
 * folder), so that a file that starts a process is not named pure and run on the threads meant for in-memory tests.
 */
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const TEST = join(ROOT, 'test');

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [path];
  });
}

const SPECIFIER = /^\s*(?:import|export)\s[^'";]*?from\s+'([^']+)'|\bimport\(\s*'([^']+)'\s*\)/gm;

/** The file's text and that of the local modules it imports, test/support's excepted (their uses are named below). */
function reach(file: string, seen = new Set<string>()): string {
  if (seen.has(file)) return '';
  seen.add(file);
  const text = readFileSync(file, 'utf8');
  let reached = text;
  for (const match of text.matchAll(SPECIFIER)) {
    const specifier = match[1] ?? match[2]!;
    if (!specifier.startsWith('.')) continue;
    const target = resolve(dirname(file), specifier);
    if (target.startsWith(TEST) && !target.startsWith(join(TEST, 'support')) && target.endsWith('.ts'))
      reached += `\n${reach(target, seen)}`;
  }
  return reached;
}

/** Something that starts a system of the service, a process or a browser: an end-to-end test's mark. */
const STARTS = [
  /from 'node:child_process'/,
  /from 'playwright-core'/,
  /support\/(processes|tmpfs)\.ts'/,
  /\b(startTestSystem|startPartsSystem|buildWalletOps|runCliProcess|runCliProcessJson)\(/,
  /\b(startOwnPostgresServer|startInstalledPostgresServer)\(/,
];
/** Real I/O in the test's own process: a store, a file, a socket, a server. */
const IO = [
  /from 'node:(fs|fs\/promises|http|https|net|worker_threads)'/,
  /from '(better-sqlite3|pg|mongodb)'/,
  /src\/adapters\/(sqlite\/sqlite-|postgres\/|evm\/evm-ledger|ledger\/embedded-ledger|open-stores)/,
  /src\/adapters\/(mongodb\/mongodb-read-store|kurrentdb\/kurrentdb-event-store)/,
  /support\/(temp-dir|postgres-server|test-stores|webhook-receiver|tcp|tcp-proxy|corrupt-sqlite)\.ts'/,
  /contracts\/(dev-chain|compile)\.ts'/,
  /\.listen\(/,
];

const kindOf = (file: string) =>
  /\.e2e\.test\.ts$/.test(file) ? 'e2e' : /\.int\.test\.ts$/.test(file) ? 'int' : 'pure';
// This file is left out: its patterns would find themselves.
const files = filesUnder(TEST)
  .filter((file) => file.endsWith('.test.ts') && file !== fileURLToPath(import.meta.url))
  .map((file) => ({ name: relative(ROOT, file), kind: kindOf(file), text: reach(file) }));
const marks = (text: string, patterns: RegExp[]) =>
  patterns.filter((pattern) => pattern.test(text)).map((pattern) => pattern.source);

describe('test files named by kind', () => {
  it('given a pure file (*.test.ts), then it neither starts anything nor does I/O', () => {
    const pure = files.filter((file) => file.kind === 'pure');
    expect(pure.length).toBeGreaterThan(40);
    expect(pure.flatMap(({ name, text }) => marks(text, [...STARTS, ...IO]).map((mark) => `${name}: ${mark}`))).toEqual(
      [],
    );
  });

  it('given an integration file (*.int.test.ts), then it does I/O and starts no system, process or browser', () => {
    const int = files.filter((file) => file.kind === 'int');
    expect(int.length).toBeGreaterThan(40);
    expect(int.flatMap(({ name, text }) => marks(text, STARTS).map((mark) => `${name}: ${mark}`))).toEqual([]);
    expect(int.filter(({ text }) => marks(text, IO).length === 0).map(({ name }) => name)).toEqual([]);
  });

  it('given an end-to-end file (*.e2e.test.ts), then it starts a system, a process or a browser', () => {
    const e2e = files.filter((file) => file.kind === 'e2e');
    expect(e2e.length).toBeGreaterThan(80);
    expect(e2e.filter(({ text }) => marks(text, STARTS).length === 0).map(({ name }) => name)).toEqual([]);
  });
});

#!/usr/bin/env node
// `npm test`: the typecheck (`npm run typecheck`) and the tests (`vitest run`, with this script's arguments) at once.
// On two cores the suite leaves one idle while its files wait on processes, leases and timers: the typecheck takes
// that time instead of 30 s of its own before the first test. Its report is printed after the tests', and the run
// fails when either fails.
import { spawn } from 'node:child_process';
import { setPriority } from 'node:os';
import { fileURLToPath } from 'node:url';

const bin = (name) => fileURLToPath(new URL(`../node_modules/.bin/${name}`, import.meta.url));

// TypeScript 7's native compiler (the `typescript-native` alias): the same checks as TypeScript 5's tsc for about a
// fifth of its CPU (12 s against 60 s beside the tests); one thread, since every core it takes is a test's.
const nativeTsc = fileURLToPath(new URL('../node_modules/typescript-native/bin/tsc', import.meta.url));
const typecheck = new Promise((resolve) => {
  const child = spawn(process.execPath, [nativeTsc, '--noEmit', '--singleThreaded'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  // Below the tests: it takes what they leave idle rather than slow the files that run while it checks.
  if (child.pid !== undefined) setPriority(child.pid, 10);
  let output = '';
  child.stdout.on('data', (chunk) => (output += chunk));
  child.stderr.on('data', (chunk) => (output += chunk));
  child.on('error', (error) => resolve({ code: 1, output: `tsc did not start: ${error.message}\n` }));
  child.on('exit', (code, signal) =>
    resolve({ code: code ?? 1, output: signal ? `${output}tsc stopped by ${signal}\n` : output }),
  );
});
const tests = new Promise((resolve) => {
  const child = spawn(bin('vitest'), ['run', ...process.argv.slice(2)], { stdio: 'inherit' });
  child.on('error', (error) => {
    process.stderr.write(`vitest did not start: ${error.message}\n`);
    resolve(1);
  });
  child.on('exit', (code) => resolve(code ?? 1));
});

const testsCode = await tests;
const checked = await typecheck;
process.stdout.write(
  checked.code === 0
    ? '\ntypecheck (TypeScript 7, tsc --noEmit): passed\n'
    : `\ntypecheck (TypeScript 7, tsc --noEmit): FAILED\n${checked.output}`,
);
process.exit(testsCode !== 0 ? testsCode : checked.code);

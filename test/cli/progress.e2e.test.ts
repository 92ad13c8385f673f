/**
 * Long CLI work says how far it is wherever it runs. Off a terminal (kubectl exec without -t, CI, nohup, a caller
 * that runs the CLI in its own process with its own stderr, as these tests do) plain lines on stderr, at most every
 * PROGRESS_INTERVAL_MS (0 here: a line at each step of these small runs); on a terminal a bar that ends at 100%.
 * stdout stays the one JSON value.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, runCliJson, runCliProcess } from '../support/cli.ts';
import { knownLedgerEnv } from '../support/test-ledger.ts';
import { knownStoreEnv } from '../support/test-stores.ts';
import { tempDir } from '../support/temp-dir.ts';

const BIN = fileURLToPath(new URL('../../bin/wallet-ops.js', import.meta.url));
const LINE = (label: string, unit: string) =>
  new RegExp(`^${label}: ${unit} \\d+/\\d+ \\(\\d+%\\), (\\d+ s left|time left unknown|done)$`);

describe('progress of long CLI work', () => {
  const dir = tempDir();
  const dataDir = join(dir.path, 'data');
  const everyStep = { PROGRESS_INTERVAL_MS: '0' };
  const lines = (stderr: string) => stderr.split('\n').filter(Boolean);

  beforeAll(async () => {
    await runCliJson(['demo', '--data-dir', dataDir]);
  }, 60_000);
  afterAll(() => dir.cleanup());

  it('when projections rebuild runs off a terminal, then it prints plain progress lines on stderr that end at 100%, and one JSON value on stdout', async () => {
    const result = await runCli(['projections', 'rebuild', '--data-dir', dataDir, '--json'], everyStep);

    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual(
      expect.arrayContaining([expect.objectContaining({ projection: expect.any(String) })]),
    );
    const printed = lines(result.stderr);
    expect(printed.length).toBeGreaterThanOrEqual(2);
    for (const line of printed) expect(line).toMatch(LINE('rebuild all read models', 'position'));
    expect(printed.at(-1)).toMatch(/ \(100%\), done$/);
  });

  it('when audit verify and events export and import run off a terminal, then each prints its progress lines', async () => {
    const file = join(dir.path, 'export.jsonl');
    const verify = await runCli(['audit', 'verify', '--data-dir', dataDir, '--json'], everyStep);
    const exported = await runCli(['events', 'export', '--out', file, '--data-dir', dataDir, '--json'], everyStep);
    const imported = await runCli(
      ['events', 'import', '--in', file, '--data-dir', join(dir.path, 'imported'), '--json'],
      everyStep,
    );

    for (const [result, label, unit] of [
      [verify, 'audit verify', 'position'],
      [exported, 'events export', 'position'],
      [imported, 'events import', 'events'],
    ] as const) {
      expect(result.code, result.stderr).toBe(0);
      expect(lines(result.stderr).length).toBeGreaterThanOrEqual(2);
      for (const line of lines(result.stderr)) expect(line).toMatch(LINE(label, unit));
      expect(lines(result.stderr).at(-1)).toMatch(/ \(100%\), done$/);
    }
  });

  it('when a short run is off a terminal with the default interval, then it prints no progress at all', async () => {
    const result = await runCliProcess(['projections', 'rebuild', '--data-dir', dataDir, '--json']);

    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toBe('');
  });

  it('when projections rebuild runs on a terminal, then its bar ends at 100%', async () => {
    // script(1) gives the command a pseudo-terminal; its output is the terminal's.
    const command = [process.execPath, BIN, 'projections', 'rebuild', '--data-dir', dataDir]
      .map((arg) => `'${arg}'`)
      .join(' ');
    const child = spawn('script', ['-qec', command, '/dev/null'], {
      env: { ...process.env, ...knownLedgerEnv(dataDir), ...knownStoreEnv(dataDir), LOG_LEVEL: 'silent' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('close', resolve));

    expect(code, output).toBe(0);
    const bars = output
      .split(/[\r\n]/)
      .filter((line) => line.includes('rebuild all read models') && line.includes('%'));
    expect(bars.at(-1)).toMatch(/\] 100% \| position (\d+)\/\1 \| 0s left/);
  });
});

import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/program.ts';
import { tempDir } from '../support/temp-dir.ts';

/** The CLI in this process with an IO of the test's own (src/cli/io.ts): what it printed, and its exit code. */
async function inProcess(
  args: string[],
  env: Record<string, string | undefined>,
): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await runCli(args, {
    stdout: (text) => void (stdout += text),
    stderr: (text) => void (stderr += text),
    env,
  });
  return { code, stdout, stderr };
}

describe("the operator CLI in another program's process", () => {
  const dir = tempDir('cli-io-');
  afterAll(() => dir.cleanup());
  const env = (dataDir: string) => ({
    DATA_DIR: dataDir,
    LOG_LEVEL: 'silent',
    PASSWORD_HASH_COST: process.env.PASSWORD_HASH_COST,
    NODE_ENV: process.env.NODE_ENV,
  });

  it('when a command runs with an injected IO, then its configuration is the injected environment and its result goes to the injected stdout', async () => {
    const dataDir = join(dir.path, 'from-env');
    expect(process.env.DATA_DIR).not.toBe(dataDir);

    const result = await inProcess(
      ['party', 'add-individual', '--phone', '+2348123456781', '--name', 'Ada', '--json'],
      env(dataDir),
    );

    expect(result).toEqual({ code: 0, stdout: '{"phone":"+2348123456781"}\n', stderr: '' });
    expect(existsSync(join(dataDir, 'events.sqlite'))).toBe(true);
  });

  it('when two commands run at once, then each prints to its own IO', async () => {
    const [first, second] = await Promise.all([
      inProcess(
        ['party', 'add-distributor', '--name', 'One', '--short-code', '101', '--json'],
        env(join(dir.path, 'one')),
      ),
      inProcess(
        ['party', 'add-distributor', '--name', 'Two', '--short-code', '101', '--json'],
        env(join(dir.path, 'two')),
      ),
    ]);
    const distributorID = { distributorID: expect.any(String) };
    expect([first.code, JSON.parse(first.stdout), first.stderr]).toEqual([0, distributorID, '']);
    expect([second.code, JSON.parse(second.stdout), second.stderr]).toEqual([0, distributorID, '']);
    expect(first.stdout).not.toBe(second.stdout);
  });

  it('when a command is refused, then it returns 1 with one line on the injected stderr and nothing on stdout', async () => {
    const dataDir = join(dir.path, 'refused');
    expect(
      (await inProcess(['party', 'add-merchant', '--name', 'Shop', '--short-code', '7', '--json'], env(dataDir))).code,
    ).toBe(0);

    const again = await inProcess(
      ['party', 'add-merchant', '--name', 'Shop again', '--short-code', '7', '--json'],
      env(dataDir),
    );

    expect(again.code).toBe(1);
    expect(again.stdout).toBe('');
    expect(again.stderr).toMatch(/^refused \(SHORT_CODE_TAKEN\): short code 7 is already used by another merchant\n$/);
  });

  it('when the arguments are wrong, then it returns 2 with the error and the usage help on the injected stderr', async () => {
    const result = await inProcess(['party', 'add-distributor', '--name', 'x'], env(join(dir.path, 'usage')));

    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(/required option '--short-code <code>' not specified/);
    expect(result.stderr).toMatch(/Usage: wallet-ops party add-distributor/);
  });

  it('when help is asked for, then it goes to the injected stdout at the width of a pipe, without colours', async () => {
    const result = await inProcess(['--help'], {});

    expect(result.code).toBe(0);
    expect(result.stderr).toBe('');
    expect(result.stdout).toMatch(/^Usage: wallet-ops/);
    expect(result.stdout).not.toMatch(/\x1b\[/);
    expect(Math.max(...result.stdout.split('\n').map((line) => line.length))).toBeLessThanOrEqual(80);
  });

  it('when serve is asked for, then it is refused with exit 2: a server runs only as its own process', async () => {
    const result = await inProcess(['serve', '--data-dir', join(dir.path, 'serve')], {});

    expect(result.code).toBe(2);
    expect(result.stderr).toBe(
      "error: serve runs only as its own process (the wallet-ops binary), not in another program's process\n",
    );
    expect(existsSync(join(dir.path, 'serve'))).toBe(false);
  });
});

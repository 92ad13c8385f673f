import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { runCli as runCliInProcess } from '../../src/cli/program.ts';
import { knownLedgerEnv } from './test-ledger.ts';
import { knownStoreEnv } from './test-stores.ts';

const BIN = fileURLToPath(new URL('../../bin/wallet-ops.js', import.meta.url));

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * The environment a CLI run sees: this process's, the test ledger of the data directory it names (as the
 * system's own processes are on it), the test's own, and silent logs.
 */
function cliEnv(args: string[], env: Record<string, string>): Record<string, string | undefined> {
  const dataDir = args[args.indexOf('--data-dir') + 1];
  const ledgerEnv =
    args.includes('--data-dir') && dataDir ? { ...knownLedgerEnv(dataDir), ...knownStoreEnv(dataDir) } : {};
  return { ...process.env, ...ledgerEnv, ...env, LOG_LEVEL: 'silent' };
}

/**
 * Runs the `wallet-ops` CLI in this process, with its output captured and its own environment: what the
 * binary does, without starting a node process each time (src/cli/io.ts). Tests that need a process of its
 * own (processes racing each other, the binary's exit codes, a crash) use runCliProcess.
 */
export async function runCli(args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  let stdout = '';
  let stderr = '';
  const code = await runCliInProcess(args, {
    stdout: (text) => void (stdout += text),
    stderr: (text) => void (stderr += text),
    env: cliEnv(args, env),
  });
  return { code, stdout, stderr };
}

/** Runs the real `wallet-ops` bin in its own process, as an operator would. */
export function runCliProcess(args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { env: cliEnv(args, env) }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

/** Runs a `--json` command that must succeed and returns its one JSON value. */
export async function runCliJson<T = Record<string, unknown>>(
  args: string[],
  env?: Record<string, string>,
): Promise<T> {
  return parseJson(args, await runCli([...args, '--json'], env));
}

/** runCliJson in a process of its own. */
export async function runCliProcessJson<T = Record<string, unknown>>(
  args: string[],
  env?: Record<string, string>,
): Promise<T> {
  return parseJson(args, await runCliProcess([...args, '--json'], env));
}

function parseJson<T>(args: string[], result: CliResult): T {
  if (result.code !== 0) throw new Error(`wallet-ops ${args.join(' ')} exited ${result.code}: ${result.stderr}`);
  return JSON.parse(result.stdout) as T;
}

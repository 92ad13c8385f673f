import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** The operator CLI, run as operators run it: `node bin/wallet-ops.js ... --json --data-dir DIR`. */
export const BIN = fileURLToPath(new URL('../../bin/wallet-ops.js', import.meta.url));

export interface CliResult {
  code: number | null;
  /** The one JSON value `--json` printed, if any. */
  json: any;
  stderr: string;
  ms: number;
}

/** A CLI run that did not succeed: exit 1 is a refusal ("refused (CODE): …") or a failure ("failed: …"). */
export class CliError extends Error {
  readonly args: string[];
  readonly result: CliResult;
  constructor(args: string[], result: CliResult) {
    super(`wallet-ops ${args.join(' ')} exited ${result.code}: ${result.stderr.trim().split('\n').at(-1) ?? ''}`);
    this.args = args;
    this.result = result;
    this.name = 'CliError';
  }

  /** A domain refusal (the command was understood and said no), not a failure of the stores. */
  get refused(): boolean {
    return /^refused \(/m.test(this.result.stderr);
  }
}

/** Runs one CLI command with `--json` on the data directory; no fault injection (operators' own runs). */
export function runCli(dataDir: string, args: string[], timeoutMs = 60_000): Promise<CliResult> {
  const started = performance.now();
  return new Promise((resolve) => {
    const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('FAULT_')));
    const child = spawn(process.execPath, [BIN, ...args, '--json', '--data-dir', dataDir], {
      env: { ...env, LOG_LEVEL: 'silent' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('close', (code) => {
      clearTimeout(timer);
      let json: unknown;
      try {
        // Also on exit 1: `audit verify` prints its report, then fails.
        json = stdout.trim() === '' ? undefined : JSON.parse(stdout);
      } catch {
        stderr += `\n(stdout was not one JSON value: ${stdout.slice(0, 200)})`;
      }
      resolve({ code, json, stderr, ms: performance.now() - started });
    });
  });
}

/** Runs a CLI command that must succeed, and returns its JSON. */
export async function cli<T = any>(dataDir: string, args: string[]): Promise<T> {
  const result = await runCli(dataDir, args);
  if (result.code !== 0 || result.json === undefined) throw new CliError(args, result);
  return result.json as T;
}

export { inParallel } from '../support/in-parallel.ts';

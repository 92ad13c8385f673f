import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { knownLedgerEnv } from './test-ledger.ts';

const BIN = fileURLToPath(new URL('../../bin/wallet-ops.js', import.meta.url));

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the real `wallet-ops` bin in its own process, as an operator would. */
export function runCli(args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  // On the test ledger of the data directory it names, as the system's own processes are.
  const dataDir = args[args.indexOf('--data-dir') + 1];
  const ledgerEnv = args.includes('--data-dir') && dataDir ? knownLedgerEnv(dataDir) : {};
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { env: { ...process.env, ...ledgerEnv, ...env, LOG_LEVEL: 'silent' } }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

/** Runs a `--json` command that must succeed and returns its one JSON value. */
export async function runCliJson<T = Record<string, unknown>>(args: string[], env?: Record<string, string>): Promise<T> {
  const result = await runCli([...args, '--json'], env);
  if (result.code !== 0) throw new Error(`wallet-ops ${args.join(' ')} exited ${result.code}: ${result.stderr}`);
  return JSON.parse(result.stdout) as T;
}

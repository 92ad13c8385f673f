/**
 * A server that cannot listen stops: with its port taken, `wallet-ops serve` (and `npm start`'s src/main.ts),
 * each in its own process, exit 1 within seconds with one line naming the address and the reason, close
 * what they opened, and never log "wallet-ops started".
 */
import { spawn } from 'node:child_process';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../support/temp-dir.ts';

const BIN = fileURLToPath(new URL('../../bin/wallet-ops.js', import.meta.url));
const MAIN = fileURLToPath(new URL('../../src/main.ts', import.meta.url));
const ROOT = fileURLToPath(new URL('../../', import.meta.url));

interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  ms: number;
}

/** Runs a process to its end, killing it if it is still running after `limitMs` (it then has no exit code). */
function run(args: string[], env: Record<string, string>, limitMs: number): Promise<Exit> {
  const started = Date.now();
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
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr, ms: Date.now() - started });
    });
  });
}

describe('listening fails: the process stops with a clear message', () => {
  const dir = tempDir('listen-');
  let occupier: Server;
  let port: number;

  beforeAll(async () => {
    occupier = createServer();
    await new Promise<void>((resolve, reject) => {
      occupier.once('error', reject);
      occupier.listen(0, '127.0.0.1', () => resolve());
    });
    port = (occupier.address() as AddressInfo).port;
  });
  afterAll(async () => {
    await new Promise((resolve) => occupier.close(resolve));
    dir.cleanup();
  });

  const entries = [
    { name: 'wallet-ops serve', args: () => [BIN, 'serve', '--data-dir', `${dir.path}/serve`], prefix: 'failed: ' },
    { name: 'src/main.ts (npm start)', args: () => [MAIN], env: () => ({ DATA_DIR: `${dir.path}/main` }), prefix: '' },
  ];

  it.each(entries)(
    'given the port is taken, when $name starts, then it exits 1 within seconds, saying so on one line, and never says it started',
    async (entry) => {
      const exit = await run(
        entry.args(),
        { PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'info', ...(entry.env?.() ?? {}) },
        20_000,
      );

      expect(exit.signal, `still running after 20 s\nstdout: ${exit.stdout}\nstderr: ${exit.stderr}`).toBeNull();
      expect(exit.code, exit.stderr).toBe(1);
      expect(exit.ms).toBeLessThan(15_000);
      expect(exit.stderr).toBe(
        `${entry.prefix}cannot listen on 127.0.0.1:${port}: address already in use (EADDRINUSE)\n`,
      );
      expect(exit.stdout + exit.stderr).not.toContain('wallet-ops started');
    },
  );
});

import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { knownLedgerEnv } from './test-ledger.ts';
import { knownStoreEnv } from './test-stores.ts';

/**
 * wallet-ops in child processes (`wallet-ops serve PARTS`), for the tests where a process matters: crashes,
 * competing executors, a database locked by another process.
 */
const BIN = fileURLToPath(new URL('../../bin/wallet-ops.js', import.meta.url));

export interface WalletOpsProcess {
  child: ChildProcess;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  output: () => string;
}

const children = new Set<WalletOpsProcess>();

export function spawnWalletOps(dataDir: string, parts: string[], env: Record<string, string>): WalletOpsProcess {
  const child = spawn(process.execPath, [BIN, 'serve', ...parts, '--data-dir', dataDir], {
    env: {
      ...process.env,
      LOG_LEVEL: process.env.CHILD_LOG_LEVEL ?? 'silent',
      PORT: '0',
      API_KEY_RATE_LIMIT: '0',
      AUTH_FAILURE_LIMIT: '0',
      ...knownLedgerEnv(dataDir),
      ...knownStoreEnv(dataDir),
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal }));
  });
  const handle = { child, exited, output: () => output };
  children.add(handle);
  void exited.then(() => children.delete(handle));
  return handle;
}

export const running = (p: WalletOpsProcess) => p.child.exitCode === null && p.child.signalCode === null;

export async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** A graceful stop (SIGTERM); returns how the process exited. */
export async function stopProcess(
  p: WalletOpsProcess,
): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  if (running(p)) p.child.kill('SIGTERM');
  return within(p.exited, 15_000, 'wallet-ops shutdown');
}

/** Whatever happened in a test file: no child outlives it. */
export async function killAllChildren(): Promise<void> {
  const left = [...children].filter(running);
  for (const p of left) p.child.kill('SIGKILL');
  await Promise.all(left.map((p) => p.exited));
}

/** A port that was free a moment ago, for a child that must listen on a known port. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

const PROJECT_ROOT = fileURLToPath(new URL('../..', import.meta.url));

/**
 * Another process that takes a database's write lock (BEGIN EXCLUSIVE) when told ("lock" on stdin) and holds
 * it until told again ("release"). Started ahead, so the lock comes within milliseconds of the test's cue.
 */
const HOLD_LOCK = `
  const db = new (require('better-sqlite3'))(process.argv[1]);
  const lines = require('readline').createInterface({ input: process.stdin });
  lines.on('line', (line) => {
    if (line === 'lock') { db.exec('BEGIN EXCLUSIVE'); process.stdout.write('locked\\n'); }
    if (line === 'release') { db.exec('COMMIT'); db.close(); process.exit(0); }
  });
  process.stdout.write('ready\\n');`;

const lockers = new Set<ChildProcess>();

export interface WriteLock {
  lock(): Promise<void>;
  release(): Promise<void>;
}

/** A lock-holding process, started and ready, not holding the lock yet. */
export async function prepareWriteLock(file: string): Promise<WriteLock> {
  const child = spawn(process.execPath, ['-e', HOLD_LOCK, file], {
    cwd: PROJECT_ROOT,
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  lockers.add(child);
  child.once('exit', () => lockers.delete(child));
  const lines = createInterface({ input: child.stdout! });
  const next = () => once(lines, 'line') as Promise<[string]>;
  await next(); // ready
  return {
    async lock() {
      const locked = next();
      child.stdin!.write('lock\n');
      await locked;
    },
    async release() {
      if (child.exitCode !== null) return;
      const exited = once(child, 'exit');
      child.stdin!.write('release\n');
      await exited;
    },
  };
}

/** Another process takes the database's write lock now and holds it until released. */
export async function holdWriteLock(file: string): Promise<{ release: () => Promise<void> }> {
  const lock = await prepareWriteLock(file);
  await lock.lock();
  return lock;
}

/** Lock holders left by a failed test. */
export function killLockers(): void {
  for (const child of lockers) if (child.exitCode === null) child.kill('SIGKILL');
}

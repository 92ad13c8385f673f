import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, closeSync, mkdirSync, openSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { BIN } from './cli.ts';
import { sleep, waitUntil } from './util.ts';

export type ChildKind = 'api' | 'executor' | 'projections' | 'webhooks';
export const CHILD_KINDS: readonly ChildKind[] = ['api', 'executor', 'projections', 'webhooks'];

export interface ExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface ChildSpec {
  /** `api`, `executor-1`, …: also the name of its log file. */
  name: string;
  kind: ChildKind;
  parts: string[];
  port: number;
  env: Record<string, string>;
}

/** A free loopback port (the API keeps its port across restarts). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** GET /health of a process: true on 200. */
export async function healthy(
  port: number,
  timeoutMs = 1500,
): Promise<{ ok: boolean; status: number | null; body: string }> {
  try {
    const response = await fetch(`http://127.0.0.1:${port}/health`, { signal: AbortSignal.timeout(timeoutMs) });
    const body = await response.text();
    return { ok: response.status === 200, status: response.status, body };
  } catch (error) {
    return {
      ok: false,
      status: null,
      body: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
    };
  }
}

/**
 * One `wallet-ops serve PARTS` child process: started, SIGKILLed and started again on the same port, stopped
 * with SIGTERM. Its stdout and stderr (pino JSON, LOG_LEVEL=warn) go to `<dataDir>/logs/<name>.log`, appended
 * across restarts.
 */
export class Child {
  readonly spec: ChildSpec;
  private readonly dataDir: string;
  private readonly onUnexpectedExit: (child: Child, exit: ExitInfo) => void;
  readonly logFile: string;
  private process: ChildProcess | undefined;
  private exitPromise: Promise<ExitInfo> = Promise.resolve({ code: null, signal: null });
  /** Set before an exit the soak causes (kill, stop), so that the exit handler does not report it. */
  private expectingExit = false;
  starts = 0;

  constructor(spec: ChildSpec, dataDir: string, onUnexpectedExit: (child: Child, exit: ExitInfo) => void) {
    this.spec = spec;
    this.dataDir = dataDir;
    this.onUnexpectedExit = onUnexpectedExit;
    mkdirSync(join(dataDir, 'logs'), { recursive: true });
    this.logFile = join(dataDir, 'logs', `${spec.name}.log`);
  }

  get running(): boolean {
    return this.process !== undefined && this.process.exitCode === null && this.process.signalCode === null;
  }

  get pid(): number | undefined {
    return this.process?.pid;
  }

  start(): void {
    this.starts += 1;
    this.expectingExit = false;
    appendFileSync(this.logFile, `# soak: start ${this.starts} of ${this.spec.name} at ${new Date().toISOString()}\n`);
    const log = openSync(this.logFile, 'a');
    try {
      const child = spawn(process.execPath, [BIN, 'serve', ...this.spec.parts, '--data-dir', this.dataDir], {
        env: { ...process.env, ...this.spec.env, PORT: String(this.spec.port), HOST: '127.0.0.1' },
        stdio: ['ignore', log, log],
      });
      this.process = child;
      this.exitPromise = new Promise((resolve) => {
        child.once('exit', (code, signal) => {
          const exit = { code, signal };
          if (!this.expectingExit) this.onUnexpectedExit(this, exit);
          resolve(exit);
        });
      });
    } finally {
      closeSync(log);
    }
  }

  async waitHealthy(timeoutMs: number): Promise<boolean> {
    return waitUntil(async () => this.running && (await healthy(this.spec.port)).ok, timeoutMs, 100);
  }

  /** SIGKILL, and wait for the exit. */
  async kill(): Promise<ExitInfo> {
    this.expectingExit = true;
    this.process?.kill('SIGKILL');
    return this.exitPromise;
  }

  /** SIGTERM, and wait for the exit (SIGKILL after `timeoutMs`): a graceful stop ends with code 0. */
  async stop(timeoutMs = 20_000): Promise<ExitInfo & { timedOut: boolean }> {
    if (!this.running) return { ...(await this.exitPromise), timedOut: false };
    this.expectingExit = true;
    this.process!.kill('SIGTERM');
    const timedOut = await Promise.race([this.exitPromise.then(() => false), sleep(timeoutMs).then(() => true)]);
    if (timedOut) this.process!.kill('SIGKILL');
    return { ...(await this.exitPromise), timedOut };
  }
}

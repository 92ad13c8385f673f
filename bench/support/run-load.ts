import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import type express from 'express';
import { fileURLToPath } from 'node:url';
import type { LoadResult, LoadSpec } from './load-generator.ts';

const GENERATOR = fileURLToPath(new URL('./load-generator.ts', import.meta.url));

/** Runs the load generator in a child process against a server of this process. */
export function runLoad(spec: LoadSpec): Promise<LoadResult> {
  const json = JSON.stringify(spec);
  // A long list of requests goes through a file: one argument may not exceed 128 KiB.
  const dir = json.length > 100_000 ? mkdtempSync(join(tmpdir(), 'load-spec-')) : undefined;
  if (dir) writeFileSync(join(dir, 'spec.json'), json);
  return new Promise<LoadResult>((resolve, reject) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', GENERATOR, dir ? `@${join(dir, 'spec.json')}` : json],
      { maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) => {
        if (error) return reject(new Error(`load generator failed: ${stderr || error.message}`));
        resolve(JSON.parse(stdout.trim().split('\n').at(-1)!) as LoadResult);
      },
    );
  }).finally(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });
}

/** Serves an express app on a free loopback port for a benchmark. */
export async function listen(app: express.Express): Promise<{ url: string; close: () => Promise<void> }> {
  const server: Server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

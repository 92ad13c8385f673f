import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { LoadResult, LoadSpec } from './load-generator.ts';

const GENERATOR = fileURLToPath(new URL('./load-generator.ts', import.meta.url));

/** Runs the load generator in a child process against a server of this process. */
export function runLoad(spec: LoadSpec): Promise<LoadResult> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, ['--import', 'tsx', GENERATOR, JSON.stringify(spec)], { maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (error) return reject(new Error(`load generator failed: ${stderr || error.message}`));
      resolve(JSON.parse(stdout.trim().split('\n').at(-1)!) as LoadResult);
    });
  });
}

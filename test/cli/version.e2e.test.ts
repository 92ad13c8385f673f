import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.ts';

const packageVersion = (
  JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }
).version;
const BIN = fileURLToPath(new URL('../../bin/wallet-ops.js', import.meta.url));

// Reports every module resolved from the tsx package on stderr: a checkout's CLI must start without a loader.
const TSX_WATCH = `data:text/javascript,${encodeURIComponent(
  "import { registerHooks } from 'node:module';" +
    "registerHooks({ resolve(specifier, context, next) { if (/^tsx(\\/|$)/.test(specifier)) process.stderr.write('loaded ' + specifier + '\\n'); return next(specifier, context); } });",
)}`;

describe('wallet-ops --version', () => {
  it('when asked for its version, then the CLI prints the package version and exits 0', async () => {
    for (const flag of ['--version', '-V']) {
      const result = await runCli([flag]);
      expect(result).toEqual({ code: 0, stdout: `${packageVersion}\n`, stderr: '' });
    }
  });

  it('when the binary runs in a checkout, then Node runs the TypeScript sources itself: no loader, no warning', async () => {
    const result = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
      execFile(process.execPath, ['--import', TSX_WATCH, BIN, '--version'], (error, stdout, stderr) => {
        resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr });
      });
    });
    expect(result).toEqual({ code: 0, stdout: `${packageVersion}\n`, stderr: '' });
  });
});

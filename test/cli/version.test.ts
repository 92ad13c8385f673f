import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.ts';

const packageVersion = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

describe('wallet-ops --version', () => {
  it('when asked for its version, then the CLI prints the package version and exits 0', async () => {
    for (const flag of ['--version', '-V']) {
      const result = await runCli([flag]);
      expect(result).toEqual({ code: 0, stdout: `${packageVersion}\n`, stderr: '' });
    }
  });
});

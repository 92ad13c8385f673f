import { describe, expect, it } from 'vitest';
import { SERVE_PARTS } from '../../src/cli/program.ts';
import { ALL_PARTS } from '../../src/wallet-ops.ts';
import { runCli } from '../support/cli.ts';

describe('wallet-ops serve --help', () => {
  it('when asked for, then it names every part a process can run, webhooks included', async () => {
    const result = await runCli(['serve', '--help']);

    expect(result.code).toBe(0);
    expect([...SERVE_PARTS]).toEqual([...ALL_PARTS]);
    for (const part of ALL_PARTS) expect(result.stdout).toContain(part);
    expect(result.stdout).toContain('write-api | read-api | projections | executor | webhooks');
  });
});

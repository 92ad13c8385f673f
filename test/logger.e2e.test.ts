/**
 * The server logs to standard output asynchronously (asyncStdout): a request's log line is no blocking write on
 * its path. A process boundary is what is tested: lines still buffered when the process ends must reach the pipe.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const LOGGER = fileURLToPath(new URL('../src/logger.ts', import.meta.url));
const LINES = 20_000;

/** Runs a process that logs LINES lines in one go, then ends as `ending` says; returns the lines its stdout got. */
async function linesWritten(ending: string): Promise<string[]> {
  const script = `
    const { asyncStdout, createLogger, flushLogs } = await import(${JSON.stringify(LOGGER)});
    const logger = createLogger('info', asyncStdout());
    for (let i = 0; i < ${LINES}; i++) logger.info({ requestId: 'r' + i, path: '/api/v1/distributors/d/balance', status: 200 }, 'request');
    ${ending}
  `;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  await once(child, 'exit');
  return output.split('\n').filter((line) => line !== '');
}

describe('the server log on standard output', () => {
  it('when the stop awaits flushLogs, then every line logged before it is written', async () => {
    const lines = await linesWritten('await flushLogs(logger); process.exit(0);');
    expect(lines).toHaveLength(LINES);
    expect(JSON.parse(lines.at(-1)!)).toMatchObject({ requestId: `r${LINES - 1}`, msg: 'request' });
  });

  it('when the process exits at once, then the lines still buffered are written at the exit', async () => {
    expect(await linesWritten('process.exit(1);')).toHaveLength(LINES);
  });
});

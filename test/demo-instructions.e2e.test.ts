/**
 * The commands `npm start -- --demo` prints work when pasted in their order, as a newcomer would: every create is
 * taken, the two cash-ins are approved and carried out, and the merchant's payment and the individual's payment
 * then spend what those cash-ins brought. A shell runs them one line at a time; between the approvals and what
 * follows the test waits, as a person reading the outputs does, until both cash-ins have completed.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { killAllChildren } from './support/processes.ts';
import { waitFor } from './support/system.ts';
import { tempDir } from './support/temp-dir.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const MAIN = fileURLToPath(new URL('../src/main.ts', import.meta.url));

/** A bash that runs one line at a time and answers with what it printed and its exit status. */
function shell(env: NodeJS.ProcessEnv): {
  run(line: string): Promise<{ output: string; status: number }>;
  close(): void;
} {
  const bash: ChildProcessWithoutNullStreams = spawn('bash', ['--noprofile', '--norc'], {
    cwd: ROOT,
    env,
    stdio: 'pipe',
  });
  let buffer = '';
  let waiting: ((text: string) => void) | undefined;
  const take = () => {
    const end = buffer.indexOf('\n__END__ ');
    if (end < 0 || !waiting) return;
    const close = buffer.indexOf('\n', end + 1);
    if (close < 0) return;
    const text = buffer.slice(0, close);
    buffer = buffer.slice(close + 1);
    const done = waiting;
    waiting = undefined;
    done(text);
  };
  bash.stdout.on('data', (chunk: Buffer) => ((buffer += chunk.toString()), take()));
  bash.stderr.on('data', (chunk: Buffer) => ((buffer += chunk.toString()), take()));
  return {
    run: (line) =>
      new Promise((resolve) => {
        waiting = (text) => {
          const at = text.lastIndexOf('\n__END__ ');
          resolve({ output: text.slice(0, at), status: Number(text.slice(at + 9)) });
        };
        bash.stdin.write(`${line}\necho; echo "__END__ $?"\n`);
      }),
    close: () => bash.kill('SIGKILL'),
  };
}

describe("the demo's printed commands", () => {
  const dir = tempDir();
  afterAll(async () => {
    await killAllChildren();
    dir.cleanup();
  });

  it("when pasted in their order, then each one succeeds, the individual's payment included", async () => {
    const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: dir.path, PORT: '0', LOG_LEVEL: 'warn' };
    for (const name of ['POSTGRES_URL', 'KURRENTDB_URL', 'MONGODB_URL', 'EVENT_STORE', 'READ_STORE', 'SECRETS_KEY'])
      delete env[name];
    const server = spawn(process.execPath, [MAIN, '--demo'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let printed = '';
    server.stdout.on('data', (chunk: Buffer) => (printed += chunk.toString()));
    server.stderr.on('data', (chunk: Buffer) => (printed += chunk.toString()));
    const bash = shell(env);
    try {
      await waitFor(() => printed.includes('/console    # the web console'), 60_000);
      const lines = printed.split('\n');
      const keys = lines.filter((line) => /^ {2}[DM]KEY='/.test(line)).map((line) => line.trim());
      const start = lines.findIndex((line) => line.startsWith('Try'));
      const commands = lines
        .slice(start + 1)
        .map((line) => line.trim())
        .filter((line) => line !== '' && !line.startsWith('http'));
      expect(keys).toHaveLength(2);
      expect(commands.length).toBeGreaterThan(10);
      for (const key of keys) expect((await bash.run(key)).status).toBe(0);

      const base = /curl -s (http:\/\/[^/]+)\/api/.exec(commands[0]!)![1]!;
      const dkey = keys[0]!.slice('DKEY='.length + 1, -1);
      const statusOf = async (operationID: string) => {
        const response = await fetch(`${commands[0]!.match(/(http:\/\/\S+\/distributors\/[^/]+)\//)![1]}/operations`, {
          headers: { authorization: `Bearer ${dkey}` },
        });
        const body = (await response.json()) as Array<{ operationID: string; status: string }>;
        return body.find((op) => op.operationID === operationID)?.status;
      };
      const ids: string[] = [];
      for (const command of commands) {
        const { output, status } = await bash.run(command);
        expect(status, `${command}\n${output}`).toBe(0);
        expect(output, command).not.toMatch(/"type":"\/problems\/|^refused|^failed|error:/m);
        if (/^OP\d=/.test(command)) {
          expect(output.trim(), command).toMatch(/^op_[0-9a-f]{32}$/);
          ids.push(output.trim());
        }
        // A person reads "a moment later: completed" and looks: so does the test, before spending the money.
        if (command.includes('# a moment later')) {
          for (const id of ids) await waitFor(async () => (await statusOf(id)) === 'completed', 15_000);
        }
        if (command.includes('individual pay')) expect(output).toMatch(/payment requested: op_/);
      }
      expect(ids).toHaveLength(2);
      expect(base).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    } finally {
      bash.close();
      server.kill('SIGTERM');
    }
  }, 180_000);
});

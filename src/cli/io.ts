import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * Where a CLI run writes and what environment it reads: the process's own for the binary, injected ones when
 * a caller runs the CLI in its own process (the tests). Every place in src/cli that prints or reads the
 * environment goes through cliIO(), never through process.stdout, process.stderr or process.env.
 */
export interface CliIO {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  env: Record<string, string | undefined>;
}

const writeStdout = (text: string): void => void process.stdout.write(text);
const writeStderr = (text: string): void => void process.stderr.write(text);

/** The process's own streams and environment (process.env itself, so that what is set in it later is seen). */
export const PROCESS_IO: CliIO = { stdout: writeStdout, stderr: writeStderr, env: process.env };

const current = new AsyncLocalStorage<CliIO>();

/** The IO of the CLI run this code is part of; the process's outside any run. */
export function cliIO(): CliIO {
  return current.getStore() ?? PROCESS_IO;
}

/** Runs `run` with `io` as the CLI's IO, for everything it awaits (calls running at once each keep their own). */
export function withCliIO<T>(io: CliIO, run: () => Promise<T>): Promise<T> {
  return current.run(io, run);
}

/** Whether this run writes its stderr to the process's own stderr, and that is a terminal (progress bars only then). */
export function stderrIsTerminal(io: CliIO = cliIO()): boolean {
  return io.stderr === writeStderr && process.stderr.isTTY === true;
}

/** Whether this run is the process's own (the binary), not one injected by a caller in its own process. */
export function isProcessIO(io: CliIO = cliIO()): boolean {
  return io.stdout === writeStdout && io.stderr === writeStderr && io.env === process.env;
}

import { runCli } from './program.ts';

const code = await runCli(process.argv.slice(2));
// A failure ends the process at once: a `serve` that failed half-way may have started background work
// (a subscription, a timer) that would otherwise keep a process alive that serves nothing.
if (code !== 0) process.exit(code);
process.exitCode = code;

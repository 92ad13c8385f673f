import { CliError, runCli } from './cli.ts';
import type { DecisionQueue } from './load.ts';
import type { World } from './setup.ts';
import type { SoakStats } from './stats.ts';
import { amountBetween, pause, pick, sleep } from './util.ts';

const CLI_ATTEMPTS = 3;

/**
 * Runs a CLI command that changes something, again after a failure that is not a refusal (a store that
 * was busy, a timeout): the command may have taken effect before it failed, so a refusal on a later attempt
 * is reported as such, and the event store has the last word in the checks.
 */
async function runWithRetries(
  dataDir: string,
  args: string[],
  stats: SoakStats,
): Promise<{ ok: true; json: any } | { ok: false; error: CliError; attempts: number }> {
  let last: CliError | undefined;
  for (let attempt = 1; attempt <= CLI_ATTEMPTS; attempt++) {
    const result = await runCli(dataDir, args);
    if (result.code === 0 && result.json !== undefined) return { ok: true, json: result.json };
    last = new CliError(args, result);
    if (last.refused) return { ok: false, error: last, attempts: attempt };
    stats.cliErrors.push(`${new Date().toISOString()} attempt ${attempt}: ${last.message}`);
    await sleep(500 * attempt);
  }
  return { ok: false, error: last!, attempts: CLI_ATTEMPTS };
}

/** One checker at the console, through the CLI: approves or rejects acknowledged creates in order of arrival. */
export async function checker(
  world: World,
  stats: SoakStats,
  queue: DecisionQueue,
  rejectShare: number,
  signal: AbortSignal,
): Promise<void> {
  while (!signal.aborted) {
    const create = queue.take();
    if (!create) {
      await pause(100, signal);
      continue;
    }
    try {
      const reject = Math.random() < rejectShare;
      const args = reject
        ? [
            'operation',
            'reject',
            create.operationID,
            '--as',
            create.checkerEmail,
            '--reason',
            'soak: rejected by the checker',
          ]
        : ['operation', 'approve', create.operationID, '--as', create.checkerEmail];
      const outcome = await runWithRetries(world.dataDir, args, stats);
      if (outcome.ok) {
        stats.decisions[reject ? 'rejected' : 'approved'] += 1;
      } else {
        stats.decisions[outcome.error.refused ? 'refused' : 'failed'] += 1;
        if (outcome.attempts > 1) stats.decisions.retried += 1;
        stats.decisionErrors.push(`${create.operationID}: ${outcome.error.message}`);
      }
    } finally {
      queue.done();
    }
  }
}

/** An individual paying a merchant from the wallet app (`individual pay`: approved at once, no checker). */
export async function individualPayer(
  world: World,
  stats: SoakStats,
  everySeconds: number,
  signal: AbortSignal,
): Promise<void> {
  if (everySeconds <= 0) return;
  while (!signal.aborted) {
    await pause(everySeconds * 1000 * (0.5 + Math.random()), signal);
    if (signal.aborted) return;
    const args = [
      'individual',
      'pay',
      '--from',
      pick(world.phones),
      '--to-merchant',
      pick(world.merchants).shortCode,
      '--amount',
      amountBetween(1, 5),
      '--memo',
      'soak coffee',
    ];
    const outcome = await runWithRetries(world.dataDir, args, stats);
    if (outcome.ok) {
      stats.individualPays.ok += 1;
      stats.individualPayIDs.push(outcome.json.operationID);
    } else {
      stats.individualPays[outcome.error.refused ? 'refused' : 'failed'] += 1;
      if (!outcome.error.refused) stats.notes.push(`individual pay failed: ${outcome.error.message}`);
    }
  }
}

import { Presets, SingleBar } from 'cli-progress';
import type { Fleet } from './fleet.ts';
import type { DecisionQueue } from './load.ts';
import type { SoakStats } from './stats.ts';
import { pause } from './util.ts';

const LINE_EVERY_MS = 15_000;

function payload(stats: SoakStats, queue: DecisionQueue, fleet: Fleet) {
  return {
    acked: stats.acknowledged.size,
    unacked: Object.values(stats.createUnacknowledged).reduce((a, b) => a + b, 0),
    decided: stats.decisions.approved + stats.decisions.rejected,
    backlog: queue.backlog,
    kills: Object.values(stats.kills).reduce((a, b) => a + b, 0),
    down:
      fleet.children
        .filter((child) => !child.running)
        .map((child) => child.spec.name)
        .join(',') || '-',
  };
}

/** A progress bar over the load phase on a terminal; a line every 15 s otherwise (CI logs). */
export async function showProgress(
  stats: SoakStats,
  queue: DecisionQueue,
  fleet: Fleet,
  loadMs: number,
  signal: AbortSignal,
  log: (line: string) => void,
): Promise<void> {
  const totalSeconds = Math.round(loadMs / 1000);
  const elapsed = () => Math.min(totalSeconds, Math.round((Date.now() - stats.loadStartedAt) / 1000));
  if (!process.stderr.isTTY) {
    while (!signal.aborted) {
      await pause(LINE_EVERY_MS, signal);
      const p = payload(stats, queue, fleet);
      log(
        `load ${elapsed()}/${totalSeconds} s: ${p.acked} acknowledged creates (${p.unacked} unacknowledged), ${p.decided} decided, backlog ${p.backlog}, ${p.kills} kills, down: ${p.down}`,
      );
    }
    return;
  }
  const bar = new SingleBar(
    {
      format:
        'soak [{bar}] {value}/{total} s | acked {acked} (unacked {unacked}) | decided {decided} | backlog {backlog} | kills {kills} | down {down}',
      stream: process.stderr,
      hideCursor: true,
    },
    Presets.shades_classic,
  );
  bar.start(totalSeconds, 0, payload(stats, queue, fleet));
  while (!signal.aborted) {
    await pause(1000, signal);
    bar.update(elapsed(), payload(stats, queue, fleet));
  }
  bar.update(totalSeconds, payload(stats, queue, fleet));
  bar.stop();
}

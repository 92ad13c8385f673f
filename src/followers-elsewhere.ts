import type { ConsumerView, WatchedConsumer } from './health.ts';
import type { MetricFamilies } from './metrics/index.ts';
import type { CommittedPositions } from './projections/read-your-writes.ts';

/**
 * The parts that follow the history and serve no HTTP (the projections with the sealer, the executor with key
 * revocations, the webhooks' outbox and dispatcher), on a worker thread of the process that serves the APIs. On
 * the one event loop they cost a create about as much CPU again as the write API itself (docs/benchmarks.md), and
 * a second core idles meanwhile. The thread builds them with buildWalletOps on store connections of its own, as a
 * process of the split layout would; the main thread keeps the APIs, the console, the directories and the
 * balances view in memory. What the main thread needs of the followers crosses as messages: each projection's
 * committed position (read-your-writes waits on it), the consumers' states (/health, /ready), their metrics.
 */
export interface FollowersElsewhere {
  /** A model the thread builds: its committed position as the thread last reported it. */
  committed(model: string): CommittedPositions;
  /** The thread's consumers as it last reported them (none before it is first up). */
  watched(): ReadonlyArray<WatchedConsumer<ConsumerView>>;
  /** The thread's metric families, merged into this process's scrape. */
  metricFamilies(): Promise<MetricFamilies>;
  /** The thread itself, for /health. */
  report(): FollowersThreadReport;
}

export interface FollowersThreadReport {
  state: 'starting' | 'running' | 'restarting' | 'stopped';
  /** Threads started after the first (each one after a thread died). */
  restarts: number;
  lastExit: { reason: string; at: string } | null;
}

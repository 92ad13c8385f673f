import type { EventStore } from '../ports/event-store.ts';
import type { ReadStore } from '../ports/read-store.ts';
import { ProblemError } from '../http/problems.ts';
import { projectionStatus, type Checkpointed } from '../projections/rebuild.ts';

/**
 * A read model the API serves: a projection, judged by its checkpoint in the read store, or a model this process
 * keeps in memory (the balances view), judged by its own position.
 */
export type ServedModel = Checkpointed & {
  /** Where a model in memory stands: every event of it at or below the position is applied; null: not built yet. */
  position?: () => number | null;
};

/**
 * How a read model stands against the history: serveable, never built though it has events to show, or too far behind.
 */
export type Freshness =
  | { state: 'current'; lagEvents: number }
  | { state: 'not-built'; lagEvents: number }
  | { state: 'lagging'; lagEvents: number };

export interface ReadFreshnessOptions {
  eventStore: EventStore;
  readStore: ReadStore;
  /** A read model with more of its events than this still to apply is not served (READ_MAX_LAG_EVENTS, as /ready). */
  maxLagEvents: number;
  /** How long one verdict is reused: the check reads up to maxLagEvents + 1 events, which no request should pay for. */
  reuseForMs?: number;
}

/**
 * Whether a read model may answer: a model that has no checkpoint while events it shows exist (deleted,
 * never built, being rebuilt into a fresh store) or that lags by more than the maximum would answer with a
 * balance of 0.00 or a past state as if it were the truth. Those answer 503 with Retry-After instead. A store
 * with no events at all is current: an empty answer is then the truth. Verdicts are shared by the requests of
 * a short window (a process's own monotonic clock); a store that cannot be read fails the request as unavailable.
 */
export class ReadFreshness {
  private readonly options: ReadFreshnessOptions;
  private readonly verdicts = new Map<string, { at: number; verdict: Promise<Freshness>; settled?: Freshness }>();

  constructor(options: ReadFreshnessOptions) {
    this.options = options;
  }

  async freshness(projection: ServedModel): Promise<Freshness> {
    const now = performance.now();
    const cached = this.verdicts.get(projection.name);
    if (cached && now - cached.at < (this.options.reuseForMs ?? 1000)) return cached.verdict;
    const verdict = this.measure(projection);
    const entry: { at: number; verdict: Promise<Freshness>; settled?: Freshness } = { at: now, verdict };
    this.verdicts.set(projection.name, entry);
    verdict.then(
      (settled) => (entry.settled = settled),
      () => {},
    );
    // A failed measure is not reused: the next request tries the store again.
    verdict.catch(
      () => this.verdicts.get(projection.name)?.verdict === verdict && this.verdicts.delete(projection.name),
    );
    return verdict;
  }

  /**
   * True when a verdict of the current window is in and says current: the request goes on without waiting on anything.
   */
  knownCurrent(projection: ServedModel): boolean {
    const cached = this.verdicts.get(projection.name);
    return cached?.settled?.state === 'current' && performance.now() - cached.at < (this.options.reuseForMs ?? 1000);
  }

  /** Resolves when the read model may answer; otherwise throws the 503 problem that says why. */
  async assertServeable(projection: ServedModel): Promise<void> {
    const verdict = await this.freshness(projection);
    if (verdict.state === 'current') return;
    throw readModelUnavailable(projection.name, verdict, this.options.maxLagEvents);
  }

  private async measure(projection: ServedModel): Promise<Freshness> {
    const { maxLagEvents } = this.options;
    const { position, lagEvents } = projection.position
      ? await this.ownLag(projection, projection.position())
      : (await projectionStatus(this.options, [projection], maxLagEvents + 1))[0]!;
    if (position === null && lagEvents > 0) return { state: 'not-built', lagEvents };
    if (lagEvents > maxLagEvents) return { state: 'lagging', lagEvents };
    return { state: 'current', lagEvents };
  }

  /** The model's events after its own position, up to the head (at most maxLagEvents + 1 of them are read). */
  private async ownLag(
    projection: Checkpointed,
    position: number | null,
  ): Promise<{ position: number | null; lagEvents: number }> {
    const { eventStore, maxLagEvents } = this.options;
    const head = await eventStore.headPosition();
    const pending = await eventStore.readAll({
      fromPosition: (position ?? 0) + 1,
      toPosition: head,
      maxCount: maxLagEvents + 1,
      filter: { eventTypes: [...projection.eventTypes] },
    });
    return { position, lagEvents: pending.length };
  }
}

function readModelUnavailable(name: string, verdict: Freshness, maxLagEvents: number): ProblemError {
  const detail =
    verdict.state === 'not-built'
      ? `The ${name} read model has not been built yet (it has no checkpoint while events exist); retry later.`
      : `The ${name} read model is more than ${maxLagEvents} events behind the history; retry later.`;
  // A model being built from nothing takes longer than one catching up.
  const retryAfter = verdict.state === 'not-built' ? '5' : '1';
  return new ProblemError(
    { type: '/problems/service-unavailable', status: 503, title: 'Service Unavailable', detail },
    { 'Retry-After': retryAfter },
  );
}

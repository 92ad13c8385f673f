import type { EventFilter, EventStore } from './ports/event-store.ts';
import type { ConsumerStatus, SupervisedConsumer } from './shared/follower.ts';

/** A supervised consumer of this process, with the events it follows (to measure how far behind it is). */
export interface WatchedConsumer {
  consumer: SupervisedConsumer;
  filter?: EventFilter;
  /**
   * For a consumer that does not read the event log itself but works on what another one queued (the webhook
   * dispatcher sends what the outbox queued): its lag is that consumer's.
   */
  lagOf?: SupervisedConsumer;
}

export interface ConsumerReport extends ConsumerStatus {
  /** Matching events after its position, counted up to a cap (null when the store could not be read). */
  lagEvents: number | null;
  /** Age of the oldest matching event it has not applied yet: 0 when caught up (null when unknown). */
  lagSeconds: number | null;
}

/**
 * Liveness: the process is alive unless one of its consumers has been unable to run for longer than the
 * grace. It reads no store, so it answers at once even while a store is locked or down.
 */
export function liveness(watched: WatchedConsumer[], graceMs: number): { alive: boolean; failing: Array<{ consumer: string; downForMs: number; lastError: string | null }> } {
  const failing = watched
    .map(({ consumer }) => ({ consumer: consumer.name, downForMs: consumer.downForMs(), lastError: consumer.status().lastError }))
    .filter((entry) => entry.downForMs > graceMs);
  return { alive: failing.length === 0, failing };
}

/** Each consumer's state and lag, for /ready and `projections status`. */
export async function consumerReports(eventStore: EventStore, watched: WatchedConsumer[], now: Date, cap = 1000): Promise<ConsumerReport[]> {
  let head: number | null = null;
  try {
    head = await eventStore.headPosition();
  } catch {
    // Reported as unknown lag: the state and last error say why.
  }
  return Promise.all(
    watched.map(async ({ consumer, filter, lagOf }) => {
      const status = consumer.status();
      if (head === null) return { ...status, lagEvents: null, lagSeconds: null };
      const position = (lagOf ?? consumer).status().position;
      try {
        const pending = await eventStore.readAll({ fromPosition: (position ?? 0) + 1, toPosition: head, maxCount: cap, ...(filter ? { filter } : {}) });
        const oldest = pending[0];
        return { ...status, lagEvents: pending.length, lagSeconds: oldest ? Math.max(0, (now.getTime() - Date.parse(oldest.createdAt)) / 1000) : 0 };
      } catch {
        return { ...status, lagEvents: null, lagSeconds: null };
      }
    }),
  );
}

import {
  EventStoreUnavailableError,
  type EventStore,
  type RecordedEvent,
  type Subscription,
} from '../../src/ports/event-store.ts';

/**
 * An EventStore whose positions look like KurrentDB's, over the embedded store: the embedded store numbers its
 * events 1, 2, 3...; here the event at embedded position p is at 4 * logPosition(p), a large number that grows
 * by uneven steps (log records have different sizes), as the KurrentDB adapter numbers an event at a log
 * position (src/adapters/kurrentdb/kurrentdb-mapping.ts). Positions are never contiguous.
 *
 * Like the KurrentDB adapter on a real server, a read of $all may only start at an event (4L), just after one
 * (4L + 1, 4L + 2), just before one (4L - 1), or at the very start (below 4): any other number is refused
 * with the server's InvalidPosition, as an EventStoreUnavailableError. So `event.position - 8`, or a position
 * taken from another store (the embedded numbers a seal carries after `events copy`), fail here as they do
 * on KurrentDB. toPosition, like the adapter's, may be any number.
 *
 * A test double of the position space only; the events, streams, revisions and appends are the embedded
 * store's own.
 */
export function withSparsePositions(inner: EventStore): EventStore {
  const toSparse = (p: number) => 4 * logPosition(p);
  /** The smallest embedded position whose sparse number is >= n. */
  const atOrAfter = (n: number): number => {
    let lo = 0;
    let hi = 2 ** 40;
    while (lo < hi) {
      const mid = Math.floor((lo + hi) / 2);
      if (toSparse(mid) >= n) hi = mid;
      else lo = mid + 1;
    }
    return lo;
  };
  const map = (event: RecordedEvent): RecordedEvent => ({ ...event, position: toSparse(event.position) });
  const checkReadStart = (from: number) => {
    if (from < 4) return;
    const p = atOrAfter(from - 2); // the candidate event for from = 4L - 1, 4L, 4L + 1, 4L + 2
    const at = toSparse(p);
    if (from === at - 1 || from === at || from === at + 1 || from === at + 2) return;
    const previous = toSparse(Math.max(0, p - 1));
    if (p > 0 && (from === previous + 1 || from === previous + 2)) return;
    throw new EventStoreUnavailableError(
      `KurrentDB failed: InvalidPosition: log position ${Math.floor(from / 4)} is not the start of a record (test double)`,
    );
  };
  return {
    append: async (stream, events, expected) => {
      const result = await inner.append(stream, events, expected);
      return { ...result, position: toSparse(result.position) };
    },
    appendMulti: async (requests) =>
      (await inner.appendMulti(requests)).map((result) => ({ ...result, position: toSparse(result.position) })),
    readStream: async (stream, options) => (await inner.readStream(stream, options)).map(map),
    readAll: async (options = {}) => {
      const from = options.fromPosition ?? 0;
      checkReadStart(from);
      const to = options.toPosition;
      // Embedded range: the events whose sparse numbers are within [from, to].
      const events = await inner.readAll({
        ...options,
        fromPosition: from < 4 ? 0 : atOrAfter(from),
        ...(to === undefined ? {} : { toPosition: atOrAfter(to + 1) - 1 }),
      });
      return events.map(map);
    },
    headPosition: async () => {
      const head = await inner.headPosition();
      return head === 0 ? 0 : toSparse(head);
    },
    subscribeToAll: (options) => {
      // A checkpoint n: delivery resumes after the last event numbered <= n.
      const from = options.from === 'start' ? 'start' : atOrAfter(options.from + 1) - 1;
      const subscription = inner.subscribeToAll({ ...options, from });
      const mapped: Subscription = {
        stop: () => subscription.stop(),
        ...(subscription.onCaughtUp
          ? { onCaughtUp: (listener: () => void) => subscription.onCaughtUp!(listener) }
          : {}),
        [Symbol.asyncIterator]() {
          const iterator = subscription[Symbol.asyncIterator]();
          return {
            next: async () => {
              const result = await iterator.next();
              return result.done ? result : { done: false, value: map(result.value) };
            },
            return: async () => {
              await subscription.stop();
              return { done: true, value: undefined };
            },
          };
        },
      };
      return mapped;
    },
    close: () => inner.close(),
  };
}

/** Strictly increasing, uneven steps (44 to 220), far from the embedded numbers: like byte offsets in a log. */
function logPosition(p: number): number {
  return p <= 0 ? 0 : 7_000 + 131 * p + ((p * 37) % 89);
}

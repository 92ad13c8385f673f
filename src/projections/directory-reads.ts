import {
  EventStoreUnavailableError,
  type EventFilter,
  type EventStore,
  type RecordedEvent,
} from '../ports/event-store.ts';
import { checkpointIn, Follower, type ConsumerLogger, type Supervision } from '../shared/follower.ts';

/**
 * How a reader of a directory in memory (the API keys, the users) waits for it: on the follower that keeps it,
 * never by reading the store into it itself. Both waits are bounded and say whether the follower got there.
 */
export interface DirectoryReads {
  /** Until the directory holds this process's write, by the log position its command returned. */
  written(position: number): Promise<boolean>;
  /** Until it holds what any process had written by now (the store's head as read at the call). */
  current(): Promise<boolean>;
}

/** A directory in memory: it applies the events of its filter and knows the position it has applied up to. */
export interface InMemoryDirectory {
  readonly position: number;
  apply(event: RecordedEvent): void;
}

/**
 * Starts the follower that keeps `directory`: its subscription reads the history from the directory's own position
 * (the directory is the checkpoint) and then follows it live; after a failed read it resubscribes from there
 * (applying an event twice changes nothing), so nothing is missed.
 */
export function followDirectory(
  name: string,
  store: EventStore,
  filter: EventFilter,
  directory: InMemoryDirectory,
  logger: ConsumerLogger,
  supervision?: Supervision,
): Follower {
  const follower = new Follower({
    name,
    eventStore: store,
    filter,
    checkpoint: checkpointIn(() => directory.position),
    handle: async (batch) => batch.forEach((event) => directory.apply(event)),
    logger,
    ...(supervision ? { supervision } : {}),
  });
  follower.start();
  return follower;
}

/** The two waits on `follower`, which follows `filter` of `store`. */
export function directoryReads(
  follower: Follower,
  store: EventStore,
  filter: EventFilter,
  timeoutMs: number,
): DirectoryReads {
  // Where the follower stood when a wait last ran out, and when. While it has not moved since, for one bound more, a
  // wait only looks whether anything is left to apply: a page that waits twice (its body and its badge), or every
  // request while the follower is stalled, does not sit out the whole bound again.
  let ranOut: { position: number | null; at: number } | undefined;
  const bounded = async (wait: (ms: number) => Promise<boolean>): Promise<boolean> => {
    const stalled =
      ranOut !== undefined && follower.position === ranOut.position && performance.now() - ranOut.at < timeoutMs;
    const passed = await wait(stalled ? 0 : timeoutMs);
    ranOut = passed ? undefined : { position: follower.position, at: performance.now() };
    return passed;
  };
  return {
    written: (position) => bounded((ms) => untilPassed(follower, store, filter, position, ms)),
    current: () => bounded((ms) => untilHead(follower, store, filter, ms)),
  };
}

/** Resolves true once the follower has handled every event of its filter up to the store's head as it is now. */
export async function untilHead(
  follower: Follower,
  store: EventStore,
  filter: EventFilter,
  timeoutMs: number,
): Promise<boolean> {
  const deadline = performance.now() + timeoutMs;
  return untilPassed(follower, store, filter, await store.headPosition(), deadline - performance.now());
}

/**
 * Resolves true once the follower has handled every event of its filter at or below `position`, false after
 * `timeoutMs`: its checkpoint reaching them (untilCommitted). The checkpoint stands at the last event it followed,
 * and the position may be another's (a write's last event of a stream it does not follow, the head): so the
 * store is asked for the first followed event beyond the checkpoint (by type, an index read), and the wait is for
 * the checkpoint to reach that one, again until none is left at or below the position.
 */
export async function untilPassed(
  follower: Follower,
  store: EventStore,
  filter: EventFilter,
  position: number,
  timeoutMs: number,
): Promise<boolean> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const from = (follower.position ?? 0) + 1;
    if (from > position) return true;
    const [next] = await store.readAll({ fromPosition: from, toPosition: position, maxCount: 1, filter });
    if (!next) return true;
    const left = deadline - performance.now();
    if (left <= 0 || !(await follower.untilCommitted(next.position, left))) return false;
  }
}

/** How long a one-shot reader (a CLI command) waits for its follower. */
const ONE_SHOT_MS = 60_000;

/**
 * For a one-shot reader (a CLI command): the follower, started, runs until the directory holds the store's head
 * as it is now, and is then stopped. A store that cannot be read fails the command.
 */
export async function followToHead(follower: Follower, store: EventStore, filter: EventFilter): Promise<void> {
  try {
    if (!(await untilHead(follower, store, filter, ONE_SHOT_MS)))
      throw new EventStoreUnavailableError(
        `${follower.name}: the history could not be read up to its head within ${ONE_SHOT_MS / 1000} s`,
      );
  } finally {
    await follower.stop();
  }
}

import { WrongExpectedVersionError, type EventStore, type RecordedEvent } from './ports/event-store.ts';
import { streams } from './domain/streams.ts';

/**
 * The demo writes users with a published password and prints working API keys, so it seeds only a store of
 * its own: an empty one, which it marks first (`DemoStoreMarked`, the first event of the store), or one whose
 * first event is that marker. Any other store holds somebody's real data, and the seed is refused before it
 * writes anything.
 *
 * "Empty" is judged on $all (system events aside): the first event of the store, if any. The marker is
 * appended with `no_stream`, so of two seeders that both found the store empty exactly one writes it; the
 * other finds the marker there and seeds the same demo store. A real write that lands between the check and
 * the marker makes the marker the second event, and every later seed is refused.
 */
export class DemoStoreRefusedError extends Error {
  constructor(first: Pick<RecordedEvent, 'type' | 'stream'>) {
    super(
      `this event store already holds events the demo did not write (the first: ${first.type} on ` +
        `${first.stream}). The demo publishes its password and prints working keys, so it seeds only an empty ` +
        'store or one it marked itself: use an empty data directory (--data-dir, DATA_DIR) or a separate ' +
        'KurrentDB, e.g. deploy/demo/compose.yml.',
    );
    this.name = 'DemoStoreRefusedError';
  }
}

export const DEMO_STORE_MARKED = 'DemoStoreMarked';

/** Marks an empty store as the demo's, or confirms it is; refuses any other store. Reads and writes nothing else. */
export async function claimDemoStore(store: EventStore, now: Date): Promise<'marked' | 'marked-already'> {
  const [first] = await store.readAll({ maxCount: 1 });
  if (first && first.stream === streams.demoStore && first.type === DEMO_STORE_MARKED) return 'marked-already';
  if (first) throw new DemoStoreRefusedError(first);
  try {
    await store.append(
      streams.demoStore,
      [{ type: DEMO_STORE_MARKED, data: { markedAt: now.toISOString() }, metadata: { actor: 'operator:demo' } }],
      'no_stream',
    );
    return 'marked';
  } catch (error) {
    // Another seeder marked it between our read and our append: it is a demo store.
    if (error instanceof WrongExpectedVersionError) return 'marked-already';
    throw error;
  }
}

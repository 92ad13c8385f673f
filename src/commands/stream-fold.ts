import { Decimal } from '../domain/money.ts';
import type { EventStore } from '../ports/event-store.ts';

/** Events per read when a state is folded from a stream. */
export const LOAD_PAGE = 1000;

/**
 * How a state is kept as a snapshot (src/commands/snapshots.ts): the fold's name and version, and how to read
 * a stored summary back (null when it is not one of this fold's: malformed, or written by another version).
 */
export interface SnapshotSpec<State> {
  fold: string;
  restore(state: unknown): State | null;
}

/** A fold that may start from a snapshot. */
export interface SnapshotFold<State> {
  initialState(): State;
  evolve(state: State, event: any): State;
  snapshot: SnapshotSpec<State>;
}

export interface Folded<State> {
  state: State;
  revision: number;
}

/**
 * Folds a stream's events after `start.revision` into `start.state`, up to `upTo` (inclusive) or its end. In
 * pages: a long stream read cold (a wallet with a million events) is folded without holding it all in memory.
 */
export async function foldStream<State>(
  store: EventStore,
  stream: string,
  evolve: (state: State, event: any) => State,
  start: Folded<State>,
  upTo = Number.MAX_SAFE_INTEGER,
): Promise<Folded<State>> {
  let { state, revision } = start;
  while (revision < upTo) {
    const maxCount = Math.min(LOAD_PAGE, upTo - revision);
    const page = await store.readStream(stream, { fromRevision: revision + 1, maxCount });
    for (const recorded of page) {
      // Metadata too: a state may need to know who caused an event (an operation's requester, for segregation of
      // duties).
      state = evolve(state, { type: recorded.type, data: recorded.data, metadata: recorded.metadata });
      revision = recorded.revision;
    }
    if (page.length < maxCount) break;
  }
  return { state, revision };
}

/**
 * Every stream whose name starts with `prefix`, each folded from its first event, in the order the streams began
 * (keys and endpoints: a few hundred, for an administrator's page, not a request's hot path).
 */
export async function foldStreamsUnder<State>(
  store: EventStore,
  prefix: string,
  fold: { initialState(): State; evolve(state: State, event: any): State },
): Promise<Map<string, State>> {
  const states = new Map<string, State>();
  for (let from = 1; ;) {
    const page = await store.readAll({ fromPosition: from, maxCount: LOAD_PAGE, filter: { streamPrefixes: [prefix] } });
    for (const event of page)
      states.set(event.stream, fold.evolve(states.get(event.stream) ?? fold.initialState(), event));
    if (page.length < LOAD_PAGE) break;
    from = page.at(-1)!.position + 1;
  }
  return states;
}

/** The given fields of a stored summary, each a decimal string; null when one is missing or not a number. */
export function decimalFields<K extends string>(value: unknown, keys: readonly K[]): Record<K, string> | null {
  if (typeof value !== 'object' || value === null) return null;
  const record = value as Record<string, unknown>;
  const out = {} as Record<K, string>;
  for (const key of keys) {
    const field = record[key];
    if (typeof field !== 'string' || !isDecimal(field)) return null;
    out[key] = field;
  }
  return out;
}

function isDecimal(text: string): boolean {
  try {
    return new Decimal(text).isFinite();
  } catch {
    return false;
  }
}

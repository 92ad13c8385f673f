/**
 * The event store port. Its semantics are EventStoreDB's (KurrentDB's), so that the KurrentDB adapter is a
 * thin translation and the embedded SQLite adapter behaves the same way under every test.
 *
 * Positions: every stored event has a global position, a number that strictly increases in commit order
 * across the whole store. Stream revisions start at 0 for the first event of a stream.
 */

/** Who caused an event and why: carried by every event, required by auditors. */
export interface EventMetadata {
  /** The request or command run that caused this event; every event of one command shares it. */
  correlationId?: string;
  /** The id of the event or request that directly caused this one. */
  causationId?: string;
  /** Who acted: `user:<id>`, `apikey:<keyID>`, `operator:<name>`, `system:<component>`. */
  actor?: string;
  [key: string]: unknown;
}

/**
 * A hint a decorator may attach to the events it passes on: their data and metadata already serialized (the
 * hash chain writes both as canonical JSON to hash them), so that an adapter storing JSON need not serialize
 * them again. Each string must be JSON that parses to exactly the value beside it; an adapter may ignore it.
 */
export const SERIALIZED_JSON: unique symbol = Symbol.for('wallet-ops.eventStore.serializedJson');

export interface SerializedJson {
  data: string;
  metadata: string;
}

/** An event as a command produces it, before it is stored. */
export interface NewEvent<Type extends string = string, Data = unknown> {
  type: Type;
  data: Data;
  metadata?: EventMetadata;
  /** Optional; a uuid is generated when absent. */
  id?: string;
  /** Optional, see SERIALIZED_JSON. */
  [SERIALIZED_JSON]?: SerializedJson;
}

/** An event as the store returns it. */
export interface RecordedEvent<Type extends string = string, Data = unknown> {
  id: string;
  type: Type;
  data: Data;
  metadata: EventMetadata;
  stream: string;
  /** 0-based position of the event inside its stream. */
  revision: number;
  /** Strictly increasing across the whole store, in commit order. */
  position: number;
  /** ISO 8601, set by the store at commit. */
  createdAt: string;
}

/** What the appender believes about a stream, checked atomically with the append. */
export type ExpectedRevision = 'no_stream' | 'stream_exists' | 'any' | number;

export interface AppendResult {
  /** Revision of the last event written to the stream. */
  nextExpectedRevision: number;
  /** Global position of the last event written. */
  position: number;
}

export interface StreamAppend {
  stream: string;
  events: NewEvent[];
  expectedRevision: ExpectedRevision;
}

export interface ReadStreamOptions {
  direction?: 'forwards' | 'backwards';
  /** Inclusive. Defaults to the start (forwards) or the end (backwards). */
  fromRevision?: number;
  maxCount?: number;
}

export interface EventFilter {
  /** Keep events whose stream name starts with one of these prefixes. */
  streamPrefixes?: string[];
  /** Keep events whose type is one of these. */
  eventTypes?: string[];
}

export interface ReadAllOptions {
  /** Inclusive. Defaults to the first event. */
  fromPosition?: number;
  /** Inclusive. */
  toPosition?: number;
  maxCount?: number;
  filter?: EventFilter;
}

export interface SubscribeOptions {
  /** 'start' for every event; otherwise a checkpoint: delivery resumes with the first event *after* it. */
  from: 'start' | number;
  filter?: EventFilter;
}

/**
 * A catch-up subscription: it delivers stored events from its start, then live ones, in order, with no gap
 * and no duplicate. Iterate it with `for await`; `stop()` ends the iteration cleanly.
 */
export interface Subscription extends AsyncIterable<RecordedEvent> {
  stop(): Promise<void>;
  /**
   * Calls the listener whenever the subscription has read up to the head of the store (caught up, live): proof
   * that the store answers, even when no event comes. Optional: an adapter that cannot tell leaves it out.
   */
  onCaughtUp?(listener: () => void): void;
}

export interface EventStore {
  /** Appends events to one stream atomically and contiguously, if the stream is at the expected revision. */
  append(stream: string, events: NewEvent[], expectedRevision: ExpectedRevision): Promise<AppendResult>;
  /**
   * Appends to several streams, each checked against its own expected revision, all or nothing.
   * Results come back in the order of the requests. A stream may appear only once per call.
   */
  appendMulti(requests: StreamAppend[]): Promise<AppendResult[]>;
  readStream(stream: string, options?: ReadStreamOptions): Promise<RecordedEvent[]>;
  readAll(options?: ReadAllOptions): Promise<RecordedEvent[]>;
  /** Position of the newest event, or 0 for an empty store. */
  headPosition(): Promise<number>;
  subscribeToAll(options: SubscribeOptions): Subscription;
  close(): Promise<void>;
}

/** The stream was not at the revision the appender expected. Carries what it really was. */
export class WrongExpectedVersionError extends Error {
  readonly code = 'WRONG_EXPECTED_VERSION';
  readonly stream: string;
  readonly expected: ExpectedRevision;
  /** The stream's current revision, or 'no_stream' when it does not exist. */
  readonly actual: number | 'no_stream';
  // Fields assigned in the body, not as parameter properties: the embedded store's commit thread loads this module
  // with Node's own type stripping, which takes only erasable TypeScript.
  constructor(stream: string, expected: ExpectedRevision, actual: number | 'no_stream') {
    super(`stream ${stream}: expected revision ${String(expected)}, actual ${String(actual)}`);
    this.name = 'WrongExpectedVersionError';
    this.stream = stream;
    this.expected = expected;
    this.actual = actual;
  }
}

/**
 * The store could not be reached or failed for a reason unrelated to the request. With `outcomeUnknown`, an
 * append may have committed all the same (its COMMIT got no answer, or the caller stopped waiting for it): never
 * report it as failed; a retry that reads again (an Idempotency-Key) finds what happened.
 */
export class EventStoreUnavailableError extends Error {
  readonly code = 'EVENT_STORE_UNAVAILABLE';
  readonly outcomeUnknown: boolean;
  constructor(message: string, options?: { cause?: unknown; outcomeUnknown?: boolean }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'EventStoreUnavailableError';
    this.outcomeUnknown = options?.outcomeUnknown ?? false;
  }
}

export function matchesFilter(event: Pick<RecordedEvent, 'stream' | 'type'>, filter?: EventFilter): boolean {
  if (!filter) return true;
  if (filter.streamPrefixes && !filter.streamPrefixes.some((prefix) => event.stream.startsWith(prefix))) return false;
  if (filter.eventTypes && !filter.eventTypes.includes(event.type)) return false;
  return true;
}

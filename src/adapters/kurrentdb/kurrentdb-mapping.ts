/**
 * The pure half of the KurrentDB adapter: how the EventStore port's values map to the client's
 * (@kurrent/kurrentdb-client) and back. No I/O here, so every rule is unit-tested without a server
 * (test/adapters/kurrentdb-mapping.test.ts); kurrentdb-event-store.ts does the calls.
 *
 * ## Positions
 *
 * KurrentDB addresses an event in `$all` by `{commit, prepare}`, two byte offsets in its transaction log.
 * Do the events of one multi-event append share a commit position? In KurrentDB's own $all reader
 * (`src/KurrentDB.Core/Services/Storage/ReaderIndex/AllReader.cs` in kurrent-io/KurrentDB), a record written
 * by an ordinary append is an "implicitly committed" prepare (flag `IsCommitted`), and it is returned as
 * `new CommitEventRecord(eventRecord, prepare.LogPosition)`: commit = prepare = the event's own log position.
 * So no: every event of an append has its own position, commit equals prepare, and positions grow in log
 * order, which is commit order. (Only the legacy explicit transactions of the removed TCP API wrote a
 * separate commit record; their events share the commit position and differ by prepare position. The same
 * conclusion is stated by a maintainer in EventStore/EventStore#3989: "prepare position can only be different
 * if you use explicit transactions".) The adapter therefore uses the commit position, and refuses an event
 * whose commit and prepare differ rather than hand out a number that is not unique: should a server ever
 * return one (for instance if multi-stream appends were written as explicit transactions, which the sources
 * read here do not suggest), the contract suite run against it says so at once.
 *
 * The port's number is **four times** the log position. Callers do arithmetic on positions: they read
 * "everything after P" from `P + 1` (inclusive), and the executor keeps `P - 1` as its checkpoint so that the
 * approval at P is delivered again after a restart. KurrentDB, though, refuses to read $all from an offset
 * that is not the start of a record (an "invalid position" error, kurrent-io/KurrentDB#3991 and #4128).
 * With every event at a multiple of 4, a number just after an event (4L + 1, or 4L + 2) and one just before
 * an event (4L - 1) are told apart, and each is turned into a position the server accepts: reads start at
 * the event itself (dropping it here when it lies before the number), and a subscription that must include
 * the event at L starts after the event before it, found with a one-event backward read. So the server is
 * only ever given positions of real events (or the start), and the port's numbers still strictly increase in
 * commit order. Other numbers between two events are not meaningful; none of the callers makes one. A log
 * position must stay below 2^51 (2 PiB).
 */
import {
  type AppendStreamRequest,
  type AppendStreamState,
  type EventData,
  type Filter,
  type Position,
  type ReadPosition,
  type ResolvedEvent,
  ANY,
  AccessDeniedError as ClientAccessDeniedError,
  AppendConsistencyViolationError as ClientAppendConsistencyViolationError,
  AppendRecordSizeExceededError as ClientAppendRecordSizeExceededError,
  InvalidArgumentError as ClientInvalidArgumentError,
  InvalidTransactionError as ClientInvalidTransactionError,
  MaxAppendSizeExceededError as ClientMaxAppendSizeExceededError,
  RequiredMetadataPropertyMissingError as ClientRequiredMetadataPropertyMissingError,
  StreamDeletedError as ClientStreamDeletedError,
  StreamTombstonedError as ClientStreamTombstonedError,
  TransactionMaxSizeExceededError as ClientTransactionMaxSizeExceededError,
  NO_STREAM,
  START,
  STREAM_EXISTS,
  eventTypeFilter,
  excludeSystemEvents,
  jsonEvent,
  streamNameFilter,
  StreamNotFoundError as ClientStreamNotFoundError,
  UnsupportedError as ClientUnsupportedError,
  WrongExpectedVersionError as ClientWrongExpectedVersionError,
} from '@kurrent/kurrentdb-client';
import {
  type EventFilter,
  type EventMetadata,
  type ExpectedRevision,
  type NewEvent,
  type RecordedEvent,
  type StreamAppend,
  EventStoreUnavailableError,
  WrongExpectedVersionError,
  matchesFilter,
} from '../../ports/event-store.ts';

/** Streams and event types starting with `$` belong to KurrentDB itself (stats, metadata, projections). */
export const SYSTEM_PREFIX = '$';

export function isSystemEvent(stream: string, type: string): boolean {
  return stream.startsWith(SYSTEM_PREFIX) || type.startsWith(SYSTEM_PREFIX);
}

// ---------------------------------------------------------------------------------------------- positions

/** Port numbers per log byte: room for "just after" (+1, +2) and "just before" (-1) an event. */
export const POSITION_SCALE = 4;
const MAX_LOG_POSITION = BigInt(Math.floor(Number.MAX_SAFE_INTEGER / POSITION_SCALE));

/** The port's number for a KurrentDB position: four times the (unique) log position. */
export function toPortPosition(position: Position | undefined): number {
  if (!position)
    throw new EventStoreUnavailableError(
      'KurrentDB returned an event without a position (KurrentDB 22.6 or newer is required)',
    );
  const { commit, prepare } = position;
  if (commit !== prepare) {
    throw new EventStoreUnavailableError(
      `the event at commit position ${commit} / prepare position ${prepare} was written by a legacy explicit ` +
        'transaction; its events share one commit position, which the port cannot number uniquely',
    );
  }
  if (commit < 0n || commit > MAX_LOG_POSITION)
    throw new EventStoreUnavailableError(`log position ${commit} is out of the range the port can number`);
  return Number(commit) * POSITION_SCALE;
}

/** The log position at or just below a port number. */
export function toLogPosition(portPosition: number): bigint {
  checkNonNegativeInteger('position', portPosition);
  return BigInt(Math.floor(portPosition / POSITION_SCALE));
}

/** A number just before an event (4L - 1): the event at L comes next. */
function isJustBefore(portPosition: number): boolean {
  return portPosition % POSITION_SCALE === POSITION_SCALE - 1;
}

function logPosition(log: bigint): ReadPosition {
  return log === 0n ? START : { commit: log, prepare: log };
}

export interface ReadStart {
  /** Where to ask the server to start (inclusive for reads, exclusive for subscriptions). */
  from: ReadPosition;
  /** Events below this port position are dropped on our side. */
  minimum: number;
}

/** A read of $all from a port position, inclusive. */
export function readAllStart(fromPosition: number): ReadStart {
  checkNonNegativeInteger('fromPosition', fromPosition);
  if (fromPosition < POSITION_SCALE) return { from: START, minimum: fromPosition };
  const log = toLogPosition(fromPosition);
  // Just before an event: read from that event; otherwise from the event at or just below the number.
  return { from: logPosition(isJustBefore(fromPosition) ? log + 1n : log), minimum: fromPosition };
}

export interface SubscriptionStart {
  /** Where the server subscription starts (exclusive), when it is known without asking the server. */
  from?: ReadPosition;
  /**
   * Otherwise the log position of the event the subscription must include first: the server is then asked
   * for the event before it (a one-event backward read), and the subscription starts after that one.
   */
  includeFrom?: bigint;
  /** Events below this port position are not delivered. */
  minimum: number;
}

/**
 * A subscription's start: `'start'` for every event, or a checkpoint, after which delivery begins. The server
 * itself skips events at or before the position it is given (AllSubscription's catch-up compares positions),
 * and `minimum` drops them again on our side.
 */
export function subscriptionStart(from: 'start' | number): SubscriptionStart {
  if (from === 'start') return { from: START, minimum: 0 };
  checkNonNegativeInteger('from', from);
  if (from < POSITION_SCALE) return { from: START, minimum: from + 1 };
  if (isJustBefore(from)) return { includeFrom: toLogPosition(from) + 1n, minimum: from + 1 };
  return { from: logPosition(toLogPosition(from)), minimum: from + 1 };
}

// ---------------------------------------------------------------------------------------------- revisions

/** The port's expected revision as the client's stream state. */
export function toStreamState(expected: ExpectedRevision): AppendStreamState {
  switch (expected) {
    case 'no_stream':
      return NO_STREAM;
    case 'stream_exists':
      return STREAM_EXISTS;
    case 'any':
      return ANY;
    default:
      checkNonNegativeInteger('expected revision', expected);
      return BigInt(expected);
  }
}

/** The client's actual stream state (a revision, or "no_stream"; negative codes for deleted streams) as the port's. */
export function fromActualState(actual: unknown): number | 'no_stream' {
  if (typeof actual === 'bigint') return actual < 0n ? 'no_stream' : toSafeNumber(actual, 'revision');
  if (typeof actual === 'number') return actual < 0 ? 'no_stream' : actual;
  return 'no_stream';
}

export function toSafeNumber(value: bigint | number, what: string): number {
  const number = Number(value);
  if (!Number.isSafeInteger(number))
    throw new EventStoreUnavailableError(`${what} ${String(value)} is beyond what the port can number`);
  return number;
}

// ---------------------------------------------------------------------------------------------- filters

/** A filter that matches nothing: the port's "an empty list matches nothing". */
export function matchesNothing(filter: EventFilter | undefined): boolean {
  return filter?.streamPrefixes?.length === 0 || filter?.eventTypes?.length === 0;
}

/**
 * Escapes text for a .NET regular expression (KurrentDB's server-side filters), so that it matches itself:
 * every character that has a meaning in a pattern gets a backslash, which before a non-word character always
 * means "this character literally".
 */
export function escapeRegex(text: string): string {
  return text.replace(/[\\^$.|?*+()[\]{}#\-\s]/g, (char) =>
    char === '\n' ? '\\n' : char === '\r' ? '\\r' : char === '\t' ? '\\t' : `\\${char}`,
  );
}

/**
 * The server-side half of a port filter. KurrentDB filters on either the stream name or the event type, not
 * both, so the event types are sent (exact names, anchored and escaped) when there are any, else the stream
 * prefixes (as an anchored, escaped regex: compared character by character, unlike the server's prefix filter,
 * which uses a culture-aware StartsWith), else a filter that leaves out system events. The full port filter
 * is applied again on our side (`keep`), so the server only has to return a superset.
 */
export function toServerFilter(filter: EventFilter | undefined): Filter {
  if (filter?.eventTypes && filter.eventTypes.length > 0) {
    return eventTypeFilter({ regex: `^(?:${filter.eventTypes.map(escapeRegex).join('|')})$` });
  }
  if (filter?.streamPrefixes && filter.streamPrefixes.length > 0) {
    return streamNameFilter({ regex: `^(?:${filter.streamPrefixes.map(escapeRegex).join('|')})` });
  }
  return excludeSystemEvents();
}

/** Whether an event read from the server belongs in the port's answer: not a system event, matching the filter. */
export function keep(
  event: Pick<RecordedEvent, 'stream' | 'type' | 'position'>,
  filter: EventFilter | undefined,
  minimum: number,
): boolean {
  return event.position >= minimum && !isSystemEvent(event.stream, event.type) && matchesFilter(event, filter);
}

// ---------------------------------------------------------------------------------------------- appends

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export interface PreparedAppend {
  stream: string;
  expectedRevision: ExpectedRevision;
  events: EventData[];
}

/**
 * Validates an append call the way the embedded store does (same messages), and builds the client's events.
 * Throws a plain Error describing the first problem; nothing is sent then.
 */
export function prepareAppends(requests: StreamAppend[]): PreparedAppend[] {
  if (!Array.isArray(requests) || requests.length === 0) throw new Error('appendMulti needs at least one stream');
  const seen = new Set<string>();
  return requests.map(({ stream, events, expectedRevision }) => {
    if (typeof stream !== 'string' || stream === '') throw new Error('a stream name must be a non-empty string');
    if (stream.startsWith(SYSTEM_PREFIX))
      throw new Error(`stream ${stream}: names starting with ${SYSTEM_PREFIX} are KurrentDB's own`);
    if (seen.has(stream)) throw new Error(`stream ${stream} appears more than once in one appendMulti call`);
    seen.add(stream);
    toStreamState(expectedRevision);
    if (!Array.isArray(events) || events.length === 0) throw new Error(`cannot append zero events to stream ${stream}`);
    return { stream, expectedRevision, events: events.map((event) => toEventData(stream, event)) };
  });
}

function toEventData(stream: string, event: NewEvent): EventData {
  if (typeof event.type !== 'string' || event.type === '') throw new Error(`an event for ${stream} has no type`);
  if (event.type.startsWith(SYSTEM_PREFIX))
    throw new Error(`event type ${event.type}: types starting with ${SYSTEM_PREFIX} are KurrentDB's own`);
  if (event.id !== undefined && !UUID.test(event.id)) throw new Error(`event id ${event.id} is not a uuid`);
  // What JSON.stringify cannot write would not read back the same (the embedded store refuses it too).
  if (JSON.stringify(event.data) === undefined)
    throw new Error(`the data of a ${event.type} event is not JSON-serializable`);
  const metadata = plainMetadata(event.type, event.metadata);
  return jsonEvent({
    type: event.type,
    data: event.data as never,
    metadata,
    ...(event.id === undefined ? {} : { id: event.id }),
  }) as EventData;
}

/** Metadata as JSON would store it: undefined values dropped; `$` keys refused (reserved, and dropped on read). */
function plainMetadata(type: string, metadata: EventMetadata | undefined): Record<string, unknown> {
  if (metadata === undefined) return {};
  if (metadata === null || typeof metadata !== 'object' || Array.isArray(metadata))
    throw new Error(`the metadata of a ${type} event must be an object`);
  const serialized = JSON.stringify(metadata);
  const plain = JSON.parse(serialized) as Record<string, unknown>;
  for (const key of Object.keys(plain)) {
    if (key.startsWith(SYSTEM_PREFIX))
      throw new Error(
        `metadata key ${key} of a ${type} event: keys starting with ${SYSTEM_PREFIX} are KurrentDB's own`,
      );
  }
  return plain;
}

/**
 * The requests of a multi-stream append (KurrentDB 25.1+). That API carries metadata as properties whose
 * values are strings (they come back as the event's metadata, next to the server's `$schema.*` keys), so a
 * non-string value is refused here: it would not read back as it was written.
 */
export function toMultiStreamRequests(prepared: PreparedAppend[]): AppendStreamRequest[] {
  return prepared.map(({ stream, expectedRevision, events }) => {
    for (const event of events) {
      for (const [key, value] of Object.entries((event.metadata ?? {}) as Record<string, unknown>)) {
        if (typeof value !== 'string') {
          throw new Error(
            `metadata ${key} of a ${event.type} event for ${stream} is not a string: KurrentDB's multi-stream ` +
              'append keeps only string metadata values',
          );
        }
      }
    }
    return { streamName: stream, events, expectedState: toStreamState(expectedRevision) };
  });
}

// ---------------------------------------------------------------------------------------------- events

/** A recorded event from the client as the port's, or null when there is nothing to map (a link to nothing). */
export function toRecordedEvent(resolved: ResolvedEvent): RecordedEvent | null {
  const event = resolved.event;
  if (!event) return null;
  return {
    id: event.id,
    type: event.type,
    data: event.data as unknown,
    metadata: portMetadata(event.metadata),
    stream: event.streamId,
    revision: toSafeNumber(event.revision, 'revision'),
    position: toPortPosition(event.position),
    createdAt: event.created.toISOString(),
  };
}

/** The stored metadata object without the keys KurrentDB adds (`$schema.*`, `$traceId`, ...); {} when absent. */
export function portMetadata(metadata: unknown): EventMetadata {
  if (metadata === null || typeof metadata !== 'object' || Array.isArray(metadata) || metadata instanceof Uint8Array)
    return {};
  return Object.fromEntries(Object.entries(metadata).filter(([key]) => !key.startsWith(SYSTEM_PREFIX)));
}

// ---------------------------------------------------------------------------------------------- errors

/** An error of the gRPC transport with status UNAVAILABLE (14): what a failed connection gives appends. */
function isTransportUnavailable(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === 14;
}

/**
 * KurrentDB refused the request for a reason that no retry changes: access denied (e.g. a user without read
 * access to $all), a deleted or tombstoned stream, an append or record over the server's size limits, an
 * invalid argument, a server too old for a feature. Deliberately not EventStoreUnavailableError: that one means
 * "retry later", and a consumer or a client would retry this for ever. The API answers it as an internal
 * error (500) and logs it; an operator must act (grant the right, raise the limit, upgrade the server).
 */
export class KurrentDbRefusedError extends Error {
  readonly code = 'EVENT_STORE_REFUSED';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'KurrentDbRefusedError';
  }
}

/** The client's error classes that say the request itself is refused (see KurrentDbRefusedError). */
const REFUSALS = [
  ClientAccessDeniedError,
  ClientStreamDeletedError,
  ClientStreamTombstonedError,
  ClientMaxAppendSizeExceededError,
  ClientAppendRecordSizeExceededError,
  ClientTransactionMaxSizeExceededError,
  ClientInvalidArgumentError,
  ClientInvalidTransactionError,
  ClientRequiredMetadataPropertyMissingError,
  ClientAppendConsistencyViolationError,
];

/**
 * gRPC statuses that refuse the request itself, for errors the client leaves unclassified (an UnknownError or a
 * plain error carrying the status code): INVALID_ARGUMENT, PERMISSION_DENIED, FAILED_PRECONDITION, OUT_OF_RANGE,
 * UNIMPLEMENTED, UNAUTHENTICATED. The others (UNKNOWN, DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED, ABORTED, INTERNAL,
 * UNAVAILABLE, …) may pass.
 */
const REFUSING_GRPC_CODES = new Set([3, 7, 9, 11, 12, 16]);

function isRefusal(error: unknown): boolean {
  if (REFUSALS.some((refusal) => error instanceof refusal)) return true;
  const code = typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined;
  return typeof code === 'number' && REFUSING_GRPC_CODES.has(code);
}

/**
 * Translates what the client threw into the port's errors: a wrong expected version (with the revision the
 * caller expected for that stream), a permanent refusal (KurrentDbRefusedError, see above), and anything else as
 * EventStoreUnavailableError: unreachable (`UnavailableError` on reads, a plain error with code 14 on appends),
 * timeouts and deadlines, not-leader, and errors the client does not classify. (A missing stream on reads is
 * `isStreamNotFound`, answered as "no events" by the caller.)
 */
export function translateError(error: unknown, expected?: ReadonlyMap<string, ExpectedRevision>): Error {
  if (
    error instanceof WrongExpectedVersionError ||
    error instanceof EventStoreUnavailableError ||
    error instanceof KurrentDbRefusedError
  )
    return error;
  if (error instanceof ClientWrongExpectedVersionError) {
    const stream = error.streamName ?? (expected?.size === 1 ? [...expected.keys()][0]! : 'unknown stream');
    const expectedRevision = expected?.get(stream) ?? fromClientState(error.expectedState);
    return new WrongExpectedVersionError(stream, expectedRevision, fromActualState(error.actualState));
  }
  if (error instanceof ClientUnsupportedError) {
    return new KurrentDbRefusedError(
      `this KurrentDB server does not support ${error.feature} (KurrentDB ${error.minimumVersion} or newer is ` +
        'required)',
      { cause: error },
    );
  }
  const reason = error instanceof Error ? error.message : String(error);
  if (isRefusal(error)) return new KurrentDbRefusedError(`KurrentDB refused the request: ${reason}`, { cause: error });
  if (isTransportUnavailable(error))
    return new EventStoreUnavailableError(`KurrentDB is unreachable: ${reason}`, { cause: error });
  return new EventStoreUnavailableError(`KurrentDB failed: ${reason}`, { cause: error });
}

export function isStreamNotFound(error: unknown): boolean {
  return error instanceof ClientStreamNotFoundError;
}

function fromClientState(state: unknown): ExpectedRevision {
  if (state === NO_STREAM || state === STREAM_EXISTS || state === ANY) return state;
  if (typeof state === 'bigint' && state >= 0n) return Number(state);
  return 'any';
}

function checkNonNegativeInteger(name: string, value: number): void {
  if (!Number.isSafeInteger(value) || value < 0)
    throw new Error(`${name} must be an integer >= 0, got ${String(value)}`);
}

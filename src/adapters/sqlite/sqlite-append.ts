import { randomUUID } from 'node:crypto';
import Database from 'better-sqlite3';
import {
  type AppendResult,
  type ExpectedRevision,
  SERIALIZED_JSON,
  type StreamAppend,
  WrongExpectedVersionError,
} from '../../ports/event-store.ts';

/** An event ready for INSERT: id chosen, JSON serialized. Done before queueing so the write lock is held briefly. */
export interface PreparedEvent {
  id: string;
  type: string;
  data: string;
  metadata: string;
}

export interface PreparedAppend {
  stream: string;
  expectedRevision: ExpectedRevision;
  events: PreparedEvent[];
}

/** Two events with one id. Not deduplicated: reusing an id is a bug in the caller, not a retry to absorb. */
export class DuplicateEventIdError extends Error {
  readonly code = 'DUPLICATE_EVENT_ID';
  readonly eventId: string;
  constructor(eventId: string) {
    super(`an event with id ${eventId} is already stored`);
    this.name = 'DuplicateEventIdError';
    this.eventId = eventId;
  }
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Validates and serializes an append call; throws a plain Error describing the first problem. */
export function prepareAppends(requests: StreamAppend[]): PreparedAppend[] {
  if (requests.length === 0) throw new Error('appendMulti needs at least one stream');
  const seen = new Set<string>();
  return requests.map(({ stream, events, expectedRevision }) => {
    if (typeof stream !== 'string' || stream === '') throw new Error('a stream name must be a non-empty string');
    if (seen.has(stream)) throw new Error(`stream ${stream} appears more than once in one appendMulti call`);
    seen.add(stream);
    checkExpectedRevision(expectedRevision);
    if (events.length === 0) throw new Error(`cannot append zero events to stream ${stream}`);
    return { stream, expectedRevision, events: events.map((event) => prepareEvent(stream, event)) };
  });
}

function prepareEvent(stream: string, event: StreamAppend['events'][number]): PreparedEvent {
  if (typeof event.type !== 'string' || event.type === '') throw new Error(`an event for ${stream} has no type`);
  if (event.id !== undefined && !UUID.test(event.id)) throw new Error(`event id ${event.id} is not a uuid`);
  // Serialized already by the hash chain (its canonical JSON): not a second time.
  const serialized = event[SERIALIZED_JSON];
  if (serialized)
    return { id: event.id ?? randomUUID(), type: event.type, data: serialized.data, metadata: serialized.metadata };
  const data = JSON.stringify(event.data);
  // JSON.stringify returns undefined for undefined, functions and symbols: they would not read back the same.
  if (data === undefined) throw new Error(`the data of a ${event.type} event is not JSON-serializable`);
  return { id: event.id ?? randomUUID(), type: event.type, data, metadata: JSON.stringify(event.metadata ?? {}) };
}

function checkExpectedRevision(expected: ExpectedRevision): void {
  if (expected === 'no_stream' || expected === 'stream_exists' || expected === 'any') return;
  if (!Number.isSafeInteger(expected) || expected < 0) {
    throw new Error(
      `expected revision must be 'no_stream', 'stream_exists', 'any' or a revision >= 0, got ${String(expected)}`,
    );
  }
}

/** Errors that concern one append call only; the group commit rolls that call back and commits the others. */
export function isAppendRequestError(error: unknown): boolean {
  if (error instanceof WrongExpectedVersionError || error instanceof DuplicateEventIdError) return true;
  return error instanceof Database.SqliteError && /^SQLITE_(CONSTRAINT|TOOBIG)/.test(error.code);
}

/** The writes of an append. Must run inside a transaction: it reads a revision and then writes after it. */
export class AppendWriter {
  private readonly streamRevision;
  private readonly eventIdExists;
  private readonly insertEvent;
  private readonly saveRevision;

  constructor(db: Database.Database) {
    this.streamRevision = db.prepare<[string], number>('SELECT revision FROM streams WHERE stream = ?').pluck();
    this.eventIdExists = db.prepare<[string], number>('SELECT 1 FROM events WHERE id = ?').pluck();
    this.insertEvent = db.prepare<[string, string, number, string, string, string, string]>(
      'INSERT INTO events (id, stream, revision, type, data, metadata, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
    );
    this.saveRevision = db.prepare<[string, number]>(
      'INSERT INTO streams (stream, revision) VALUES (?, ?) ON CONFLICT (stream) DO UPDATE SET revision = ' +
        'excluded.revision',
    );
  }

  /** All requests or none: the caller's savepoint undoes the earlier streams when a later one throws. */
  write(requests: PreparedAppend[]): AppendResult[] {
    const createdAt = new Date().toISOString();
    return requests.map((request) => this.writeStream(request, createdAt));
  }

  private writeStream({ stream, expectedRevision, events }: PreparedAppend, createdAt: string): AppendResult {
    const current = this.streamRevision.get(stream);
    if (!revisionMatches(expectedRevision, current)) {
      throw new WrongExpectedVersionError(stream, expectedRevision, current ?? 'no_stream');
    }
    let revision = current ?? -1;
    let position = 0;
    for (const event of events) {
      revision += 1;
      position = this.insert(stream, revision, event, createdAt);
    }
    this.saveRevision.run(stream, revision);
    return { nextExpectedRevision: revision, position };
  }

  private insert(stream: string, revision: number, event: PreparedEvent, createdAt: string): number {
    try {
      const { lastInsertRowid } = this.insertEvent.run(
        event.id,
        stream,
        revision,
        event.type,
        event.data,
        event.metadata,
        createdAt,
      );
      return Number(lastInsertRowid);
    } catch (error) {
      // Which UNIQUE failed is looked up only on failure, so the common path stays one statement per event.
      if (
        error instanceof Database.SqliteError &&
        error.code === 'SQLITE_CONSTRAINT_UNIQUE' &&
        this.eventIdExists.get(event.id)
      ) {
        throw new DuplicateEventIdError(event.id);
      }
      throw error;
    }
  }
}

/** Whether a stream at `current` (undefined: no stream) satisfies the expected revision. */
export function revisionMatches(expected: ExpectedRevision, current: number | undefined): boolean {
  switch (expected) {
    case 'any':
      return true;
    case 'no_stream':
      return current === undefined;
    case 'stream_exists':
      return current !== undefined;
    default:
      return current === expected;
  }
}

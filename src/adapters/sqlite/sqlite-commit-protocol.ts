/**
 * What the event loop and the commit thread say to each other (sqlite-commit-thread.ts): a batch of appends, and
 * its outcomes. Errors cross the thread as plain data and are rebuilt as the same classes, so that callers (the
 * group commit's busy retry, the pipeline's conflict handling) see what they would see without the thread.
 */
import Database from 'better-sqlite3';
import { type AppendResult, WrongExpectedVersionError, type ExpectedRevision } from '../../ports/event-store.ts';
import { DuplicateEventIdError, type PreparedAppend } from './sqlite-append.ts';

export interface CommitRequest {
  id: number;
  requests: PreparedAppend[][];
}

export type SerializedError =
  | { kind: 'wrong-expected-version'; stream: string; expected: ExpectedRevision; actual: number | 'no_stream' }
  | { kind: 'duplicate-event-id'; eventId: string }
  | { kind: 'sqlite'; message: string; code: string }
  | { kind: 'other'; message: string };

export type CommitReply =
  | { id: number; outcomes: Array<{ ok: true; result: AppendResult[] } | { ok: false; error: SerializedError }> }
  | { id: number; error: SerializedError };

export function serializeCommitError(error: unknown): SerializedError {
  if (error instanceof WrongExpectedVersionError)
    return { kind: 'wrong-expected-version', stream: error.stream, expected: error.expected, actual: error.actual };
  if (error instanceof DuplicateEventIdError) return { kind: 'duplicate-event-id', eventId: error.eventId };
  if (error instanceof Database.SqliteError) return { kind: 'sqlite', message: error.message, code: error.code };
  return { kind: 'other', message: error instanceof Error ? error.message : String(error) };
}

export function deserializeCommitError(error: SerializedError): Error {
  switch (error.kind) {
    case 'wrong-expected-version':
      return new WrongExpectedVersionError(error.stream, error.expected, error.actual);
    case 'duplicate-event-id':
      return new DuplicateEventIdError(error.eventId);
    case 'sqlite':
      return new Database.SqliteError(error.message, error.code);
    default:
      return new Error(`the commit thread failed: ${error.message}`);
  }
}

/**
 * The embedded event store's commit thread (see sqlite-commit-thread.ts): its own connection to the file, on which
 * it runs each batch of appends it is sent in one transaction, fsync included, and answers with the outcomes.
 * Loaded with Node's type stripping where no TypeScript loader is registered: erasable syntax only here and in
 * what it imports.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { AppendWriter, isAppendRequestError, type PreparedAppend } from './sqlite-append.ts';
import { type CommitReply, type CommitRequest, serializeCommitError } from './sqlite-commit-protocol.ts';
import { openSqliteDatabase } from './sqlite-database.ts';
import { SavepointBatch } from './sqlite-group-commit.ts';

const { file } = workerData as { file: string };
const db = openSqliteDatabase(file);
const writer = new AppendWriter(db);
const batch = new SavepointBatch(db, (requests: PreparedAppend[]) => writer.write(requests), isAppendRequestError);

// Told once the connection is open: batches are sent from then on (until then they commit on the event loop).
parentPort!.postMessage('ready');
parentPort!.on('message', ({ id, requests }: CommitRequest) => {
  let reply: CommitReply;
  try {
    const outcomes = batch
      .run(requests)
      .map((outcome) => (outcome.ok ? outcome : { ok: false as const, error: serializeCommitError(outcome.error) }));
    reply = { id, outcomes };
  } catch (error) {
    reply = { id, error: serializeCommitError(error) };
  }
  parentPort!.postMessage(reply);
});

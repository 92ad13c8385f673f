import { createReadStream, closeSync, fchmodSync, fstatSync, openSync, readSync, writeSync } from 'node:fs';
import { createInterface } from 'node:readline';
import type { EventStore, NewEvent, RecordedEvent, StreamAppend } from '../ports/event-store.ts';
import { ChainChecker, type AuditProblem } from './verify.ts';
import { storedHash as hashOf } from './hash-chain.ts';
import { type HistorySealedData, type RecordedSeal, SEALS_STREAM, SealChecker } from './seals.ts';

/**
 * `events export` and `events import`: the history as JSON Lines, one event per line in global order:
 *   {"id","stream","revision","type","data","metadata","position","createdAt"}
 * An export of the whole history imported into an empty store (embedded or KurrentDB) gives the same
 * streams, revisions, ids, types, data and metadata, hence the same hashes and seals; positions and
 * commit times are the new store's (the port cannot set them).
 *
 * The last line is the end marker, `{"endOfExport":{"events","lastID","lastHash","lastPosition","whole"}}`:
 * written only once every event is, it tells a complete export from one cut short (a killed export, a
 * truncated copy), which `events import` refuses, and it is what `audit verify --expect` checks a store against.
 */
export interface EndOfExport {
  /** Events in the file. */
  events: number;
  /** The last event's id and the hash it carries (null for an empty export). */
  lastID: string | null;
  lastHash: string | null;
  /** Its position in the exported store. */
  lastPosition: number | null;
  /**
   * The whole history up to the head at the time (no --from-position, --to-position before the head or
   * --stream-prefix).
   */
  whole: boolean;
}

export const END_MARKER = 'endOfExport';
export interface ExportOptions {
  fromPosition?: number;
  toPosition?: number;
  streamPrefix?: string;
  pageSize?: number;
  onProgress?: (position: number, head: number) => void;
}

export interface ExportResult {
  events: number;
  file: string;
  firstPosition: number | null;
  lastPosition: number | null;
}

export async function exportEvents(
  store: EventStore,
  file: string,
  options: ExportOptions = {},
): Promise<ExportResult> {
  const head = await store.headPosition();
  const to = Math.min(options.toPosition ?? head, head);
  const pageSize = options.pageSize ?? 5000;
  const filter = options.streamPrefix !== undefined ? { streamPrefixes: [options.streamPrefix] } : undefined;
  // The history is the owner's alone: created 0600, and a file it replaces is narrowed to 0600 before a byte is
  // written.
  const fd = openSync(file, 'w', 0o600);
  fchmodSync(fd, 0o600);
  const result: ExportResult = { events: 0, file, firstPosition: null, lastPosition: null };
  let last: RecordedEvent | undefined;
  try {
    let from = options.fromPosition ?? 0;
    while (from <= to) {
      const page = await store.readAll({
        fromPosition: from,
        toPosition: to,
        maxCount: pageSize,
        ...(filter ? { filter } : {}),
      });
      if (page.length === 0) break;
      let chunk = '';
      for (const event of page) chunk += `${exportLine(event)}\n`;
      writeSync(fd, chunk);
      result.events += page.length;
      result.firstPosition ??= page[0]!.position;
      result.lastPosition = page[page.length - 1]!.position;
      from = result.lastPosition + 1;
      last = page[page.length - 1];
      options.onProgress?.(result.lastPosition, to);
    }
    const whole = (options.fromPosition ?? 0) <= 1 && to === head && filter === undefined;
    const end: EndOfExport = {
      events: result.events,
      lastID: last?.id ?? null,
      lastHash: last ? hashOf(last) : null,
      lastPosition: result.lastPosition,
      whole,
    };
    writeSync(fd, `${JSON.stringify({ [END_MARKER]: end })}\n`);
  } finally {
    closeSync(fd);
  }
  return result;
}

export function exportLine(event: RecordedEvent): string {
  const { id, stream, revision, type, data, metadata, position, createdAt } = event;
  return JSON.stringify({ id, stream, revision, type, data, metadata, position, createdAt });
}

/** The file cannot be imported: what is wrong with it, or with the target. */
export class ImportRefusedError extends Error {
  readonly problems: AuditProblem[];
  constructor(message: string, problems: AuditProblem[] = []) {
    super(message);
    this.problems = problems;
    this.name = 'ImportRefusedError';
  }
}

async function* readLines(file: string): AsyncGenerator<{ line: string; number: number }> {
  const lines = createInterface({
    input: createReadStream(file, { encoding: 'utf8', highWaterMark: 1 << 20 }),
    crlfDelay: Infinity,
  });
  let number = 0;
  for await (const line of lines) {
    number += 1;
    if (line.trim() !== '') yield { line, number };
  }
}

type Entry = { event: RecordedEvent; end?: undefined } | { end: EndOfExport; event?: undefined };

function parseEntry(line: string, number: number): Entry {
  let value: Partial<RecordedEvent> & { [END_MARKER]?: EndOfExport };
  try {
    value = JSON.parse(line) as typeof value;
  } catch {
    throw new ImportRefusedError(`line ${number} is not JSON`);
  }
  const end = value[END_MARKER];
  if (end !== undefined) {
    if (typeof end !== 'object' || end === null || !Number.isSafeInteger(end.events))
      throw new ImportRefusedError(`line ${number}: the end marker is malformed`);
    return { end };
  }
  return { event: asEvent(value, number) };
}

/** The end marker of an export file, read from its tail: undefined when the file does not end with one. */
export function readEndOfExport(file: string): EndOfExport | undefined {
  const fd = openSync(file, 'r');
  try {
    const size = fstatSync(fd).size;
    const length = Math.min(size, 64 * 1024);
    const buffer = Buffer.alloc(length);
    readSync(fd, buffer, 0, length, size - length);
    const lines = buffer
      .toString('utf8')
      .split('\n')
      .filter((line) => line.trim() !== '');
    const lastLine = lines.at(-1);
    if (lastLine === undefined || !lastLine.includes(`"${END_MARKER}"`)) return undefined;
    const entry = parseEntry(lastLine, 0);
    return entry.end;
  } catch (error) {
    if (error instanceof ImportRefusedError) return undefined;
    throw error;
  } finally {
    closeSync(fd);
  }
}

function asEvent(value: Partial<RecordedEvent>, number: number): RecordedEvent {
  if (
    typeof value.id !== 'string' ||
    typeof value.stream !== 'string' ||
    typeof value.type !== 'string' ||
    !Number.isSafeInteger(value.revision) ||
    !Number.isSafeInteger(value.position) ||
    value.data === undefined ||
    typeof value.metadata !== 'object' ||
    value.metadata === null
  ) {
    throw new ImportRefusedError(
      `line ${number} is not an exported event (id, stream, revision, type, data, metadata, position)`,
    );
  }
  return value as RecordedEvent;
}

export interface ImportCheck {
  events: number;
  streams: number;
  seals: number;
  problems: AuditProblem[];
  problemCount: number;
  /** The file's end marker; undefined when it has none (a truncated export: a problem too). */
  end: EndOfExport | undefined;
}

/**
 * Checks an export before anything is written: global order (increasing positions), contiguous revisions
 * from 0 in every stream, every hash and previousHash, and every seal of the file over the events it covers.
 */
export async function checkExportFile(file: string, maxProblems = 20): Promise<ImportCheck> {
  const problems: AuditProblem[] = [];
  let problemCount = 0;
  const log = {
    add(problem: AuditProblem) {
      problemCount += 1;
      if (problems.length < maxProblems) problems.push(problem);
    },
  };
  // The seals first (few lines): the check of each range needs its seal before the range's events.
  const seals: RecordedSeal[] = [];
  for await (const { line, number } of readLines(file)) {
    if (!line.includes(`"${SEALS_STREAM}"`)) continue;
    const { event } = parseEntry(line, number);
    if (event?.stream === SEALS_STREAM)
      seals.push({ data: event.data as HistorySealedData, revision: event.revision, position: event.position });
  }
  let served = false;
  const sealChecker = new SealChecker(
    'ids',
    async () => {
      if (served) return [];
      served = true;
      return seals;
    },
    (problem) => log.add(problem),
  );
  await sealChecker.prepare(Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER);
  const chains = new ChainChecker(log);
  let events = 0;
  let lastPosition = -1;
  let end: EndOfExport | undefined;
  let last: RecordedEvent | undefined;
  for await (const { line, number } of readLines(file)) {
    const entry = parseEntry(line, number);
    if (end !== undefined) {
      log.add({ check: 'completeness', detail: `line ${number}: content after the end marker` });
      break;
    }
    if (entry.end) {
      end = entry.end;
      continue;
    }
    const event = entry.event;
    last = event;
    if (event.position <= lastPosition)
      log.add({
        check: 'chain',
        position: event.position,
        stream: event.stream,
        detail: `line ${number}: position ${event.position} after ${lastPosition} (not in global order)`,
      });
    lastPosition = event.position;
    sealChecker.feed(event, chains.check(event));
    events += 1;
  }
  await sealChecker.finish();
  if (end === undefined) {
    log.add({
      check: 'completeness',
      detail: `no end marker after ${events} events: the export is incomplete (cut short or truncated); export again`,
    });
  } else if (
    end.events !== events ||
    end.lastID !== (last?.id ?? null) ||
    end.lastHash !== (last ? hashOf(last) : null)
  ) {
    log.add({
      check: 'completeness',
      detail:
        `the end marker says ${end.events} events ending with ${end.lastID ?? '-'}, the file holds ${events} ` +
        `ending with ${last?.id ?? '-'}: the export is incomplete or altered`,
    });
  }
  return { events, streams: chains.streams, seals: seals.length, problems, problemCount, end };
}

export interface ImportResult {
  /** Events in the store from this file, those of an earlier, interrupted run included. */
  events: number;
  /** Events an earlier run had imported already (a resumed import). */
  skipped: number;
  streams: number;
  seals: number;
  appends: number;
}

const MAX_EVENTS_PER_APPEND = 1000;
/**
 * Most bytes of event data and metadata (as JSON) one append of an import carries. KurrentDB refuses a request
 * over its MaxAppendSize (1 MiB by default, counted over the records as stored, a little more than their JSON);
 * half of it leaves room for that overhead and for the per-event ids, types and stream names. An event larger
 * than this goes alone, and the store decides whether it fits.
 */
export const MAX_APPEND_BYTES = 512 * 1024;
/** Rough per-event overhead on top of data and metadata (id, type, stream name, record header). */
const EVENT_OVERHEAD_BYTES = 200;

function eventBytes(event: NewEvent, stream: string): number {
  return (
    Buffer.byteLength(JSON.stringify(event.data)) +
    Buffer.byteLength(JSON.stringify(event.metadata ?? {})) +
    Buffer.byteLength(event.type) +
    Buffer.byteLength(stream) +
    EVENT_OVERHEAD_BYTES
  );
}

/**
 * Loads an export into an empty store, refusing a file that does not verify (checkExportFile: chains, seals,
 * and its end marker, so a truncated export is refused) before writing anything. Each event is appended with
 * its original id at its original revision (the expected revision is the one before it), consecutive events
 * grouped into atomic multi-stream appends that keep the file's order, each of at most MAX_EVENTS_PER_APPEND
 * events and MAX_APPEND_BYTES of data and metadata. Pass the raw store, not the hash-chaining decorator: the
 * events carry their hashes.
 *
 * Resumable: an import killed half way left a prefix of the file in the store (each append is atomic). Run
 * again, it finds the store's events to be the file's first ones (same order, ids, streams, revisions and
 * hashes), skips them and appends the rest; a store holding anything else is refused. `onStart` is told the
 * file's end marker before the first append (the CLI records it for `audit verify`).
 */
export async function importEvents(
  store: EventStore,
  file: string,
  options: {
    onProgress?: (events: number, total: number) => void;
    onStart?: (end: EndOfExport, skipped: number) => void;
  } = {},
): Promise<ImportResult> {
  const check = await checkExportFile(file);
  if (check.problemCount > 0) {
    const first = check.problems[0]!;
    throw new ImportRefusedError(
      `the file does not verify (${check.problemCount} problem${check.problemCount === 1 ? '' : 's'}); first: ` +
        `${first.check} at position ${first.position ?? '-'}${first.stream ? ` (${first.stream})` : ''}: ` +
        `${first.detail}`,
      check.problems,
    );
  }
  const skip = await importedPrefix(store, file);
  options.onStart?.(check.end!, skip);
  let batch: StreamAppend[] = [];
  let inBatch = new Set<string>();
  let batchEvents = 0;
  let batchBytes = 0;
  const result: ImportResult = { events: skip, streams: check.streams, seals: check.seals, appends: 0, skipped: skip };
  const flush = async () => {
    if (batch.length === 0) return;
    await store.appendMulti(batch);
    result.appends += 1;
    result.events += batchEvents;
    options.onProgress?.(result.events, check.events);
    batch = [];
    inBatch = new Set();
    batchEvents = 0;
    batchBytes = 0;
  };
  let seen = 0;
  for await (const { line, number } of readLines(file)) {
    const { event } = parseEntry(line, number);
    if (!event || seen++ < skip) continue;
    const newEvent: NewEvent = { id: event.id, type: event.type, data: event.data, metadata: event.metadata };
    const bytes = eventBytes(newEvent, event.stream);
    if (batchEvents > 0 && batchBytes + bytes > MAX_APPEND_BYTES) await flush();
    const last = batch[batch.length - 1];
    if (last && last.stream === event.stream) {
      last.events.push(newEvent);
    } else {
      if (inBatch.has(event.stream)) await flush();
      batch.push({
        stream: event.stream,
        events: [newEvent],
        expectedRevision: event.revision === 0 ? 'no_stream' : event.revision - 1,
      });
      inBatch.add(event.stream);
    }
    batchEvents += 1;
    batchBytes += bytes;
    if (batchEvents >= MAX_EVENTS_PER_APPEND || batchBytes >= MAX_APPEND_BYTES) await flush();
  }
  await flush();
  return result;
}

/**
 * How many of the file's first events the store already holds, in the same order (an import of this file cut
 * short): 0 for an empty store. Anything else in the store (another history, events appended since) is refused.
 */
async function importedPrefix(store: EventStore, file: string): Promise<number> {
  const head = await store.headPosition();
  if (head === 0) return 0;
  const refuse = (why: string) =>
    new ImportRefusedError(
      `the target event store is not empty and does not hold the start of this export (${why}): an import only ` +
        'goes into an empty store, or resumes an import of the same file',
    );
  let from = 0;
  let page: RecordedEvent[] = [];
  let index = 0;
  let matched = 0;
  for await (const { line, number } of readLines(file)) {
    const { event } = parseEntry(line, number);
    if (!event) break;
    if (index === page.length) {
      page = await store.readAll({ fromPosition: from, toPosition: head, maxCount: 1000 });
      index = 0;
      if (page.length === 0) return matched;
      from = page[page.length - 1]!.position + 1;
    }
    const stored = page[index++]!;
    if (
      stored.id !== event.id ||
      stored.stream !== event.stream ||
      stored.revision !== event.revision ||
      hashOf(stored) !== hashOf(event)
    ) {
      throw refuse(
        `its event ${matched + 1} is ${stored.id} of ${stored.stream}, the file's is ${event.id} of ${event.stream}`,
      );
    }
    matched += 1;
  }
  if (index < page.length || (await store.readAll({ fromPosition: from, toPosition: head, maxCount: 1 })).length > 0) {
    throw refuse(`it holds more events than the file's ${matched}`);
  }
  return matched;
}

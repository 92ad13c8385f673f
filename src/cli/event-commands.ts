import type { Command } from 'commander';
import { openEventStore } from '../adapters/open-stores.ts';
import { loadConfig } from '../config.ts';
import type { EventStore, ExpectedRevision, NewEvent, RecordedEvent } from '../ports/event-store.ts';
import { common, progressBar, UsageError, type CommonOptions } from './support.ts';
import { cliIO } from './io.ts';

/** What a target stream holds: the revision of its last event, or nothing yet. */
export type TargetRevision = number | 'no_stream';

/** One append of the copy: consecutive events of one stream, at the revision the target stream must be at. */
export interface CopyAppend {
  stream: string;
  expectedRevision: ExpectedRevision;
  events: RecordedEvent[];
}

export interface CopyPlan {
  appends: CopyAppend[];
  /** Events already in the target (a resumed copy), left alone. */
  skipped: number;
  /** The target's revision per stream once the appends are done. */
  revisions: Map<string, TargetRevision>;
}

/** The target stream holds less than the events before this one: copying it would change its revisions. */
export class CopyGapError extends Error {
  readonly stream: string;
  readonly targetRevision: TargetRevision;
  readonly event: Pick<RecordedEvent, 'revision' | 'position'>;
  constructor(stream: string, targetRevision: TargetRevision, event: Pick<RecordedEvent, 'revision' | 'position'>) {
    super(
      `stream ${stream} is at revision ${String(targetRevision)} in the target, but the next event to copy ` +
        `(position ${event.position}) has revision ${event.revision}: the events in between are missing there ` +
        '(start from an earlier --from-position, or the target holds another history)',
    );
    this.stream = stream;
    this.targetRevision = targetRevision;
    this.event = event;
    this.name = 'CopyGapError';
  }
}

/**
 * Decides how to copy one page of the source's history (in position order) given what the target's streams
 * hold: an event whose revision the target stream already has is skipped (that is what makes the copy
 * resumable: run it again and it carries on where it stopped), the next revision is appended at the
 * revision before it (so the target gets the same revisions, and a concurrent writer makes the append fail
 * instead of interleaving), and a revision beyond the next one is a gap. Consecutive events of one stream
 * become one append; the order across streams is the source's. Pure: `revisions` must name every stream of
 * the page and is not changed.
 */
export function planCopy(page: RecordedEvent[], revisions: ReadonlyMap<string, TargetRevision>): CopyPlan {
  const next = new Map(revisions);
  const appends: CopyAppend[] = [];
  let skipped = 0;
  for (const event of page) {
    if (!next.has(event.stream)) throw new Error(`planCopy: the target revision of ${event.stream} is not known`);
    const current = next.get(event.stream)!;
    const last = current === 'no_stream' ? -1 : current;
    if (event.revision <= last) {
      skipped += 1;
      continue;
    }
    if (event.revision !== last + 1) throw new CopyGapError(event.stream, current, event);
    const previous = appends[appends.length - 1];
    if (previous && previous.stream === event.stream) previous.events.push(event);
    else appends.push({ stream: event.stream, expectedRevision: last === -1 ? 'no_stream' : last, events: [event] });
    next.set(event.stream, event.revision);
  }
  return { appends, skipped, revisions: next };
}

/** The streams of a page whose target revision is not known yet, in order of first appearance. */
export function unknownStreams(page: RecordedEvent[], revisions: ReadonlyMap<string, TargetRevision>): string[] {
  return [...new Set(page.map((event) => event.stream))].filter((stream) => !revisions.has(stream));
}

/** An event as it is appended again: same id, type, data and metadata. */
export function asNewEvent(event: RecordedEvent): NewEvent {
  return { id: event.id, type: event.type, data: event.data, metadata: event.metadata };
}

export interface CopyResult {
  copied: number;
  skipped: number;
  streams: number;
  /** Position in the source of the last event read (the next run may start after it). */
  lastPosition: number | null;
}

const PAGE_SIZE = 500;
const LOOKUP_CONCURRENCY = 16;

/**
 * Copies the source's history, from a position, into the target, page by page in position order, one
 * append at a time (so the target's order is the source's). Events appended to the source meanwhile are
 * copied too: the copy ends at the first empty page.
 */
export async function copyEvents(
  source: EventStore,
  target: EventStore,
  options: { fromPosition?: number; pageSize?: number; onProgress?: (position: number, head: number) => void } = {},
): Promise<CopyResult> {
  let revisions = new Map<string, TargetRevision>();
  let position = options.fromPosition ?? 0;
  let head = await source.headPosition();
  const result: CopyResult = { copied: 0, skipped: 0, streams: 0, lastPosition: null };
  for (;;) {
    const page = await source.readAll({ fromPosition: position, maxCount: options.pageSize ?? PAGE_SIZE });
    if (page.length === 0) break;
    const unknown = unknownStreams(page, revisions);
    for (let i = 0; i < unknown.length; i += LOOKUP_CONCURRENCY) {
      const found = await Promise.all(
        unknown
          .slice(i, i + LOOKUP_CONCURRENCY)
          .map(async (stream) => [stream, await targetRevision(target, stream)] as const),
      );
      for (const [stream, revision] of found) revisions.set(stream, revision);
    }
    const plan = planCopy(page, revisions);
    for (const append of plan.appends) {
      await target.append(append.stream, append.events.map(asNewEvent), append.expectedRevision);
      result.copied += append.events.length;
    }
    revisions = plan.revisions;
    result.skipped += plan.skipped;
    const last = page[page.length - 1]!.position;
    result.lastPosition = last;
    head = Math.max(head, last);
    options.onProgress?.(last, head);
    position = last + 1;
  }
  result.streams = revisions.size;
  return result;
}

async function targetRevision(target: EventStore, stream: string): Promise<TargetRevision> {
  const [last] = await target.readStream(stream, { direction: 'backwards', maxCount: 1 });
  return last ? last.revision : 'no_stream';
}

/** `wallet-ops events ...`: the event history itself. */
export function registerEventCommands(program: Command): void {
  const events = program
    .command('events')
    .description('the event history: export, import, and copy it from the embedded store into KurrentDB');
  common(events.command('copy'))
    .description(
      `copy the embedded store's history (--data-dir) into the KurrentDB of KURRENTDB_URL, keeping event ids, ` +
        'types, data, metadata and stream revisions (not the commit times); resumable: run it again and events ' +
        'already there are skipped. Rebuild the read models afterwards.',
    )
    .requiredOption('--to <store>', 'the target store: kurrentdb')
    .option('--from-position <position>', 'start at this position of the embedded history', '0')
    .action(async (opts: CommonOptions & { to: string; fromPosition: string }) => {
      if (opts.to !== 'kurrentdb') throw new UsageError(`--to must be kurrentdb, got "${opts.to.slice(0, 40)}"`);
      if (!/^\d{1,15}$/.test(opts.fromPosition)) throw new UsageError('--from-position must be a whole number');
      const config = loadConfig(cliIO().env);
      if (!config.KURRENTDB_URL) throw new UsageError('KURRENTDB_URL is not set: it names the KurrentDB to copy into');
      const source = await openEventStore({
        ...config,
        DATA_DIR: opts.dataDir ?? config.DATA_DIR,
        EVENT_STORE: 'embedded',
      });
      const target = await openEventStore({ ...config, EVENT_STORE: 'kurrentdb' });
      const bar = progressBar('events copy');
      let result: CopyResult;
      try {
        result = await copyEvents(source, target, {
          fromPosition: Number(opts.fromPosition),
          onProgress: (position, head) => bar.update(position, head),
        });
        bar.done();
      } finally {
        bar.stop();
        await Promise.all([source.close(), target.close()]);
      }
      cliIO().stdout(
        opts.json
          ? `${JSON.stringify(result)}\n`
          : `copied ${result.copied} events, skipped ${result.skipped} already there, ${result.streams} streams; ` +
              `last source position ${result.lastPosition ?? '-'}\nnow rebuild the read models from the new store: ` +
              `EVENT_STORE=kurrentdb wallet-ops projections rebuild\n`,
      );
    });
}

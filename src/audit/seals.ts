import { createHash, type Hash } from 'node:crypto';
import { EventStoreUnavailableError, type EventStore, type RecordedEvent } from '../ports/event-store.ts';
import { GENESIS_HASH, storedHash } from './hash-chain.ts';

/**
 * Seals: evidence of what per-stream chains cannot see (a stream's last event or a whole stream removed, reordering
 * across streams). The sealer appends one every N events to `audit-seals` at its expected revision (one sealer wins
 * each). A seal covers $all after the previous seal's range up to `toPosition`, seals excluded:
 *     digest = SHA-256(previousDigest "\n" hash_1 "\n" hash_2 ... "\n" hash_count)
 * Positions are not in it, so an import into another store, with other positions, still verifies. To say where a
 * range changed, a seal carries 4 hex digits of each covered event's hash (`fingerprints`), its last event's id,
 * stream and revision (where a sealer resumes, in any store) and whether its positions were contiguous.
 */
export const SEALS_STREAM = 'audit-seals';
export const SEAL_EVENT_TYPE = 'HistorySealed';
export const FINGERPRINT_CHARS = 4;
export const GENESIS_DIGEST = GENESIS_HASH;

export interface HistorySealedData {
  /** Position of the first covered event, as the sealing store numbered it. */
  fromPosition: number;
  /** Position of the last covered event, as the sealing store numbered it. */
  toPosition: number;
  /** Covered events (HistorySealed events excluded). */
  count: number;
  digest: string;
  /** The previous seal's digest, or 64 zeros for the first seal. */
  previousDigest: string;
  lastEventID: string;
  /** Where the last covered event is in any store (an import keeps streams and revisions, not positions). */
  lastEventStream: string;
  lastEventRevision: number;
  /** FINGERPRINT_CHARS hex digits of each covered event's hash, in order. */
  fingerprints: string;
  /** Every position from just after the previous seal's toPosition (or from fromPosition) to toPosition was used. */
  contiguous: boolean;
}

export const isSealEvent = (event: Pick<RecordedEvent, 'stream'>): boolean => event.stream === SEALS_STREAM;

/**
 * The last event a seal covers, as it is in this store, or null when it is not here. Looked up by its stream
 * and revision, which every store the history is copied or imported into keeps: a seal's positions are the
 * sealing store's numbers, which after `events copy` into KurrentDB name no event (KurrentDB then refuses the
 * read with InvalidPosition). Only a seal without a stream (none is written so any more) is looked up by
 * position, and a position the store refuses there means "not here", not an error (an outage still is one).
 */
export async function findSealedEvent(store: EventStore, seal: HistorySealedData): Promise<RecordedEvent | null> {
  if (
    typeof seal.lastEventStream === 'string' &&
    Number.isSafeInteger(seal.lastEventRevision) &&
    seal.lastEventRevision >= 0
  ) {
    const [event] = await store.readStream(seal.lastEventStream, { fromRevision: seal.lastEventRevision, maxCount: 1 });
    return event?.id === seal.lastEventID ? event : null;
  }
  try {
    const [event] = await store.readAll({ fromPosition: seal.toPosition, toPosition: seal.toPosition, maxCount: 1 });
    return event?.id === seal.lastEventID ? event : null;
  } catch (error) {
    // A store that is down is not an answer: only a position the store refuses means "not here".
    if (error instanceof EventStoreUnavailableError) throw error;
    return null;
  }
}

/** Accumulates a seal's range as events are seen in order; used by the sealer to write and by verify to recompute. */
export class SealAccumulator {
  readonly previousDigest: string;
  /** Keep every event's fingerprint, to write them in the seal (verify only needs the digest). */
  private readonly keepFingerprints: boolean;
  private readonly hash: Hash;
  private readonly fingerprints: string[] = [];
  /** Digest input not yet handed to the hash: one update per 64 KB rather than per event. */
  private pending = '';
  count = 0;
  fromPosition = 0;
  toPosition = 0;
  lastEventID = '';
  lastEventStream = '';
  lastEventRevision = -1;
  contiguous = true;
  /** The last position seen in this range's span, seal events included. */
  private lastPosition: number | null;

  constructor(
    previousDigest: string,
    /** The previous seal's toPosition, or null for the first seal. */
    afterPosition: number | null,
    keepFingerprints = true,
  ) {
    this.previousDigest = previousDigest;
    this.keepFingerprints = keepFingerprints;
    this.hash = createHash('sha256').update(previousDigest);
    this.lastPosition = afterPosition;
  }

  /** Any event of the span, a seal event included: only its position matters, for contiguity. */
  seePosition(position: number): void {
    if (this.lastPosition !== null && position !== this.lastPosition + 1) this.contiguous = false;
    this.lastPosition = position;
  }

  /**
   * The last position seen in this range's span: where the next range's span starts (seal events seen after toPosition
   * included).
   */
  get lastSeen(): number | null {
    return this.lastPosition;
  }

  add(event: RecordedEvent, hash = storedHash(event)): void {
    this.seePosition(event.position);
    if (this.count === 0) this.fromPosition = event.position;
    this.pending += `\n${hash}`;
    if (this.pending.length >= 65_536) {
      this.hash.update(this.pending);
      this.pending = '';
    }
    if (this.keepFingerprints) this.fingerprints.push(hash.slice(0, FINGERPRINT_CHARS));
    this.count += 1;
    this.toPosition = event.position;
    this.lastEventID = event.id;
    this.lastEventStream = event.stream;
    this.lastEventRevision = event.revision;
  }

  seal(): HistorySealedData {
    this.hash.update(this.pending);
    this.pending = '';
    return {
      fromPosition: this.fromPosition,
      toPosition: this.toPosition,
      count: this.count,
      digest: this.hash.digest('hex'),
      previousDigest: this.previousDigest,
      lastEventID: this.lastEventID,
      lastEventStream: this.lastEventStream,
      lastEventRevision: this.lastEventRevision,
      fingerprints: this.fingerprints.join(''),
      contiguous: this.contiguous,
    };
  }
}

function sameFingerprint(fingerprints: string, index: number, hash: string): boolean {
  const at = index * FINGERPRINT_CHARS;
  if (fingerprints.length < at + FINGERPRINT_CHARS) return false;
  for (let i = 0; i < FINGERPRINT_CHARS; i++) if (fingerprints.charCodeAt(at + i) !== hash.charCodeAt(i)) return false;
  return true;
}

export interface SealProblem {
  check: 'seal';
  position?: number;
  detail: string;
}

/** A recorded seal: its data, and where the seal event itself is. */
export interface RecordedSeal {
  data: HistorySealedData;
  revision: number;
  position: number;
}

/**
 * Recomputes seals over a history fed in order, and says where a range differs from what was sealed.
 *
 * Ranges are delimited either by positions (`positions` mode: the store still numbers events as when they
 * were sealed; the range of a seal is (previous toPosition, toPosition]) or, for a store the history was
 * imported into, by ids (`ids` mode: a range ends with the event `lastEventID`, or at the latest with its
 * own seal event, which is always appended after it). Within a range, the first skipped position (in a
 * range sealed as contiguous) and else the first event whose fingerprint differs from the sealed one
 * locate the change.
 */
export class SealChecker {
  private readonly mode: 'positions' | 'ids';
  /** Seals in order, a page at a time; an empty page means there are no more. */
  private readonly loadSeals: () => Promise<RecordedSeal[]>;
  private readonly report: (problem: SealProblem) => void;
  private readonly queue: RecordedSeal[] = [];
  private exhausted = false;
  private range: {
    seal: RecordedSeal;
    acc: SealAccumulator;
    firstDiff: number | null;
    lastSeen: number | null;
  } | null = null;
  private readonly gaps = new Map<RecordedSeal, { position: number; text: string }>();
  private previousDigest = GENESIS_DIGEST;
  private lastPosition: number | null = null;
  /** Seals whose ranges were checked. */
  checked = 0;
  sealedEvents = 0;
  unsealedEvents = 0;

  constructor(
    mode: 'positions' | 'ids',
    loadSeals: () => Promise<RecordedSeal[]>,
    report: (problem: SealProblem) => void,
  ) {
    this.mode = mode;
    this.loadSeals = loadSeals;
    this.report = report;
  }

  /** Loads enough seals ahead for the next `events` events up to `lastPosition`. Call before feeding a page. */
  async prepare(events: number, lastPosition: number): Promise<void> {
    const ahead = () => this.queue.reduce((sum, seal) => sum + seal.data.count, 0) - (this.range?.acc.count ?? 0);
    while (
      !this.exhausted &&
      (ahead() <= events || (this.mode === 'positions' && (this.queue.at(-1)?.data.toPosition ?? -1) < lastPosition))
    ) {
      const page = await this.loadSeals();
      if (page.length === 0) this.exhausted = true;
      this.queue.push(...page);
    }
  }

  feed(event: RecordedEvent, hash: string): void {
    if (this.mode === 'positions') this.notePosition(event.position);
    if (isSealEvent(event)) {
      // A seal is appended after the last event it covers: once it shows up, its range is over.
      while (this.open() && this.range!.seal.revision <= event.revision) this.close();
      return;
    }
    if (this.mode === 'positions') {
      while (this.open() && event.position > this.range!.seal.data.toPosition) this.close();
    }
    if (!this.open()) {
      this.unsealedEvents += 1;
      return;
    }
    const range = this.range!;
    const { data } = range.seal;
    if (this.mode === 'positions' && range.acc.count === 0 && event.position > data.fromPosition) {
      this.noteGap(range.seal, data.fromPosition, event.position - 1, ' (the first sealed)');
    }
    if (range.firstDiff === null && !sameFingerprint(data.fingerprints, range.acc.count, hash))
      range.firstDiff = event.position;
    range.acc.add(event, hash);
    range.lastSeen = event.position;
    if (this.mode === 'ids' ? event.id === data.lastEventID : event.position === data.toPosition) this.close();
  }

  /** The end of the history: ranges still open are short of events, seals beyond it cover missing ones. */
  async finish(): Promise<void> {
    await this.prepare(Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER);
    while (this.open()) this.close();
  }

  /** Positions skipped since the last event: a gap in the range of a seal that was contiguous names them. */
  private notePosition(position: number): void {
    const last = this.lastPosition;
    this.lastPosition = position;
    if (last === null || position <= last + 1) return;
    const missing = last + 1;
    const seal = this.queue.find((candidate) => candidate.data.toPosition >= missing);
    if (seal?.data.contiguous) this.noteGap(seal, missing, position - 1, '');
  }

  private noteGap(seal: RecordedSeal, from: number, to: number, what: string): void {
    if (this.gaps.has(seal)) return;
    const end = Math.min(to, seal.data.toPosition);
    this.gaps.set(seal, { position: from, text: `position ${from}${end > from ? ` to ${end}` : ''}${what} missing` });
  }

  /** Whether a seal's range is being fed (opening the next one when there is one). */
  private open(): boolean {
    if (this.range) return true;
    const seal = this.queue[0];
    if (!seal) return false;
    this.range = {
      seal,
      acc: new SealAccumulator(seal.data.previousDigest, null, false),
      firstDiff: null,
      lastSeen: null,
    };
    return true;
  }

  private close(): void {
    const range = this.range!;
    this.range = null;
    this.queue.shift();
    const { seal } = range;
    const { data } = seal;
    const count = range.acc.count;
    const digest = count > 0 ? range.acc.seal().digest : createHash('sha256').update(data.previousDigest).digest('hex');
    const gap = this.gaps.get(seal);
    this.gaps.delete(seal);
    this.checked += 1;
    const where =
      `seal #${this.checked} (revision ${seal.revision} of ${SEALS_STREAM}, sealed positions ` +
      `${data.fromPosition} to ${data.toPosition}, ${data.count} events)`;
    if (data.previousDigest !== this.previousDigest) {
      this.report({
        check: 'seal',
        position: data.fromPosition,
        detail:
          `${where} does not follow the previous seal: its previousDigest is ` +
          `${data.previousDigest.slice(0, 16)}…, the previous seal's digest ${this.previousDigest.slice(0, 16)}… ` +
          '(a seal was removed or altered)',
      });
    }
    if (digest !== data.digest || count !== data.count) {
      const located =
        gap?.text ??
        (range.firstDiff !== null
          ? `the event at position ${range.firstDiff} is not the one sealed there (altered, moved or inserted, ` +
            'or one before it removed)'
          : count < data.count
            ? `the last ${data.count - count} sealed event(s) missing`
            : 'the covered events differ');
      const position =
        gap?.position ??
        range.firstDiff ??
        (count < data.count && range.lastSeen !== null ? range.lastSeen + 1 : data.fromPosition);
      this.report({
        check: 'seal',
        position,
        detail:
          `${where} does not match the history, first sealed position ${data.fromPosition}: ${located}; ${count} ` +
          `events found for ${data.count} sealed, digest ${digest.slice(0, 16)}… for ${data.digest.slice(0, 16)}…`,
      });
    }
    this.sealedEvents += count;
    this.previousDigest = data.digest;
  }
}

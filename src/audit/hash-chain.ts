import * as crypto from 'node:crypto';
import { randomUUID } from 'node:crypto';
import {
  type AppendResult,
  type EventMetadata,
  type EventStore,
  type ExpectedRevision,
  type NewEvent,
  type ReadAllOptions,
  type ReadStreamOptions,
  type RecordedEvent,
  SERIALIZED_JSON,
  type SerializedJson,
  type StreamAppend,
  type SubscribeOptions,
  type Subscription,
  WrongExpectedVersionError,
} from '../ports/event-store.ts';
import { canonicalJson, canonicalJsonWithout } from '../shared/canonical-json.ts';

/**
 * Tamper evidence computed by wallet-ops itself, the same on every event store adapter: each event's `hash` covers
 * its whole content but what the store assigns at commit, and `previousHash` chains it to the previous event of its
 * stream. Chains are per stream because the port's only compare-and-set is a stream's expected revision; the seals
 * (sealer.ts) cover what they cannot see. docs/architecture.md, "Audit", has the why and the cache of last hashes.
 *
 * An append built on one still in flight (the pipeline's speculative decisions) is submitted only once that one
 * committed: should the first fail because another process wrote as many events meanwhile, the second would commit
 * a `previousHash` naming an event never stored. It fails with WrongExpectedVersionError instead, and is decided
 * again.
 */
export const GENESIS_HASH = '0'.repeat(64);

/** The parts of an event that its hash covers. */
export interface HashedContent {
  id: string;
  stream: string;
  revision: number;
  type: string;
  data: unknown;
  metadata?: EventMetadata | undefined;
}

/** The hash an event should carry: SHA-256 over its canonical content, `metadata.hash` left out. */
export function eventHash(event: HashedContent): string {
  return contentHash(
    canonicalJson(event.data),
    canonicalJson(event.id),
    canonicalJsonWithout(event.metadata ?? {}, 'hash'),
    canonicalJson(event.revision),
    canonicalJson(event.stream),
    canonicalJson(event.type),
  );
}

/** eventHash from the canonical JSON of each part (an append writes its stream's once for all its events). */
function contentHash(
  data: string,
  id: string,
  metadata: string,
  revision: string,
  stream: string,
  type: string,
): string {
  // canonicalJson({data, id, metadata, revision, stream, type}), keys in their sorted order, built without copies.
  return sha256(
    `{"data":${data},"id":${id},"metadata":${metadata},"revision":${revision},"stream":${stream},"type":${type}}`,
  );
}

/** SHA-256 in hex, by the one-shot crypto.hash (faster than a Hash object; every Node of `engines` has it). */
export const sha256 = (text: string): string => crypto.hash('sha256', text, 'hex');

/** The hash an event carries, or for an event stored before the chain existed, the hash it would carry. */
export function storedHash(event: RecordedEvent): string {
  const hash = event.metadata?.hash;
  return typeof hash === 'string' ? hash : eventHash(event);
}

export interface HashChainOptions {
  /** Streams whose last (revision, hash) is remembered. Default 10,000; in-flight entries are never evicted. */
  maxCachedStreams?: number;
  /** Attempts of an append with `any` or `stream_exists` that keeps meeting concurrent writers. Default 5. */
  looseAttempts?: number;
}

const INNER = Symbol.for('wallet-ops.audit.hashChain.inner');

/**
 * Wraps an event store so that every append is hash-chained per stream. Idempotent: a wrapped store is returned as is.
 */
export function withHashChain(store: EventStore, options: HashChainOptions = {}): EventStore {
  if (isHashChained(store)) return store;
  return new HashChainedStore(store, options);
}

export function isHashChained(store: EventStore): boolean {
  return INNER in store;
}

/** The store under the decorator (for an import, which must keep the hashes it brings), or the store itself. */
export function unwrapHashChain(store: EventStore): EventStore {
  return isHashChained(store) ? (store as unknown as { [INNER]: EventStore })[INNER] : store;
}

interface Head {
  revision: number;
  hash: string;
  /** Settles with whether the append that wrote this head committed; null once it has. */
  pending: Promise<boolean> | null;
}

/** Where a request's events go: the revision to expect from the inner store, and the chain to extend. */
interface Base {
  expected: number | 'no_stream';
  revision: number;
  hash: string;
  /** The caller said `any` or `stream_exists`: a conflict may be retried. */
  loose: boolean;
}

/** A call's turn on its streams: the calls after it on one of them plan once it has submitted (or given up). */
interface Turn {
  streams: string[];
  done: boolean;
  waiters: Array<() => void> | null;
}

const GENESIS_BASE: Base = { expected: 'no_stream', revision: -1, hash: GENESIS_HASH, loose: false };

const first = (results: AppendResult[]): AppendResult => results[0]!;

/**
 * Data whose canonical JSON is also what JSON.stringify would store. At the top, canonical form writes null
 * for what JSON.stringify gives no JSON at all (undefined, a function, a toJSON returning one), which the
 * store must go on refusing: such data is left for the store to serialize.
 */
function plainData(data: unknown): boolean {
  if (typeof data === 'object') return data === null || typeof (data as { toJSON?: unknown }).toJSON !== 'function';
  return typeof data === 'string' || typeof data === 'number' || typeof data === 'boolean';
}
const isLoose = (base: Base): boolean => base.loose;

function wellFormed(requests: StreamAppend[]): boolean {
  if (requests.length === 0) return false;
  if (requests.length > 16)
    return (
      requests.every((request) => request.events.length > 0) &&
      new Set(requests.map((request) => request.stream)).size === requests.length
    );
  for (let i = 0; i < requests.length; i++) {
    if (requests[i]!.events.length === 0) return false;
    for (let j = 0; j < i; j++) if (requests[j]!.stream === requests[i]!.stream) return false;
  }
  return true;
}

class HashChainedStore implements EventStore {
  private readonly inner: EventStore;
  readonly [INNER]: EventStore;
  private readonly heads = new Map<string, Head>();
  private readonly turns = new Map<string, Turn>();
  private readonly maxCached: number;
  private readonly looseAttempts: number;

  constructor(inner: EventStore, options: HashChainOptions) {
    this.inner = inner;
    this[INNER] = inner;
    this.maxCached = options.maxCachedStreams ?? 10_000;
    this.looseAttempts = options.looseAttempts ?? 5;
  }

  append(stream: string, events: NewEvent[], expectedRevision: ExpectedRevision): Promise<AppendResult> {
    return this.appendMulti([{ stream, events, expectedRevision }]).then(first);
  }

  appendMulti(requests: StreamAppend[]): Promise<AppendResult[]> {
    // Malformed calls are the inner store's to refuse, with its own messages.
    if (!wellFormed(requests)) return this.inner.appendMulti(requests);
    // The common case, without a single await: no earlier call is still planning on these streams, and every
    // base is known (a committed head, or a new stream). Submitted synchronously, so it needs no turn: a later
    // call on the same streams finds the heads it recorded.
    if (this.turns.size === 0 || !this.anyTurnOn(requests)) {
      const bases = this.knownBases(requests);
      if (bases) {
        let committed: Promise<AppendResult[]>;
        try {
          committed = this.submit(requests, bases);
        } catch (error) {
          return Promise.reject(error); // e.g. data JSON cannot represent
        }
        return this.settle(committed, requests, bases, 1);
      }
    }
    // Taken synchronously, in call order: a call plans its streams' chains once the calls before it on the
    // same streams have submitted (and so recorded their heads), whatever their planning had to await.
    const { turn, before } = this.takeTurn(requests);
    return this.plan(requests, turn, before);
  }

  private async plan(
    requests: StreamAppend[],
    turn: Turn,
    before: Array<Promise<void>> | null,
  ): Promise<AppendResult[]> {
    try {
      if (before) await Promise.all(before);
      const bases = await Promise.all(requests.map((request) => this.baseOf(request.stream, request.expectedRevision)));
      const committed = this.submit(requests, bases);
      this.release(turn);
      return await this.settle(committed, requests, bases, 1);
    } finally {
      this.release(turn);
    }
  }

  /** The commit's result; a conflict on a stream the caller did not pin (`any`, `stream_exists`) is tried again. */
  private settle(
    committed: Promise<AppendResult[]>,
    requests: StreamAppend[],
    bases: Base[],
    attempt: number,
  ): Promise<AppendResult[]> {
    // Only a loose base can be retried; an exact one is answered as the store answers (one promise less per append).
    if (!bases.some(isLoose)) return committed;
    return committed.catch((error: unknown) => this.retry(error, requests, bases, attempt));
  }

  private async retry(
    error: unknown,
    requests: StreamAppend[],
    bases: Base[],
    attempt: number,
  ): Promise<AppendResult[]> {
    if (!(error instanceof WrongExpectedVersionError)) throw error;
    const index = requests.findIndex((request) => request.stream === error.stream);
    if (index === -1 || !bases[index]!.loose) throw error;
    if (attempt >= this.looseAttempts)
      throw new WrongExpectedVersionError(error.stream, requests[index]!.expectedRevision, error.actual);
    const again = await Promise.all(requests.map((request) => this.baseOf(request.stream, request.expectedRevision)));
    return this.settle(this.submit(requests, again), requests, again, attempt + 1);
  }

  readStream(stream: string, options?: ReadStreamOptions): Promise<RecordedEvent[]> {
    return this.inner.readStream(stream, options);
  }

  readAll(options?: ReadAllOptions): Promise<RecordedEvent[]> {
    return this.inner.readAll(options);
  }

  headPosition(): Promise<number> {
    return this.inner.headPosition();
  }

  subscribeToAll(options: SubscribeOptions): Subscription {
    return this.inner.subscribeToAll(options);
  }

  close(): Promise<void> {
    return this.inner.close();
  }

  /** Hashes every event, submits one inner appendMulti (atomic as before), and records the new heads. */
  private submit(requests: StreamAppend[], bases: Base[]): Promise<AppendResult[]> {
    const inner: StreamAppend[] = new Array(requests.length);
    const heads: Head[] = new Array(requests.length);
    for (let i = 0; i < requests.length; i++) {
      const request = requests[i]!;
      const base = bases[i]!;
      let revision = base.revision;
      let previousHash = base.hash;
      const stream = canonicalJson(request.stream);
      const events: NewEvent[] = new Array(request.events.length);
      for (let j = 0; j < request.events.length; j++) {
        const event = request.events[j]!;
        revision += 1;
        const id = event.id ?? randomUUID();
        const { hash: _ignored, previousHash: _replaced, ...metadata } = event.metadata ?? {};
        metadata.previousHash = previousHash;
        const data = canonicalJson(event.data);
        const hashed = canonicalJson(metadata); // has no `hash` yet; never "{}": it has previousHash
        // A uuid of ours has nothing to escape; a revision is an integer.
        previousHash = contentHash(
          data,
          event.id === undefined ? `"${id}"` : canonicalJson(id),
          hashed,
          `${revision}`,
          stream,
          canonicalJson(event.type),
        );
        metadata.hash = previousHash;
        // The store may keep these strings rather than serialize data and metadata again (hash first: still JSON
        // of the same metadata, whose hash covers it without `hash`, whatever the key order).
        const serialized: SerializedJson = { data, metadata: `{"hash":"${previousHash}",${hashed.slice(1)}` };
        events[j] = plainData(event.data)
          ? { id, type: event.type, data: event.data, metadata, [SERIALIZED_JSON]: serialized }
          : { id, type: event.type, data: event.data, metadata };
      }
      heads[i] = { revision, hash: previousHash, pending: null };
      inner[i] = { stream: request.stream, events, expectedRevision: base.expected };
    }
    const committed = this.inner.appendMulti(inner);
    const outcome = committed.then(
      () => {
        for (const head of heads) head.pending = null;
        return true;
      },
      () => {
        for (let i = 0; i < heads.length; i++)
          if (this.heads.get(requests[i]!.stream) === heads[i]) this.heads.delete(requests[i]!.stream);
        return false;
      },
    );
    for (let i = 0; i < heads.length; i++) {
      heads[i]!.pending = outcome;
      this.remember(requests[i]!.stream, heads[i]!);
    }
    return committed;
  }

  /** The bases of every request when all are known without reading or waiting, else null. */
  private knownBases(requests: StreamAppend[]): Base[] | null {
    const bases: Base[] = new Array(requests.length);
    for (let i = 0; i < requests.length; i++) {
      const { stream, expectedRevision } = requests[i]!;
      if (expectedRevision === 'no_stream') {
        bases[i] = GENESIS_BASE;
        continue;
      }
      const head = this.heads.get(stream);
      const loose = expectedRevision === 'any' || expectedRevision === 'stream_exists';
      if (!head || head.pending !== null || !(loose || head.revision === expectedRevision)) return null;
      bases[i] = { expected: head.revision, revision: head.revision, hash: head.hash, loose };
    }
    return bases;
  }

  /** The base a request extends, from the cache (waiting for an in-flight head to commit) or from the store. */
  private async baseOf(stream: string, expected: ExpectedRevision): Promise<Base> {
    if (expected === 'no_stream') return GENESIS_BASE;
    const loose = expected === 'any' || expected === 'stream_exists';
    const head = this.heads.get(stream);
    if (head && (loose || head.revision === expected)) {
      const committed = head.pending ? await head.pending : true;
      if (committed) return { expected: head.revision, revision: head.revision, hash: head.hash, loose };
      // The append this one builds on failed: an exact expectation rested on a state that never was.
      if (!loose) throw new WrongExpectedVersionError(stream, expected, await this.actualRevision(stream));
    }
    if (!loose) {
      const [event] = await this.inner.readStream(stream, { fromRevision: expected as number, maxCount: 1 });
      // Not there: the store is not at that revision, and the append would fail the same way.
      if (!event || event.revision !== expected)
        throw new WrongExpectedVersionError(stream, expected, await this.actualRevision(stream));
      return { expected: event.revision, revision: event.revision, hash: storedHash(event), loose };
    }
    const [last] = await this.inner.readStream(stream, { direction: 'backwards', maxCount: 1 });
    if (last) return { expected: last.revision, revision: last.revision, hash: storedHash(last), loose };
    if (expected === 'stream_exists') throw new WrongExpectedVersionError(stream, expected, 'no_stream');
    return { expected: 'no_stream', revision: -1, hash: GENESIS_HASH, loose };
  }

  private async actualRevision(stream: string): Promise<number | 'no_stream'> {
    const [last] = await this.inner.readStream(stream, { direction: 'backwards', maxCount: 1 });
    return last ? last.revision : 'no_stream';
  }

  private anyTurnOn(requests: StreamAppend[]): boolean {
    for (const request of requests) if (this.turns.has(request.stream)) return true;
    return false;
  }

  private takeTurn(requests: StreamAppend[]): { turn: Turn; before: Array<Promise<void>> | null } {
    let before: Array<Promise<void>> | null = null;
    const turn: Turn = { streams: requests.map((request) => request.stream), done: false, waiters: null };
    for (const stream of turn.streams) {
      const previous = this.turns.get(stream);
      if (previous && !previous.done)
        (before ??= []).push(new Promise<void>((resolve) => (previous.waiters ??= []).push(resolve)));
      this.turns.set(stream, turn);
    }
    return { turn, before };
  }

  private release(turn: Turn): void {
    if (turn.done) return;
    turn.done = true;
    for (const stream of turn.streams) if (this.turns.get(stream) === turn) this.turns.delete(stream);
    if (turn.waiters) for (const resolve of turn.waiters) resolve();
  }

  private remember(stream: string, entry: Head): void {
    const current = this.heads.get(stream);
    // An append planned on an older state (it will fail: that revision is taken) does not hide a newer head.
    if (current && current.revision >= entry.revision) return;
    this.heads.delete(stream);
    this.heads.set(stream, entry);
    if (this.heads.size <= this.maxCached) return;
    for (const [name, head] of this.heads) {
      if (head.pending) continue;
      this.heads.delete(name);
      if (this.heads.size <= this.maxCached) return;
    }
  }
}

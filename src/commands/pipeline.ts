import type {
  AppendResult,
  EventMetadata,
  EventStore,
  ExpectedRevision,
  NewEvent,
  RecordedEvent,
  StreamAppend,
} from '../ports/event-store.ts';
import { EventStoreUnavailableError, WrongExpectedVersionError } from '../ports/event-store.ts';
import { DomainError } from '../domain/errors.ts';
import type { KeyedMutex } from '../shared/keyed-mutex.ts';
import { backoffMs } from '../shared/backoff.ts';
import type { Decider } from './decider.ts';
import { latestSnapshot } from './snapshots.ts';
import { foldStream, LOAD_PAGE, type SnapshotSpec } from './stream-fold.ts';

/** Who runs a command and in which request: becomes the metadata of every event it appends. */
export interface CommandContext {
  actor: string;
  correlationId: string;
  causationId?: string;
  /**
   * The W3C trace context of the step (src/ports/tracing.ts): only a checked value, carried into every event's
   * metadata.
   */
  traceparent?: string;
}

interface CachedState {
  revision: number;
  state: unknown;
}

/**
 * Folded states by stream, keyed by the revision they include, so that a command on a long stream reads
 * only the events appended since. States are immutable values (evolve returns new objects), so sharing
 * them is safe. Bounded: the oldest entries go first.
 */
export class StateCache {
  private readonly maxEntries: number;
  private readonly entries = new Map<string, CachedState>();
  constructor(maxEntries = 10_000) {
    this.maxEntries = maxEntries;
  }

  get(stream: string): CachedState | undefined {
    return this.entries.get(stream);
  }

  set(stream: string, entry: CachedState): void {
    const current = this.entries.get(stream);
    if (current && current.revision > entry.revision) return; // a newer state got here first
    this.entries.delete(stream);
    this.entries.set(stream, entry);
    if (this.entries.size > this.maxEntries) this.entries.delete(this.entries.keys().next().value as string);
  }
}

/**
 * States that decisions of this process have appended but whose commit has not returned yet. The next
 * decision on the same stream builds on them at once (no read, no waiting for a commit), and must never
 * commit without them: had the first append failed, another writer took those revisions, and a decision
 * taken on a state that never happened must not commit on top of theirs. So the second decision's writes
 * join the first one's append while it is still being gathered (one atomic append: both or neither, one
 * commit for both), or else are submitted only once the first committed. On a failure both are decided again.
 */
interface InFlightState extends CachedState {
  committed: Promise<unknown>;
  batch: PendingAppend;
}

/** An atomic append being gathered during the current turn of the event loop, submitted on the next. */
class PendingAppend {
  readonly requests = new Map<string, StreamAppend>();
  submitted = false;
  readonly committed: Promise<unknown>;

  constructor(store: EventStore, first: StreamAppend[]) {
    this.add(first);
    this.committed = new Promise((resolve, reject) => {
      setImmediate(() => {
        this.submitted = true;
        store.appendMulti([...this.requests.values()]).then(resolve, reject);
      });
    });
    this.committed.catch(() => undefined); // observed by every decision in it; keeps a failure from being unhandled
  }

  /** Adds writes that build on this append's own (their expected revisions follow its events). */
  add(requests: StreamAppend[]): void {
    for (const request of requests) {
      const joined = this.requests.get(request.stream);
      this.requests.set(
        request.stream,
        joined ? { ...joined, events: [...joined.events, ...request.events] } : request,
      );
    }
  }
}

export class InFlightStates {
  private readonly entries = new Map<string, InFlightState>();

  get(stream: string): InFlightState | undefined {
    return this.entries.get(stream);
  }

  track(stream: string, state: CachedState, batch: PendingAppend, cache: StateCache | undefined): void {
    const { committed } = batch;
    const entry = { ...state, committed, batch };
    this.entries.set(stream, entry);
    const forget = () => {
      if (this.entries.get(stream) === entry) this.entries.delete(stream);
    };
    committed.then(() => {
      cache?.set(stream, state);
      forget();
    }, forget);
  }
}

export interface CommandPipelineDeps {
  store: EventStore;
  cache?: StateCache;
  /**
   * With a mutex, decisions that read the same stream are taken one at a time in this process (the mutex is
   * held while deciding, not while committing), and may build on each other's uncommitted states.
   */
  serialize?: { mutex: KeyedMutex; inFlight: InFlightStates };
  /**
   * The most a decision may take (ms), every wait included: the mutex, the reads, group commit, the commit, conflicts
   * decided again. Past it the decision fails as the store unavailable (503), saying whether its append may have
   * committed. Unset: no overall bound (conflicts are decided again for CONFLICT_DEADLINE_MS, then 409).
   */
  deadlineMs?: number;
}

export interface RunCommandOptions<Command, State, Event extends { type: string; data: unknown }> {
  stream: string;
  decider: Decider<Command, State, Event>;
  command: Command;
  context: CommandContext;
  /**
   * Other streams appended atomically with the decision, such as a claim stream that makes a short code
   * unique. A conflict on one of them is final (the claim is taken) and is reported by `onConflict`.
   */
  alsoAppend?: (events: Event[]) => StreamWrite[];
  onConflict?: (conflict: WrongExpectedVersionError) => Error;
  maxAttempts?: number;
}

export interface CommandResult<State, Event> {
  events: Event[];
  /** The state after the events. */
  state: State;
  /** Where the last event written landed in the log (0: nothing written): what a reader of its own write waits for. */
  position: number;
}

/**
 * Reads a stream's current state through the cache; also used by handlers that only need to look. Not in the
 * cache (a restart, an eviction), a stream kept with snapshots is folded from its newest snapshot.
 */
export async function loadState<State, Event>(
  deps: CommandPipelineDeps,
  stream: string,
  decider: Pick<Decider<unknown, State, Event>, 'evolve' | 'initialState'> & { snapshot?: SnapshotSpec<State> },
): Promise<{ state: State; revision: number }> {
  const cached = deps.cache?.get(stream) as { state: State; revision: number } | undefined;
  const start = cached ??
    (decider.snapshot ? await latestSnapshot(deps.store, stream, { snapshot: decider.snapshot }) : null) ?? {
      state: decider.initialState(),
      revision: -1,
    };
  const { state, revision } = await foldStream(deps.store, stream, decider.evolve, start);
  if (revision !== (cached?.revision ?? -1)) deps.cache?.set(stream, { revision, state });
  return { state, revision };
}

export { LOAD_PAGE };

/** A stream a decision reads: its name and how to fold it. */
export interface StreamRead<State> {
  stream: string;
  evolve: (state: State, event: any) => State;
  initialState: () => State;
  /** For a stream kept with snapshots (src/commands/snapshots.ts): a cold load starts from the newest one. */
  snapshot?: SnapshotSpec<State>;
  /**
   * The state as the caller has just read it (revision -1: the stream did not exist): the first attempt takes it
   * as it takes a cached state, without reading again; the append's expected revision proves it still current.
   */
  known?: { state: State; revision: number };
}

export interface StreamWrite {
  stream: string;
  events: Array<{ type: string; data: unknown }>;
  /** Defaults to the revision the decision read (for a stream it read) or 'any'. */
  expectedRevision?: ExpectedRevision;
}

export interface Decision<Result> {
  writes: StreamWrite[];
  result: Result;
}

export interface RunDecisionOptions<States extends Record<string, unknown>, Result> {
  read: { [K in keyof States]: StreamRead<States[K]> };
  decide: (states: States) => Decision<Result>;
  context: CommandContext;
  /** A conflict that deciding again cannot mend (a claim already taken): the error to throw, or undefined to retry. */
  finalConflict?: (conflict: WrongExpectedVersionError) => Error | undefined;
  /**
   * At most this many attempts (the executor's outcome takes one: a conflict there is someone else's move). Default:
   * until the deadline.
   */
  maxAttempts?: number;
  /** Conflicts are decided again until this long (ms, on this process's monotonic clock) has passed. Default 10 s. */
  conflictDeadlineMs?: number;
  /**
   * When the decision must be answered by (performance.now() ms), for a caller that already waited on reads of its
   * own: see deadlineOf. Default: deps.deadlineMs from now.
   */
  deadline?: number;
  /** Told each time a conflict makes the decision be taken again (the create-operation metrics count them). */
  onConflictRetry?: (conflict: WrongExpectedVersionError) => void;
}

/**
 * How long conflicts are decided again by default: far beyond what ordinary contention needs, below a client's timeout.
 */
export const CONFLICT_DEADLINE_MS = 10_000;
/**
 * The pause before deciding again after a conflict: from 1 ms, doubling to 100 ms, half of it random
 * (src/shared/backoff.ts).
 */
const CONFLICT_PAUSE = { firstMs: 1, maxMs: 100 };

/** The deadline (performance.now() ms) of a command that starts now, or undefined without deps.deadlineMs. */
export const deadlineOf = (deps: Pick<CommandPipelineDeps, 'deadlineMs'>): number | undefined =>
  deps.deadlineMs === undefined ? undefined : performance.now() + deps.deadlineMs;

/** Nothing was appended: the deadline passed before the decision's append was submitted (or after it was refused). */
export const notDoneInTime = () =>
  new EventStoreUnavailableError("no answer from the event store within the command's deadline; nothing was done");

/** The append was submitted and its commit not answered by the deadline: it may commit still. */
export const outcomeUnknownInTime = () =>
  new EventStoreUnavailableError(
    "no answer from the event store within the command's deadline; the append may still commit",
    { outcomeUnknown: true },
  );

/**
 * Resolves as `work` does, or rejects with `expired()` once `deadline` has passed (no deadline: `work` itself). The
 * work goes on: a caller that must not let it have effects any more checks a flag that `expired` sets.
 */
export function within<T>(work: Promise<T>, deadline: number | undefined, expired: () => Error): Promise<T> {
  if (deadline === undefined) return work;
  // One promise settled by whichever comes first (Promise.race over an expiry promise, awaited in an async function,
  // made three more and their reactions on every create's path).
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(expired()), Math.max(0, deadline - performance.now()));
    work.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}

/** One attempt's stage, read by the deadline: abandoned before its append is submitted, it never submits it. */
interface AttemptStage {
  abandoned: boolean;
  submitted: boolean;
}

/**
 * The one command pipeline: read the streams the decision needs, fold them, decide, and append every write
 * in one atomic multi-stream append, each stream at the revision the decision read. When another writer
 * got there first the whole decision is taken again from the newer states.
 *
 * Another writer is another command of this process (serialized per stream by the mutex, so rare) or of
 * another process on the same store (several write-api processes behind a load balancer). Two processes that
 * decide on one wallet at once conflict in the store; retrying at once, a fixed number of times, lost
 * against a busy peer (16.6% of creates answered 409 with two processes). So a conflict is decided again after
 * a short jittered pause that grows, until a deadline rather than a count: the processes fall out of step and
 * each gets its turn.
 */
export async function runDecision<States extends Record<string, unknown>, Result>(
  deps: CommandPipelineDeps,
  options: RunDecisionOptions<States, Result>,
): Promise<Result> {
  return (await runDecisionCommitted(deps, options)).result;
}

/**
 * runDecision, also telling where each stream's last written event landed in the log (its global position):
 * what a caller waits for when it must read its own write from a read model.
 */
export async function runDecisionCommitted<States extends Record<string, unknown>, Result>(
  deps: CommandPipelineDeps,
  options: RunDecisionOptions<States, Result>,
): Promise<{ result: Result; positions: Map<string, number> }> {
  // With an overall deadline every wait is bounded by it, and conflicts are decided again until it (then 503, not 409:
  // after a stall the conflicts are the stall's, not the wallet's); without one, conflicts only, as before.
  const bounded = options.deadline ?? deadlineOf(deps);
  const deadline = bounded ?? performance.now() + (options.conflictDeadlineMs ?? CONFLICT_DEADLINE_MS);
  const readStreams = Object.values(options.read).map((read) => (read as StreamRead<unknown>).stream);
  // The first attempt trusts the cache; after any conflict every stream is read again.
  let optimistic = true;
  for (let attempt = 1; ; attempt++) {
    const stage: AttemptStage = { abandoned: false, submitted: false };
    // Checked and set in one turn of the event loop with decideAndAppend's submission: never both.
    const expired = () => (stage.submitted ? outcomeUnknownInTime() : ((stage.abandoned = true), notDoneInTime()));
    const fromCache = new Set<string>();
    const issue = () => decideAndAppend(deps, options, stage, optimistic ? fromCache : undefined);
    // One deadline over both waits (one timer per attempt): `expired` tells them apart by the stage.
    const decided = async () => {
      const issued = await (deps.serialize ? deps.serialize.mutex.run(readStreams, issue) : issue());
      return { result: issued.result, positions: await issued.committed };
    };
    try {
      return await within(decided(), bounded, expired);
    } catch (error) {
      if (!(error instanceof WrongExpectedVersionError)) throw error;
      optimistic = false;
      // A cached state that was stale is no one's move: decided again from fresh reads, not counted as an attempt.
      if (fromCache.has(error.stream)) {
        attempt -= 1;
        continue;
      }
      const final = options.finalConflict?.(error);
      if (final) throw final;
      if (attempt >= (options.maxAttempts ?? Infinity) || performance.now() >= deadline) {
        if (bounded !== undefined && attempt < (options.maxAttempts ?? Infinity)) throw notDoneInTime();
        throw new DomainError(
          'CONCURRENCY_CONFLICT',
          `${error.stream} kept changing under concurrent commands; try again`,
        );
      }
      options.onConflictRetry?.(error);
      // The first retry goes at once (the usual conflict is one commit of a peer); later ones step aside, jittered so
      // that writers released together by a stall fall out of step.
      if (attempt > 1)
        await new Promise((resolve) =>
          setTimeout(
            resolve,
            Math.min(backoffMs(attempt - 1, CONFLICT_PAUSE), Math.max(0, deadline - performance.now())),
          ),
        );
    }
  }
}

/**
 * One attempt: read (or build on in-flight states), decide, and start the append without waiting for it.
 *
 * `fromCache` (the first attempt; told which streams it took): a stream whose state is cached is not read first: the
 * decision takes the cached state, and the append's expected revision (the cached one) is what proves it current, as it
 * proves any read state current at commit; a stream that moved meanwhile (another process wrote it) fails the append
 * and the decision is taken again from fresh reads. One round trip less per command where this process is the stream's
 * only writer. A cached stream the decision does not write at its read revision (a refusal, a stream only looked at)
 * proves nothing at commit: it is read before the outcome counts, and a moved one means deciding again from fresh
 * reads.
 */
async function decideAndAppend<States extends Record<string, unknown>, Result>(
  deps: CommandPipelineDeps,
  options: RunDecisionOptions<States, Result>,
  stage: AttemptStage,
  fromCache: Set<string> | undefined,
): Promise<{ result: Result; committed: Promise<Map<string, number>> }> {
  if (stage.abandoned) throw notDoneInTime(); // its turn of the mutex came after the deadline: nothing to do
  const names = Object.keys(options.read) as Array<keyof States>;
  const reads = names.map((name) => options.read[name] as StreamRead<unknown>);
  const inFlight = reads.map((read) => deps.serialize?.inFlight.get(read.stream));
  const cached = reads.map((read, i) =>
    fromCache && !inFlight[i] ? (read.known ?? deps.cache?.get(read.stream)) : undefined,
  );
  reads.forEach((read, i) => cached[i] && fromCache?.add(read.stream));
  const known = reads.map((_, i) => inFlight[i] ?? cached[i]);
  // Every state at hand (in flight or cached: a create's usual case) is decided on in this turn, without a promise per
  // stream and a turn of the microtask queue; a stream to read makes all of them wait for it.
  const loaded = known.every(Boolean)
    ? (known as Array<{ state: unknown; revision: number }>)
    : await Promise.all(reads.map((read, i) => known[i] ?? loadState(deps, read.stream, read)));
  const states = {} as Record<keyof States, unknown>;
  for (let i = 0; i < names.length; i++) states[names[i]!] = loaded[i]!.state;
  // Has any stream taken from the cache without a write to prove it moved? Then decide again from fresh reads.
  const moved = async (proven: (stream: string, revision: number) => boolean) => {
    const unproven = reads.flatMap((read, i) => (cached[i] && !proven(read.stream, cached[i].revision) ? [i] : []));
    const fresh = await Promise.all(unproven.map((i) => loadState(deps, reads[i]!.stream, reads[i]!)));
    return fresh.some((state, k) => state.revision !== cached[unproven[k]!]!.revision);
  };
  let decision: Decision<Result>;
  try {
    decision = options.decide(states as States);
  } catch (error) {
    if (cached.some(Boolean) && (await moved(() => false))) return decideAndAppend(deps, options, stage, undefined);
    throw error;
  }
  const { writes, result } = decision;
  const appends = writes.filter((write) => write.events.length > 0);

  const metadata: EventMetadata = { ...options.context };
  const readIndex = new Map(reads.map((read, i) => [read.stream, i]));
  const requests: StreamAppend[] = appends.map((write) => {
    const index = readIndex.get(write.stream);
    const read = index === undefined ? undefined : loaded[index]!.revision;
    return {
      stream: write.stream,
      events: write.events.map((event): NewEvent => ({ type: event.type, data: event.data, metadata })),
      expectedRevision: write.expectedRevision ?? (read === undefined ? 'any' : read < 0 ? 'no_stream' : read),
    };
  });
  if (cached.some(Boolean)) {
    const guarded = new Map(requests.map((request) => [request.stream, request.expectedRevision]));
    if (await moved((stream, revision) => guarded.get(stream) === (revision < 0 ? 'no_stream' : revision)))
      return decideAndAppend(deps, options, stage, undefined);
  }
  const predecessors = inFlight.flatMap((entry, i) => (entry ? [{ entry, stream: reads[i]!.stream }] : []));
  // A decision that writes nothing but read states not committed yet (a repeat built on its first request's record)
  // is answered only once they are: had they failed, it must be decided again.
  if (appends.length === 0) return { result, committed: untilCommitted(predecessors).then(() => new Map()) };
  const batches = new Set(predecessors.map(({ entry }) => entry.batch));
  let batch: PendingAppend;
  const [only] = batches;
  // Joining is sound only where this decision built on the batch's own state (or accepts any revision).
  const builtOn = new Set(predecessors.map(({ stream }) => stream));
  const joinable = (pending: PendingAppend) =>
    requests.every(
      (request) =>
        !pending.requests.has(request.stream) || builtOn.has(request.stream) || request.expectedRevision === 'any',
    );
  if (batches.size === 1 && !only!.submitted && joinable(only!)) {
    if (stage.abandoned) throw notDoneInTime();
    stage.submitted = true;
    only!.add(requests); // built on it: commit with it
    batch = only!;
  } else {
    // Built on appends already submitted (or on several): submit once they have all committed.
    if (predecessors.length > 0) await untilCommitted(predecessors);
    if (stage.abandoned) throw notDoneInTime();
    stage.submitted = true;
    batch = new PendingAppend(deps.store, requests);
  }
  const { committed } = batch;
  // appendMulti answers one result per stream, in the order of the batch's requests (complete once submitted).
  const positions = committed.then((results) => {
    const streams = [...batch.requests.keys()];
    return new Map((results as AppendResult[]).map((appended, i) => [streams[i]!, appended.position]));
  });
  if (deps.serialize) {
    // What the next decision on these streams may build on before this commit returns.
    for (const write of appends) {
      const index = readIndex.get(write.stream);
      if (index === undefined) continue;
      const { evolve } = reads[index]!;
      // Folded as the events will be read back: type, data and metadata.
      let state = loaded[index]!.state;
      for (const event of write.events) state = evolve(state, { type: event.type, data: event.data, metadata });
      const next = { state, revision: loaded[index]!.revision + write.events.length };
      deps.serialize.inFlight.track(write.stream, next, batch, deps.cache);
    }
  }
  return { result, committed: positions };
}

/** Waits for the in-flight appends a decision built on; one that failed is a conflict (decide again). */
async function untilCommitted(predecessors: Array<{ entry: InFlightState; stream: string }>): Promise<void> {
  await Promise.all(
    predecessors.map(({ entry, stream }) =>
      entry.committed.catch(() => {
        // The predecessor lost its revisions to another writer (the actual revision is not known here).
        throw new WrongExpectedVersionError(stream, entry.revision, 'no_stream');
      }),
    ),
  );
}

/** A decision on a single aggregate: the common case, through the same pipeline. */
export async function runCommand<Command, State, Event extends { type: string; data: unknown }>(
  deps: CommandPipelineDeps,
  options: RunCommandOptions<Command, State, Event>,
): Promise<CommandResult<State, Event>> {
  const { stream, decider, command } = options;
  const { result, positions } = await runDecisionCommitted<
    { own: State },
    Omit<CommandResult<State, Event>, 'position'>
  >(deps, {
    read: { own: { stream, evolve: decider.evolve, initialState: decider.initialState } },
    decide: ({ own }) => {
      const events = decider.decide(command, own);
      return {
        writes: [{ stream, events }, ...(options.alsoAppend?.(events) ?? [])],
        result: { events, state: events.reduce(decider.evolve, own) },
      };
    },
    context: options.context,
    finalConflict: (conflict) =>
      conflict.stream === stream ? undefined : (options.onConflict?.(conflict) ?? conflict),
    ...(options.maxAttempts ? { maxAttempts: options.maxAttempts } : {}),
  });
  return { ...result, position: lastPosition(positions) };
}

/** The position of the last event a decision wrote, over all its streams (0: it wrote nothing). */
export const lastPosition = (positions: Map<string, number>): number => Math.max(0, ...positions.values());

export type { RecordedEvent };

import { randomUUID } from 'node:crypto';
import { type EventStore, type RecordedEvent, WrongExpectedVersionError } from '../ports/event-store.ts';
import {
  checkpointIn,
  conflict,
  Follower,
  type Conflict,
  type ConsumerLogger,
  type Supervision,
} from '../shared/follower.ts';
import {
  GENESIS_DIGEST,
  type HistorySealedData,
  type RecordedSeal,
  SEAL_EVENT_TYPE,
  SEALS_STREAM,
  SealAccumulator,
  findSealedEvent,
  isSealEvent,
} from './seals.ts';

/**
 * The sealer: a runner like a projection runner, that follows $all in order and every `every` events
 * (default 1000) appends a `HistorySealed` seal (seals.ts) to `audit-seals` at the revision it expects.
 * Several sealers may run (one per process running projections): each seal is won by exactly one, and
 * the others notice the new seal and carry on from it. Its checkpoint is the last seal itself, so it needs
 * no read store. With `idleMs`, the events after the last seal are also sealed once nothing has arrived
 * for that long (the tail of a quiet system is then covered too, at the price of smaller seals).
 */
export interface SealerOptions {
  eventStore: EventStore;
  /** Events per seal. Default 1000. */
  every?: number;
  /** Seal a partial range after this long without new events. Default: only full ranges. */
  idleMs?: number;
  /** The actor in the seals' metadata. Default `system:sealer`. */
  actor?: string;
  /** Told of each failure (the supervisor also logs it and resubscribes). */
  onError?: (error: unknown) => void;
  logger?: ConsumerLogger;
  supervision?: Supervision;
}

export type RunningSealer = Pick<Follower, 'consumer' | 'stop'>;

const SILENT: ConsumerLogger = { info() {}, warn() {} };
const LOST = conflict('another sealer sealed first');

/**
 * A follower of the whole history whose checkpoint is the last seal: every session starts from it (found again
 * by its stream and revision) and accumulates; a conflict on the seals stream, or another sealer's seal seen in
 * the history, means another sealer sealed first, and the follower resumes from that seal.
 */
export function startSealer(options: SealerOptions): RunningSealer {
  const every = options.every ?? 1000;
  if (!Number.isSafeInteger(every) || every < 1) throw new Error('a seal covers at least one event');
  const store = options.eventStore;
  let revision = -1;
  let range = new SealAccumulator(GENESIS_DIGEST, null);
  let after: number | null = null;

  async function resume(): Promise<void> {
    const last = await lastSeal(store);
    after = last ? await resumePosition(store, last.data) : null;
    revision = last?.revision ?? -1;
    range = new SealAccumulator(last?.data.digest ?? GENESIS_DIGEST, after);
  }

  async function seal(): Promise<Conflict | void> {
    const data = range.seal();
    const metadata = { actor: options.actor ?? 'system:sealer', correlationId: randomUUID() };
    try {
      await store.append(
        SEALS_STREAM,
        [{ type: SEAL_EVENT_TYPE, data, metadata }],
        revision < 0 ? 'no_stream' : revision,
      );
    } catch (error) {
      if (error instanceof WrongExpectedVersionError) return LOST;
      throw error;
    }
    revision += 1;
    range = new SealAccumulator(data.digest, range.lastSeen);
  }

  const reported =
    <A extends unknown[], T>(work: (...args: A) => Promise<T>) =>
    async (...args: A): Promise<T> => {
      try {
        return await work(...args);
      } catch (error) {
        options.onError?.(error);
        throw error;
      }
    };
  const follower = new Follower({
    name: 'sealer',
    eventStore: store,
    checkpoint: checkpointIn(() => after),
    logger: options.logger ?? SILENT,
    ...(options.supervision ? { supervision: options.supervision } : {}),
    ...(options.idleMs === undefined
      ? {}
      : { idle: { afterMs: options.idleMs, run: reported(async () => (range.count > 0 ? seal() : undefined)) } }),
    prepare: reported(resume),
    handle: reported(async (batch: RecordedEvent[]) => {
      for (const event of batch) {
        if (isSealEvent(event)) {
          if (event.revision > revision) return LOST;
          range.seePosition(event.position);
        } else {
          range.add(event);
          const lost = range.count >= every ? await seal() : undefined;
          if (lost) return lost;
        }
      }
    }),
  });
  follower.start();
  return follower;
}

/** The last seal, or null when nothing was sealed yet. */
export async function lastSeal(store: EventStore): Promise<RecordedSeal | null> {
  const [event] = await store.readStream(SEALS_STREAM, { direction: 'backwards', maxCount: 1 });
  return event ? toRecordedSeal(event) : null;
}

/**
 * Where the last sealed event is in this store: found by its stream and revision (findSealedEvent), so that a
 * sealer resumes in the store that sealed it and in one the history was copied or imported into alike.
 */
export async function resumePosition(store: EventStore, seal: HistorySealedData): Promise<number> {
  const event = await findSealedEvent(store, seal);
  if (event) return event.position;
  throw new Error(`the last sealed event ${seal.lastEventID} is not in the history any more: run audit verify`);
}

export const toRecordedSeal = (event: RecordedEvent): RecordedSeal => ({
  data: event.data as HistorySealedData,
  revision: event.revision,
  position: event.position,
});

import { randomUUID } from 'node:crypto';
import { type EventStore, type RecordedEvent, WrongExpectedVersionError } from '../ports/event-store.ts';
import {
  checkpointIn,
  Follower,
  Resubscribe,
  type ConsumerLogger,
  type SupervisedConsumer,
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
  /** Called after each seal this sealer appended. */
  onSeal?: (seal: HistorySealedData) => void;
}

export interface RunningSealer {
  readonly consumer: SupervisedConsumer;
  stop(): Promise<void>;
}

const SILENT: ConsumerLogger = { info() {}, warn() {} };

export function startSealer(options: SealerOptions): RunningSealer {
  const sealer = new Sealer(options);
  sealer.start();
  return sealer;
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

/**
 * A follower of the whole history whose checkpoint is the last seal: every session starts from it (found again
 * by its stream and revision) and accumulates; a conflict on the seals stream, or another sealer's seal seen in
 * the history, means another sealer sealed first, and the follower resumes from that seal.
 */
class Sealer implements RunningSealer {
  private readonly options: SealerOptions;
  private readonly follower: Follower;
  private readonly every: number;
  private revision = -1;
  private range = new SealAccumulator(GENESIS_DIGEST, null);
  private after: number | null = null;

  constructor(options: SealerOptions) {
    this.options = options;
    this.every = options.every ?? 1000;
    if (!Number.isSafeInteger(this.every) || this.every < 1) throw new Error('a seal covers at least one event');
    const reported =
      <T>(work: () => Promise<T>) =>
      async () => {
        try {
          return await work();
        } catch (error) {
          if (!(error instanceof Resubscribe)) this.options.onError?.(error);
          throw error;
        }
      };
    this.follower = new Follower({
      name: 'sealer',
      eventStore: options.eventStore,
      checkpoint: checkpointIn(() => this.after),
      logger: options.logger ?? SILENT,
      ...(options.supervision ? { supervision: options.supervision } : {}),
      ...(options.idleMs === undefined
        ? {}
        : {
            idle: {
              afterMs: options.idleMs,
              run: reported(async () => (this.range.count > 0 ? this.seal() : undefined)),
            },
          }),
      prepare: reported(() => this.resume()),
      handle: (batch) => reported(() => this.handle(batch))(),
    });
  }

  get consumer(): SupervisedConsumer {
    return this.follower.consumer;
  }

  start(): void {
    this.follower.start();
  }

  stop(): Promise<void> {
    return this.follower.stop();
  }

  private async resume(): Promise<void> {
    const store = this.options.eventStore;
    const last = await lastSeal(store);
    this.after = last ? await resumePosition(store, last.data) : null;
    this.revision = last?.revision ?? -1;
    this.range = new SealAccumulator(last?.data.digest ?? GENESIS_DIGEST, this.after);
  }

  private async handle(batch: RecordedEvent[]): Promise<void> {
    for (const event of batch) {
      if (isSealEvent(event)) {
        if (event.revision > this.revision) throw new Resubscribe('another sealer sealed first');
        this.range.seePosition(event.position);
      } else {
        this.range.add(event);
        if (this.range.count >= this.every) await this.seal();
      }
    }
  }

  private async seal(): Promise<void> {
    const data = this.range.seal();
    try {
      await this.options.eventStore.append(
        SEALS_STREAM,
        [
          {
            type: SEAL_EVENT_TYPE,
            data,
            metadata: { actor: this.options.actor ?? 'system:sealer', correlationId: randomUUID() },
          },
        ],
        this.revision < 0 ? 'no_stream' : this.revision,
      );
    } catch (error) {
      if (error instanceof WrongExpectedVersionError) throw new Resubscribe('another sealer sealed first');
      throw error;
    }
    this.revision += 1;
    this.range = new SealAccumulator(data.digest, this.range.lastSeen);
    this.options.onSeal?.(data);
  }
}

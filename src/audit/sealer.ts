import { randomUUID } from 'node:crypto';
import { type EventStore, type RecordedEvent, WrongExpectedVersionError } from '../ports/event-store.ts';
import { SupervisedConsumer, type ConsumerLogger, type SessionContext, type SupervisedConsumerOptions } from '../shared/supervised-consumer.ts';
import { GENESIS_DIGEST, type HistorySealedData, type RecordedSeal, SEAL_EVENT_TYPE, SEALS_STREAM, SealAccumulator, findSealedEvent, isSealEvent } from './seals.ts';

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
  supervision?: Pick<SupervisedConsumerOptions, 'baseDelayMs' | 'maxDelayMs' | 'stableAfterMs'>;
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

export const toRecordedSeal = (event: RecordedEvent): RecordedSeal => ({ data: event.data as HistorySealedData, revision: event.revision, position: event.position });

const IDLE = Symbol('idle');

class Sealer implements RunningSealer {
  readonly consumer: SupervisedConsumer;
  private readonly every: number;

  constructor(private readonly options: SealerOptions) {
    this.every = options.every ?? 1000;
    if (!Number.isSafeInteger(this.every) || this.every < 1) throw new Error('a seal covers at least one event');
    this.consumer = new SupervisedConsumer({ name: 'sealer', logger: options.logger ?? SILENT, ...options.supervision, session: (context) => this.session(context) });
  }

  start(): void {
    this.consumer.start();
  }

  stop(): Promise<void> {
    return this.consumer.stop();
  }

  private async session(context: SessionContext): Promise<void> {
    while (!context.stopping()) {
      try {
        await this.follow(context);
      } catch (error) {
        // A conflict: another sealer sealed first. Carry on from its seal. Anything else ends the session.
        if (error instanceof WrongExpectedVersionError) continue;
        if (!context.stopping()) this.options.onError?.(error);
        throw error;
      }
    }
  }

  /** From the last seal: accumulate, seal every N events; returns when another sealer sealed first. */
  private async follow(context: SessionContext): Promise<void> {
    const { eventStore: store } = this.options;
    const last = await lastSeal(store);
    const after = last ? await resumePosition(store, last.data) : null;
    let revision = last?.revision ?? -1;
    let range = new SealAccumulator(last?.data.digest ?? GENESIS_DIGEST, after);
    const subscription = context.own(store.subscribeToAll({ from: after ?? 'start' }));
    if (after !== null) context.progress(after);
    const iterator = subscription[Symbol.asyncIterator]();
    const seal = async () => {
      const data = range.seal();
      await store.append(SEALS_STREAM, [{ type: SEAL_EVENT_TYPE, data, metadata: { actor: this.options.actor ?? 'system:sealer', correlationId: randomUUID() } }], revision < 0 ? 'no_stream' : revision);
      revision += 1;
      range = new SealAccumulator(data.digest, range.lastSeen);
      this.options.onSeal?.(data);
    };
    try {
      let next = iterator.next();
      for (;;) {
        const result = range.count > 0 && this.options.idleMs !== undefined ? await raceIdle(next, this.options.idleMs) : await next;
        if (result === IDLE) {
          await seal();
          continue;
        }
        if (result.done) return;
        const event = result.value;
        context.progress(event.position);
        if (isSealEvent(event)) {
          if (event.revision > revision) return; // another sealer's seal: start again from it
          range.seePosition(event.position);
        } else {
          range.add(event);
          if (range.count >= this.every) await seal();
        }
        next = iterator.next();
      }
    } finally {
      await subscription.stop();
    }
  }
}

async function raceIdle<T>(next: Promise<T>, idleMs: number): Promise<T | typeof IDLE> {
  let timer: NodeJS.Timeout | undefined;
  const idle = new Promise<typeof IDLE>((resolve) => {
    timer = setTimeout(() => resolve(IDLE), idleMs);
  });
  try {
    return await Promise.race([next, idle]);
  } finally {
    clearTimeout(timer);
  }
}

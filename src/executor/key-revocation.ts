import { randomUUID } from 'node:crypto';
import type { EventStore, RecordedEvent } from '../ports/event-store.ts';
import type { ReadStore } from '../ports/read-store.ts';
import type { ApiKeyRevoked, OperationRequested } from '../domain/events.ts';
import { streams } from '../domain/streams.ts';
import { apiKeyDecider, effectiveStatus } from '../commands/api-keys.ts';
import { rejectOperationOfExpiredKey, rejectOperationOfRevokedKey } from '../commands/operation-handlers.ts';
import { KEY_EXPIRED_REASON, KEY_REVOCATION_ACTOR, KEY_REVOKED_REASON } from '../commands/operations.ts';
import { loadState, StateCache, type CommandContext } from '../commands/pipeline.ts';
import {
  PENDING_OPERATIONS_PROJECTION,
  pendingOperationsAfter,
  pendingOperationsOfKey,
} from '../projections/pending-operations.ts';
import { FailureStreak } from './failure-streak.ts';
import { UnchangedWatch } from '../shared/unchanged-watch.ts';
import type { Logger } from '../logger.ts';
import {
  Follower,
  sharedCheckpoint,
  type BatchContext,
  type SupervisedConsumer,
  type Supervision,
} from '../shared/follower.ts';

export { KEY_EXPIRED_REASON, KEY_REVOCATION_ACTOR, KEY_REVOKED_REASON };

/** Keys remembered as not revoked, at most (past it the memory starts again: a key is then read once more). */
const MAX_NOT_REVOKED = 100_000;
/** Pending operations read per page by the expiry sweep. */
const SWEEP_PAGE = 500;

/**
 * The consumer's checkpoint in the read store, shared by every process that runs it: every event at or below it has
 * been handled.
 */
export const KEY_REVOCATION_CHECKPOINT = 'key-revocations';
export const KEY_REVOCATION_EVENT_TYPES = ['ApiKeyRevoked', 'ApiKeyPreviousSecretEnded', 'OperationRequested'] as const;

/** What one event asks of the consumer: decisions as data, the runner does the I/O. */
export type RevocationStep =
  /**
   * A key was revoked, or one of its secrets ended with its holder's departure: reject every pending operation
   * it created (the decision rejects, of those, what the revocation or the ended secret applies to).
   */
  | { kind: 'reject-pending-of-key'; keyID: string }
  /**
   * An operation was created with a key: reject it if that key, or the secret it used, is already revoked (a process
   * that had not heard yet).
   */
  | { kind: 'check-key'; keyID: string; operationID: string; secretGeneration?: number }
  | { kind: 'ignore' };

export function revocationStep(event: { type: string; data: unknown }): RevocationStep {
  switch (event.type) {
    case 'ApiKeyRevoked':
    case 'ApiKeyPreviousSecretEnded':
      return { kind: 'reject-pending-of-key', keyID: (event.data as ApiKeyRevoked['data']).keyID };
    case 'OperationRequested': {
      const { keyID, operationID, secretGeneration } = event.data as OperationRequested['data'];
      return keyID === null
        ? { kind: 'ignore' }
        : { kind: 'check-key', keyID, operationID, ...(secretGeneration === undefined ? {} : { secretGeneration }) };
    }
    default:
      return { kind: 'ignore' };
  }
}

export interface KeyRevocationOptions {
  eventStore: EventStore;
  /** Holds the consumer's checkpoint and the pending-operations read model it reads. */
  readStore: ReadStore;
  clock: () => Date;
  assetScale: number;
  logger: Logger;
  /**
   * A revocation waits for the pending-operations read model to reach it; the session fails once it has not moved for
   * this long. Default 30 s.
   */
  readModelStallMs?: number;
  /**
   * While only operations are requested, the checkpoint is saved at most this often (a replay is harmless). Default
   * 1 s.
   */
  checkpointEveryMs?: number;
  /**
   * How often the sweep looks for pending operations of keys that have expired (KEY_EXPIRY_SWEEP_INTERVAL_MS). Default
   * 60 s.
   */
  expirySweepEveryMs?: number;
  supervision?: Supervision;
}

/** While only operations are requested, the checkpoint is also saved after this many positions. */
const CHECKPOINT_EVERY_POSITIONS = 10_000;

/**
 * When a key is revoked, its pending operations are rejected by `system:key-revocation` with the reason
 * "API key revoked" (and when a departure ends one of its secrets, those that secret created, with
 * SECRET_ENDED_REASON), and what they held (the payer's funds, the key's daily volume) is released, exactly as a
 * checker's rejection does. A follower of `ApiKeyRevoked` and `OperationRequested`, from a checkpoint shared by
 * every process that runs it (a second rejection of the same operation changes nothing); the checkpoint is
 * saved at once after a rejection, else now and then (a replay only finds the operations decided).
 *
 * Nothing is missed:
 *  - an operation requested before the revocation is in the pending-operations read model once that model has
 *    reached the revocation's position (the consumer waits for it; the model's checkpoint passes revocations);
 *  - an operation requested after it (with a key directory that had not heard yet) is seen as an
 *    OperationRequested whose key's stream, read on the write side, says revoked;
 *  - and the approval decision itself refuses an operation whose key is revoked, whatever this consumer does.
 *
 * A key also ends when it expires, which no event marks: every `expirySweepEveryMs` a sweep reads the pending
 * operations and rejects, with the reason "API key expired", those whose key (read on the write side) has
 * expired, releasing what they held the same way. The approval decision refuses them meanwhile (KEY_EXPIRED).
 * Several processes may sweep at once: each rejection is a decision on the operation's stream at its revision,
 * so an operation is rejected (and its hold released) once, and the other sweeps find it decided.
 */
export class KeyRevocations {
  private readonly options: KeyRevocationOptions;
  private readonly follower: Follower;
  private readonly deps: { store: EventStore; cache: StateCache; clock: () => Date; assetScale: number };
  private sweepTimer: NodeJS.Timeout | undefined;
  private sweeping: Promise<number> | null = null;
  private readonly sweeps: FailureStreak;
  /**
   * Keys whose stream this session read as not revoked. A revocation committed after that read has a higher position
   * than every operation handled so far and comes through this follower before any operation after it, and removes
   * the key here: until then no operation needs the key read again (one read per create, with every part running).
   */
  private readonly notRevoked = new Set<string>();

  constructor(options: KeyRevocationOptions) {
    this.options = options;
    this.deps = {
      store: options.eventStore,
      cache: new StateCache(),
      clock: options.clock,
      assetScale: options.assetScale,
    };
    this.follower = new Follower({
      name: 'key-revocations',
      eventStore: options.eventStore,
      filter: { eventTypes: [...KEY_REVOCATION_EVENT_TYPES] },
      checkpoint: sharedCheckpoint(options.readStore, KEY_REVOCATION_CHECKPOINT),
      commitEvery: { positions: CHECKPOINT_EVERY_POSITIONS, ms: options.checkpointEveryMs ?? 1000 },
      handle: (batch, context) => this.handle(batch, context),
      logger: options.logger,
      ...(options.supervision ? { supervision: options.supervision } : {}),
    });
    this.sweeps = new FailureStreak(
      options.logger,
      'expired-key sweep failed; retrying at the next one',
      'expired-key sweep works again',
    );
  }

  get consumer(): SupervisedConsumer {
    return this.follower.consumer;
  }

  start(): void {
    this.follower.start();
    this.sweepTimer = setInterval(
      () => void this.sweeps.track(this.sweepExpired()),
      this.options.expirySweepEveryMs ?? 60_000,
    );
  }

  async stop(): Promise<void> {
    clearInterval(this.sweepTimer);
    await this.sweeping?.catch(() => undefined);
    await this.follower.stop();
  }

  private async handle(batch: RecordedEvent[], context: BatchContext): Promise<void> {
    for (const event of batch) {
      const step = revocationStep(event);
      if (step.kind === 'reject-pending-of-key') {
        this.notRevoked.delete(step.keyID);
        await this.untilReadModelReaches(event.position, context);
        await this.rejectPendingOf(step.keyID, event);
        context.commitNow();
      } else if (step.kind === 'check-key' && (await this.rejectIfRevoked(step, event))) {
        context.commitNow();
      }
    }
  }

  /**
   * Waits until the pending-operations read model has applied everything up to the revocation; throws when stopping
   * (the batch stays unhandled).
   */
  private async untilReadModelReaches(position: number, context: BatchContext): Promise<void> {
    const stallMs = this.options.readModelStallMs ?? 30_000;
    const watch = new UnchangedWatch<number | null>();
    for (;;) {
      if (context.stopping()) throw new Error(`stopped before the revocation at position ${position} was handled`);
      const checkpoint = await this.options.readStore.getCheckpoint(PENDING_OPERATIONS_PROJECTION);
      if (checkpoint !== null && checkpoint >= position) return;
      if (watch.unchangedForMs(PENDING_OPERATIONS_PROJECTION, checkpoint) > stallMs) {
        throw new Error(
          `the ${PENDING_OPERATIONS_PROJECTION} read model has stayed at ${String(checkpoint)}, before the ` +
            `revocation at position ${position}, for ${stallMs} ms: are the projections running?`,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  /** Every pending operation of the key, from one query of the read model (caught up to the revocation). */
  private async rejectPendingOf(keyID: string, event: RecordedEvent): Promise<boolean> {
    const pending = await pendingOperationsOfKey(this.options.readStore, keyID);
    let rejected = 0;
    for (const doc of pending) if (await this.reject(doc.id, event)) rejected += 1;
    if (rejected > 0)
      this.options.logger.info(
        { keyID, operations: rejected },
        'pending operations of a revoked API key, or of its ended secret, rejected',
      );
    return rejected > 0;
  }

  private async rejectIfRevoked(
    { keyID, operationID, secretGeneration }: Extract<RevocationStep, { kind: 'check-key' }>,
    event: RecordedEvent,
  ): Promise<boolean> {
    if (this.notRevoked.has(keyID)) return false;
    const { state } = await loadState(this.deps, streams.apiKey(keyID), apiKeyDecider);
    if (state.status === 'none') return false;
    const secretEnded = secretGeneration !== undefined && state.endedSecretGenerations.includes(secretGeneration);
    if (state.status !== 'revoked' && !secretEnded) {
      // Remembered as standing only while no secret of it has ended: an operation made with an ended one may still
      // come (a lagging directory elsewhere), and must be read against the key each time.
      if (state.endedSecretGenerations.length === 0) {
        if (this.notRevoked.size >= MAX_NOT_REVOKED) this.notRevoked.clear();
        this.notRevoked.add(keyID);
      }
      return false;
    }
    const rejected = await this.reject(operationID, event);
    if (rejected) this.options.logger.info({ keyID, operationID }, 'operation created with a revoked API key rejected');
    return rejected;
  }

  /**
   * The decision reads the operation and its key again on the write side: it rejects only what is still pending (true:
   * it is rejected now).
   */
  private async reject(operationID: string, cause: RecordedEvent): Promise<boolean> {
    const context: CommandContext = { actor: KEY_REVOCATION_ACTOR, correlationId: randomUUID(), causationId: cause.id };
    const result = await rejectOperationOfRevokedKey(this.deps, operationID, context);
    return result.state === 'rejected';
  }

  /**
   * Rejects the pending operations of every key that has expired by now (a key is read once per sweep); the
   * number it saw rejected (one another process rejected at the same moment may count too). One sweep at a time
   * in this process; a sweep already running is awaited.
   */
  sweepExpired(): Promise<number> {
    this.sweeping ??= this.sweepExpiredOnce().finally(() => {
      this.sweeping = null;
    });
    return this.sweeping;
  }

  private async sweepExpiredOnce(): Promise<number> {
    const now = this.options.clock().toISOString();
    const expired = new Map<string, boolean>();
    let rejected = 0;
    for (let after = 0; ;) {
      const page = await pendingOperationsAfter(this.options.readStore, after, SWEEP_PAGE);
      for (const doc of page) {
        let keyExpired = expired.get(doc.keyID);
        if (keyExpired === undefined) {
          const { state } = await loadState(this.deps, streams.apiKey(doc.keyID), apiKeyDecider);
          // A revoked key's operations are the revocation's to reject.
          keyExpired =
            state.status !== 'none' && state.status !== 'revoked' && effectiveStatus(state, now) === 'expired';
          expired.set(doc.keyID, keyExpired);
        }
        if (keyExpired && (await this.rejectExpired(doc.id))) rejected += 1;
      }
      if (page.length < SWEEP_PAGE) break;
      after = page[page.length - 1]!.requestPosition;
    }
    if (rejected > 0)
      this.options.logger.info(
        { operations: rejected, keys: [...expired].filter(([, yes]) => yes).map(([keyID]) => keyID) },
        'pending operations of expired API keys rejected',
      );
    return rejected;
  }

  private async rejectExpired(operationID: string): Promise<boolean> {
    const context: CommandContext = { actor: KEY_REVOCATION_ACTOR, correlationId: randomUUID() };
    const result = await rejectOperationOfExpiredKey(this.deps, operationID, context);
    return result.state === 'rejected';
  }
}

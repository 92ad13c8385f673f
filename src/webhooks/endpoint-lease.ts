import { randomUUID } from 'node:crypto';
import { CheckpointConflictError, type CollectionDefinition, type ReadStore, type Write } from '../ports/read-store.ts';
import { UnchangedWatch } from '../shared/unchanged-watch.ts';

/**
 * Who wrote each endpoint's current beat: `{ id: <endpoint>, holder, beat }`, written in the commit that moves the
 * beat. (Before the heartbeat lease it held counters, with `expiresAt`; the index stays for their sake.)
 */
export const WEBHOOK_LEASES_COLLECTION: CollectionDefinition = { name: 'webhook_leases', indexes: [['expiresAt']] };

type HolderDoc = {
  id: string;
  holder: string;
  beat: number;
};

/**
 * Which process sends an endpoint's deliveries, decided without comparing two hosts' clocks (docs/webhooks.md): a
 * heartbeat lease, a beat counter in the read store (checkpoint `webhook-lease:<endpoint>`), odd while held. Every
 * move is a compare-and-set: the holder beats at each recorded attempt (and, idle, before an attempt whose lease may
 * run short); a peer takes over only once it has seen the beat unchanged for `leaseMs` of its own monotonic clock. A
 * holder paused past its lease finds the beat moved at its next write and drops what it was about to record.
 *
 * Each move also records its holder's random id with the beat (same commit): a holder whose write went unanswered
 * recognises the beat as its own at its next look, which the number alone cannot tell from a peer's takeover.
 */
export class EndpointLeases {
  private readonly readStore: ReadStore;
  private readonly leaseMs: number;
  private readonly monotonicMs: () => number;
  /** Leases this process holds: the beat it last wrote, and when it began writing it (monotonic ms). */
  private readonly held = new Map<string, { beat: number; atMs: number }>();
  /** Beats of leases held elsewhere, and how long this process has seen each unchanged. */
  private readonly watched: UnchangedWatch;
  /**
   * Leases this process may still hold though a write's answer was lost: the beats it wrote or may have written
   * last, and when it began writing each (monotonic ms).
   */
  private readonly unsure = new Map<string, { beat: number; atMs: number }[]>();
  /** This EndpointLeases' identity in the holder documents: one per process, never reused. */
  private readonly holder = randomUUID();

  constructor(readStore: ReadStore, leaseMs: number, monotonicMs: () => number = () => performance.now()) {
    this.readStore = readStore;
    this.leaseMs = leaseMs;
    this.monotonicMs = monotonicMs;
    this.watched = new UnchangedWatch(monotonicMs);
  }

  /**
   * True when this process holds the endpoint's lease with `needMs` of it left by its own clock (a beat is
   * written when it may run short); taken when it is free, or when its holder has not beaten for a lease.
   */
  async hold(endpointID: string, needMs: number): Promise<boolean> {
    const held = this.held.get(endpointID);
    if (held !== undefined) {
      // A peer counts from when it saw our beat, after we began writing it: our own count is never the shorter.
      if (this.monotonicMs() - held.atMs + needMs <= this.leaseMs / 2) return true;
      return this.move(endpointID, held.beat, held.beat + 2, []);
    }
    const beat = await this.readStore.getCheckpoint(checkpointOf(endpointID));
    if (beat === null || beat % 2 === 0) return this.move(endpointID, beat, (beat ?? 0) + 1, []);
    if (await this.recognise(endpointID, beat)) return this.hold(endpointID, needMs);
    if (!this.watched.unchangedFor(endpointID, beat, this.leaseMs)) return false;
    return this.move(endpointID, beat, beat + 2, []);
  }

  /**
   * Commits the writes under the endpoint's lease, moving its beat: false, with nothing written, when this process
   * no longer holds it (another took it over meanwhile).
   */
  async commitUnder(endpointID: string, writes: Write[]): Promise<boolean> {
    const held = this.held.get(endpointID);
    if (held === undefined) return false;
    return this.move(endpointID, held.beat, held.beat + 2, writes);
  }

  /** Releases the lease (an even beat): the next process takes it at once rather than after a lease. */
  async release(endpointID: string): Promise<void> {
    const held = this.held.get(endpointID);
    if (held === undefined) return;
    this.held.delete(endpointID);
    await this.readStore
      .commit([], { projection: checkpointOf(endpointID), position: held.beat + 1, expected: held.beat })
      .catch((error: unknown) => {
        if (error instanceof CheckpointConflictError) return; // taken over meanwhile: nothing of ours to release
        this.unsure.set(endpointID, [held]); // released or not: at least no one else moved it
        throw error;
      });
  }

  /**
   * Every lease this process holds, best effort: one left behind (the store is failing) is taken over after a lease.
   */
  async releaseAll(): Promise<void> {
    await Promise.allSettled([...this.held.keys()].map((endpointID) => this.release(endpointID)));
  }

  /**
   * Whether the held beat `beat` is one this process wrote (its write's answer lost, or its release failed): then
   * the lease is its own again, counted from when it began writing that beat, which no peer's count precedes.
   */
  private async recognise(endpointID: string, beat: number): Promise<boolean> {
    const candidates = this.unsure.get(endpointID);
    const mine = candidates?.find((written) => written.beat === beat);
    if (mine === undefined) {
      if (candidates !== undefined) this.unsure.delete(endpointID); // the beat moved past them: beats never come back
      return false;
    }
    const doc = await this.readStore.get<HolderDoc>(WEBHOOK_LEASES_COLLECTION.name, endpointID);
    this.unsure.delete(endpointID);
    if (doc?.holder !== this.holder || doc.beat !== beat) return false;
    this.held.set(endpointID, mine);
    this.watched.forget(endpointID);
    return true;
  }

  private async move(endpointID: string, expected: number | null, position: number, writes: Write[]): Promise<boolean> {
    const atMs = this.monotonicMs();
    const held = this.held.get(endpointID);
    const signed: Write = {
      op: 'upsert',
      collection: WEBHOOK_LEASES_COLLECTION.name,
      doc: { id: endpointID, holder: this.holder, beat: position } satisfies HolderDoc,
    };
    try {
      await this.readStore.commit([...writes, signed], { projection: checkpointOf(endpointID), position, expected });
    } catch (error) {
      // A conflict: someone else moved the beat. Any other error: whether it moved is unknown, so it is not counted
      // ours until a look at the store says so (recognise).
      this.held.delete(endpointID);
      if (!(error instanceof CheckpointConflictError)) {
        this.unsure.set(endpointID, [...(held?.beat === expected ? [held] : []), { beat: position, atMs }]);
        throw error;
      }
      this.unsure.delete(endpointID);
      return false;
    }
    this.held.set(endpointID, { beat: position, atMs });
    this.watched.forget(endpointID);
    this.unsure.delete(endpointID);
    return true;
  }
}

const checkpointOf = (endpointID: string) => `webhook-lease:${endpointID}`;

import { CheckpointConflictError, type ReadStore, type Write } from '../ports/read-store.ts';

/**
 * Which process sends an endpoint's deliveries, decided without comparing two hosts' clocks: a heartbeat lease.
 * The lease is a beat counter in the read store (a checkpoint named `webhook-lease:<endpoint>`): odd while held,
 * even once released. Every move of it is a compare-and-set (a commit fenced by the checkpoint: atomic on every
 * adapter): the holder moves it at each recorded attempt and, when idle, before an attempt whose lease may run
 * short; a peer takes a held lease over only once it has seen the beat unchanged for `leaseMs` of ITS OWN
 * monotonic clock, by a compare-and-set on the beat it saw. Whatever either wall clock says, a live holder keeps
 * its lease, and a dead one's is taken over a lease after it stopped beating. A holder that was paused past its
 * lease finds the beat moved at its next write: what it was about to record is dropped (the fence), never
 * written over the newer holder's.
 */
export class EndpointLeases {
  private readonly readStore: ReadStore;
  private readonly leaseMs: number;
  private readonly monotonicMs: () => number;
  /** Leases this process holds: the beat it last wrote, and when it began writing it (monotonic ms). */
  private readonly held = new Map<string, { beat: number; atMs: number }>();
  /** Beats of leases held elsewhere, and when this process first saw each unchanged (monotonic ms). */
  private readonly watched = new Map<string, { beat: number; sinceMs: number }>();

  constructor(readStore: ReadStore, leaseMs: number, monotonicMs: () => number = () => performance.now()) {
    this.readStore = readStore;
    this.leaseMs = leaseMs;
    this.monotonicMs = monotonicMs;
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
    const now = this.monotonicMs();
    const seen = this.watched.get(endpointID);
    if (seen?.beat !== beat) {
      this.watched.set(endpointID, { beat, sinceMs: now });
      return false;
    }
    if (now - seen.sinceMs < this.leaseMs) return false;
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

  /** Whether this process believes it holds the endpoint's lease (it may have lost it: commitUnder tells). */
  holds(endpointID: string): boolean {
    return this.held.has(endpointID);
  }

  /** Releases the lease (an even beat): the next process takes it at once rather than after a lease. */
  async release(endpointID: string): Promise<void> {
    const held = this.held.get(endpointID);
    if (held === undefined) return;
    this.held.delete(endpointID);
    await this.readStore.commit([], { projection: checkpointOf(endpointID), position: held.beat + 1, expected: held.beat }).catch((error: unknown) => {
      if (!(error instanceof CheckpointConflictError)) throw error; // taken over meanwhile: nothing of ours to release
    });
  }

  /** Every lease this process holds, best effort: one left behind (the store is failing) is taken over after a lease. */
  async releaseAll(): Promise<void> {
    await Promise.allSettled([...this.held.keys()].map((endpointID) => this.release(endpointID)));
  }

  private async move(endpointID: string, expected: number | null, position: number, writes: Write[]): Promise<boolean> {
    const atMs = this.monotonicMs();
    try {
      await this.readStore.commit(writes, { projection: checkpointOf(endpointID), position, expected });
    } catch (error) {
      // A conflict: someone else moved the beat. Any other error: whether it moved is unknown, so it is not counted ours.
      this.held.delete(endpointID);
      if (!(error instanceof CheckpointConflictError)) throw error;
      return false;
    }
    this.held.set(endpointID, { beat: position, atMs });
    this.watched.delete(endpointID);
    return true;
  }
}

const checkpointOf = (endpointID: string) => `webhook-lease:${endpointID}`;

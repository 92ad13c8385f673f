/**
 * How long this process has seen each operation's latest claim unchanged, on its own monotonic clock: the only
 * time a takeover trusts. A claim's `leaseUntil` was written from its claimer's wall clock, which may run a day
 * ahead of or behind ours; the stream's revision, watched here, moves whenever its holder claims again (each
 * attempt, recovery or outcome appends), whatever either clock says. A process that starts afresh has seen
 * nothing yet, so it waits a whole lease before taking over a claim it finds.
 */
export class ClaimWatch {
  private readonly monotonicMs: () => number;
  private readonly seen = new Map<string, { revision: number; sinceMs: number }>();

  constructor(monotonicMs: () => number = () => performance.now()) {
    this.monotonicMs = monotonicMs;
  }

  /** Milliseconds since this process first saw the operation's stream at this revision (0 the first time). */
  unchangedForMs(operationID: string, revision: number): number {
    const now = this.monotonicMs();
    const known = this.seen.get(operationID);
    if (known?.revision === revision) return now - known.sinceMs;
    this.seen.set(operationID, { revision, sinceMs: now });
    return 0;
  }

  /** The operation is settled (or not ours to carry): nothing more to watch. */
  forget(operationID: string): void {
    this.seen.delete(operationID);
  }

  get size(): number {
    return this.seen.size;
  }

  ids(): string[] {
    return [...this.seen.keys()];
  }
}

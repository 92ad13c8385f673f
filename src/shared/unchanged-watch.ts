/**
 * How long this process has seen each thing unchanged, on its own monotonic clock: the only time a takeover or a
 * stall trusts. A value written from another host's wall clock may run a day ahead of or behind ours; a value
 * that moves whenever its owner is alive (a stream's revision, a lease's beat, a checkpoint, an attempt count)
 * is watched here instead, whatever either clock says. A process that starts afresh has seen nothing yet, so it
 * counts from its first look: it waits a whole lease before it trusts that a thing it finds is dead.
 */
export class UnchangedWatch<V = number> {
  private readonly monotonicMs: () => number;
  /** At most this many things are watched; the longest watched is forgotten first (it is seen afresh). */
  private readonly limit: number;
  private readonly seen = new Map<string, { value: V; sinceMs: number }>();

  constructor(monotonicMs: () => number = () => performance.now(), limit = Infinity) {
    this.monotonicMs = monotonicMs;
    this.limit = limit;
  }

  /** Milliseconds since this process first saw `key` at `value` (0 the first time, and after it changed). */
  unchangedForMs(key: string, value: V): number {
    const now = this.monotonicMs();
    const known = this.seen.get(key);
    if (known !== undefined && known.value === value) return now - known.sinceMs;
    this.see(key, value, now);
    return 0;
  }

  /** Whether `key` has been seen at `value` for `ms` at least: never at the first look. */
  unchangedFor(key: string, value: V, ms: number): boolean {
    const known = this.seen.get(key);
    const unchangedMs = this.unchangedForMs(key, value);
    return known !== undefined && known.value === value && unchangedMs >= ms;
  }

  /** `key` is at `value` since `sinceMs` (this clock): this process made the change itself, and knows when. */
  see(key: string, value: V, sinceMs: number = this.monotonicMs()): void {
    this.seen.delete(key);
    if (this.seen.size >= this.limit) this.seen.delete(this.seen.keys().next().value!);
    this.seen.set(key, { value, sinceMs });
  }

  /** Settled, or not ours to watch: nothing more of it is kept. */
  forget(key: string): void {
    this.seen.delete(key);
  }

  get size(): number {
    return this.seen.size;
  }

  keys(): string[] {
    return [...this.seen.keys()];
  }
}

/**
 * Runs tasks one at a time per key, and tasks of different keys concurrently. Within one process this
 * keeps creates for the same payer from racing each other into version conflicts and retries; across
 * processes the expected revisions of the atomic append still decide.
 */
export class KeyedMutex {
  private readonly tails = new Map<string, Promise<void>>();

  /** Runs `task` once every earlier task of every one of `keys` has settled. */
  async run<T>(keys: string[], task: () => Promise<T>): Promise<T> {
    const unique = keys.length === 1 ? keys : [...new Set(keys)];
    let previous: Array<Promise<void>> | undefined;
    for (const key of unique) {
      const tail = this.tails.get(key);
      if (tail) (previous ??= []).push(tail);
    }
    let settled!: () => void;
    const tail = new Promise<void>((resolve) => (settled = resolve));
    for (const key of unique) this.tails.set(key, tail);
    try {
      // Nothing to wait for (the usual case): the task starts in this turn, without a hop through allSettled. (A tail
      // never rejects.)
      if (previous) await (previous.length === 1 ? previous[0] : Promise.all(previous));
      return await task();
    } finally {
      settled();
      for (const key of unique) if (this.tails.get(key) === tail) this.tails.delete(key);
    }
  }
}

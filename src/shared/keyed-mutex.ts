/**
 * Runs tasks one at a time per key, and tasks of different keys concurrently. Within one process this
 * keeps creates for the same payer from racing each other into version conflicts and retries; across
 * processes the expected revisions of the atomic append still decide.
 */
export class KeyedMutex {
  private readonly tails = new Map<string, Promise<unknown>>();

  /** Runs `task` once every earlier task of every one of `keys` has settled. */
  async run<T>(keys: string[], task: () => Promise<T>): Promise<T> {
    const unique = [...new Set(keys)];
    const previous = unique.map((key) => this.tails.get(key) ?? Promise.resolve());
    const result = Promise.allSettled(previous).then(task);
    const tail = result.then(
      () => undefined,
      () => undefined,
    );
    for (const key of unique) this.tails.set(key, tail);
    try {
      return await result;
    } finally {
      for (const key of unique) if (this.tails.get(key) === tail) this.tails.delete(key);
    }
  }
}

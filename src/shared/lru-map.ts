/**
 * A map that keeps at most `maxEntries` entries: reading or writing an entry makes it the most recent, and past
 * the bound the least recently used goes. For caches of facts that can always be read again.
 */
export class LruMap<K, V> {
  private readonly maxEntries: number;
  private readonly entries = new Map<K, V>();

  constructor(maxEntries: number) {
    this.maxEntries = maxEntries;
  }

  get(key: K): V | undefined {
    const value = this.entries.get(key);
    if (value !== undefined) {
      this.entries.delete(key); // re-inserted last: the map's order is the eviction order
      this.entries.set(key, value);
    }
    return value;
  }

  set(key: K, value: V): void {
    this.entries.delete(key);
    this.entries.set(key, value);
    if (this.entries.size > this.maxEntries) this.entries.delete(this.entries.keys().next().value as K);
  }

  delete(key: K): void {
    this.entries.delete(key);
  }

  get size(): number {
    return this.entries.size;
  }
}

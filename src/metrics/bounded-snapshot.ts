/**
 * A value read from the stores at scrape time, bounded so that a slow or hung store cannot hang the scrape:
 * - the gauges of one scrape share one bounded read (they ask while it is under way): one read per scrape,
 *   and one failure counted per scrape, not one per gauge;
 * - past `timeoutMs` the scrape goes on without it (`undefined`: the families are left out, never stale);
 * - a read still under way from an earlier scrape is waited on again rather than started anew, so a hung
 *   store holds at most one read per snapshot, however often Prometheus scrapes.
 */
export class BoundedSnapshot<T> {
  private readonly load: () => Promise<T>;
  private readonly timeoutMs: number;
  private readonly failed: (reason: 'timeout' | 'error') => void;
  /** The store read, until it settles (it may outlive the scrape that started it). */
  private reading: Promise<T> | undefined;
  /** The current scrape's bounded wait on it, shared by the gauges of that scrape. */
  private waiting: Promise<T | undefined> | undefined;

  constructor(load: () => Promise<T>, timeoutMs: number, failed: (reason: 'timeout' | 'error') => void) {
    this.load = load;
    this.timeoutMs = timeoutMs;
    this.failed = failed;
  }

  get(): Promise<T | undefined> {
    if (!this.waiting) {
      const waiting = this.bounded();
      this.waiting = waiting;
      // bounded() never rejects (a failed read is counted and answered undefined), so neither does this.
      void waiting.finally(() => {
        if (this.waiting === waiting) this.waiting = undefined;
      });
    }
    return this.waiting;
  }

  private async bounded(): Promise<T | undefined> {
    const reading = this.reading ?? this.start();
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), this.timeoutMs);
    });
    try {
      const first = await Promise.race([reading.then((value) => ({ value })), timeout]);
      if (first === 'timeout') {
        this.failed('timeout');
        return undefined;
      }
      return first.value;
    } catch {
      this.failed('error');
      return undefined;
    } finally {
      clearTimeout(timer);
    }
  }

  private start(): Promise<T> {
    // A load that throws at once fails like one that rejects.
    const reading = Promise.resolve().then(() => this.load());
    this.reading = reading;
    // Forgotten once settled, so that the next scrape reads afresh; observed here, so no rejection goes unhandled.
    const forget = () => {
      if (this.reading === reading) this.reading = undefined;
    };
    reading.then(forget, forget);
    return reading;
  }
}

import type { Logger } from '../logger.ts';
import { backoffMs, type BackoffSchedule } from '../shared/backoff.ts';
import { describeError } from '../shared/supervised-consumer.ts';
import type { PassResult } from './pass.ts';

export interface CarrierOptions {
  /** Passes running at once (EXECUTOR_CONCURRENCY); an operation waiting between passes takes no slot. */
  concurrency: number;
  /** One pass of the workflow on an operation (runPass); throws on an unexpected error. */
  pass(operationID: string, lastError: string | undefined, signal: AbortSignal): Promise<PassResult>;
  /** The backoff after an unexpected error (a store that failed), by the operation's errors so far. */
  errorBackoff: BackoffSchedule;
  clock: () => Date;
  logger: Logger;
}

interface Carried {
  settled: Promise<void>;
  settle(): void;
  /** The next pass, while the operation waits between passes. */
  timer: NodeJS.Timeout | undefined;
  /** Unexpected errors so far, for their backoff. */
  errors: number;
  /** The cause of the last failure, named if the operation runs out of attempts. */
  lastError: string | undefined;
}

/**
 * The operations this executor carries out, each until it is settled (completed or failed, or seen settled or
 * not its to do): it never abandons one. An operation runs pass after pass in one of `concurrency` slots;
 * between passes (another executor's live claim, a backoff after the ledger or a store failed) it waits on a
 * timer and holds no slot, so that a waiting operation never holds up the others.
 */
export class Carrier {
  private readonly options: CarrierOptions;
  private readonly carried = new Map<string, Carried>();
  private readonly slots: Slots;
  private readonly stopping = new AbortController();
  /** Passes begun and not ended (waiting for a slot, or running). */
  private readonly inFlight = new Set<Promise<void>>();

  constructor(options: CarrierOptions) {
    this.options = options;
    this.slots = new Slots(options.concurrency);
  }

  /** Operations carried and not settled yet. */
  get size(): number {
    return this.carried.size;
  }

  has(operationID: string): boolean {
    return this.carried.has(operationID);
  }

  /**
   * Carries the operation out, once however often it is asked; resolves when it is settled. Never rejects; after
   * stop() what is not settled never resolves (it stays unhandled, for the next start).
   */
  carry(operationID: string): Promise<void> {
    const known = this.carried.get(operationID);
    if (known) return known.settled;
    if (this.stopping.signal.aborted) return new Promise(() => {});
    let settle = () => {};
    const settled = new Promise<void>((resolve) => (settle = resolve));
    const entry: Carried = { settled, settle, timer: undefined, errors: 0, lastError: undefined };
    this.carried.set(operationID, entry);
    this.begin(operationID, entry);
    return settled;
  }

  /** No pass begins any more, pauses are cut short, and the passes under way are awaited. */
  async stop(): Promise<void> {
    this.stopping.abort();
    for (const entry of this.carried.values()) clearTimeout(entry.timer);
    await Promise.allSettled([...this.inFlight]);
  }

  private begin(operationID: string, entry: Carried): void {
    entry.timer = undefined;
    const pass = this.pass(operationID, entry).finally(() => this.inFlight.delete(pass));
    this.inFlight.add(pass);
  }

  /** One pass in a slot, then the next one scheduled unless the operation is settled; never rejects. */
  private async pass(operationID: string, entry: Carried): Promise<void> {
    let delayMs: number;
    try {
      const result = await this.slots.run(() => this.options.pass(operationID, entry.lastError, this.stopping.signal));
      if (result.kind === 'settled') {
        this.carried.delete(operationID);
        return entry.settle();
      }
      // Another executor's claim: look again just after it would have run out unseen. The ledger gave no answer: its
      // backoff.
      if (result.kind === 'wait') delayMs = result.delayMs + 10;
      else [delayMs, entry.lastError] = [result.delayMs, result.cause];
    } catch (error) {
      if (this.stopping.signal.aborted) return;
      entry.errors += 1;
      entry.lastError = describeError(error);
      delayMs = backoffMs(entry.errors, this.options.errorBackoff);
      this.options.logger.warn(
        { err: error, operationID, errors: entry.errors, retryInMs: Math.round(delayMs) },
        'operation execution failed; retrying',
      );
    }
    if (this.stopping.signal.aborted) return;
    entry.timer = setTimeout(() => this.begin(operationID, entry), Math.max(0, delayMs));
  }
}

/** At most `size` tasks at once; the others wait their turn, in order. */
class Slots {
  private readonly size: number;
  private running = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(size: number) {
    this.size = size;
  }

  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.running < this.size) this.running += 1;
    else await new Promise<void>((resolve) => this.waiting.push(resolve)); // the slot is handed over as it is
    try {
      return await task();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.running -= 1;
    }
  }
}

import type { WalletRef } from '../domain/events.ts';
import { formatPartyRef, type PartyRef, type PartyType } from '../domain/parties.ts';
import { LruMap } from '../shared/lru-map.ts';
import { BALANCES_PROJECTION } from './balances.ts';
import { CONSOLE_OPERATIONS_PROJECTION } from './console-operations.ts';
import { DISTRIBUTOR_OPERATIONS_PROJECTION } from './distributor-operations.ts';
import { MERCHANT_OPERATIONS_PROJECTION } from './merchant-operations.ts';

/** A follower this process runs that builds a read model: what a read of the model waits on. */
export interface CommittedPositions {
  /** The committed position as this process knows it (null: nothing committed yet). */
  readonly position: number | null;
  /** True once every event of the model at or below `position` is handled and committed; false after the bound. */
  untilCommitted(position: number, timeoutMs: number): Promise<boolean>;
}

/** Several followers that build one model (the balances: the read store's and a view in memory): all of them. */
export function allCommitted(followers: readonly CommittedPositions[]): CommittedPositions {
  if (followers.length === 1) return followers[0]!;
  return {
    get position() {
      const positions = followers.map((f) => f.position);
      return positions.includes(null) ? null : Math.min(...(positions as number[]));
    },
    untilCommitted: async (position, timeoutMs) =>
      (await Promise.all(followers.map((f) => f.untilCommitted(position, timeoutMs)))).every(Boolean),
  };
}

/** Parties whose latest write is remembered: far more than write at once; one evicted long ago has been read since. */
const REMEMBERED = 10_000;

/**
 * Read-your-writes, one mechanism for every read of a read model: the process that appended remembers, per model
 * and party, the log position of its latest write that model shows the party (the creating party's operation,
 * the payer's hold); a read of that model for that party first waits until the model's follower in this process
 * has committed that position. So a write is answered as soon as its append is committed, and the same process's
 * next read shows it. The wait is bounded (READ_YOUR_WRITES_TIMEOUT_MS): past it the read answers what the model
 * holds. A model no follower of this process builds is not waited on (its writes are not remembered): a process
 * without the projections answers at once, as a client of a split deployment reads another process anyway.
 */
export class ReadYourWrites {
  private readonly followers: ReadonlyMap<string, CommittedPositions>;
  private readonly timeoutMs: number;
  private readonly latest = new LruMap<string, number>(REMEMBERED);

  constructor(options: { followers: ReadonlyMap<string, CommittedPositions>; timeoutMs: number }) {
    this.followers = options.followers;
    this.timeoutMs = options.timeoutMs;
  }

  /**
   * This process appended, at `position`, an event that each of `models` shows `party` (`<type>:<id>`). The
   * position must be of an event the model follows: a follower's checkpoint stops at the last event it follows.
   */
  wrote(models: readonly string[], party: string, position: number): void {
    if (this.timeoutMs <= 0) return;
    for (const model of models) {
      if (!this.followers.has(model)) continue;
      const key = `${model}\u0000${party}`;
      if ((this.latest.get(key) ?? -1) < position) this.latest.set(key, position);
    }
  }

  /**
   * Resolves once `model` has committed this process's latest write for `party`, or once the bound has passed;
   * undefined when there is nothing to wait for, so that a read of a party this process has not written (most of
   * them), or whose latest write is already committed, goes on in the same tick, with no promise made.
   */
  untilReadable(model: string, party: string): Promise<void> | undefined {
    const key = `${model}\u0000${party}`;
    const position = this.latest.get(key);
    if (position === undefined) return undefined;
    const follower = this.followers.get(model)!;
    // Committed already: forgotten, so the party's next reads make no promise either.
    if ((follower.position ?? -1) >= position) {
      this.latest.delete(key);
      return undefined;
    }
    return follower.untilCommitted(position, this.timeoutMs).then(() => undefined);
  }
}

/** The models an operation's events show the party that created it: its operation lists, the console's. */
const OPERATION_MODELS: Record<PartyType, readonly string[]> = {
  distributor: [DISTRIBUTOR_OPERATIONS_PROJECTION, CONSOLE_OPERATIONS_PROJECTION],
  merchant: [MERCHANT_OPERATIONS_PROJECTION, CONSOLE_OPERATIONS_PROJECTION],
};

/**
 * This process wrote an operation's events (a create, a checker's decision): at `position` the operation's own
 * (its creating party's lists), at `walletPosition` the payer's hold or its release (the payer's balance).
 */
export function wroteOperation(
  reads: ReadYourWrites | undefined,
  operation: { party: PartyRef | null; payer: WalletRef },
  at: { position?: number | undefined; walletPosition?: number | undefined },
): void {
  if (!reads) return;
  const { party, payer } = operation;
  if (at.position !== undefined && party) reads.wrote(OPERATION_MODELS[party.type], formatPartyRef(party), at.position);
  if (at.walletPosition !== undefined && (payer.kind === 'distributor' || payer.kind === 'merchant'))
    reads.wrote([BALANCES_PROJECTION], formatPartyRef({ type: payer.kind, id: payer.id }), at.walletPosition);
}

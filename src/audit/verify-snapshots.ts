import { StoreCorruptedError } from '../ports/store-corrupted.ts';
import type { EventFilter, EventStore, RecordedEvent } from '../ports/event-store.ts';
import { fromUnits, toUnits } from './amounts.ts';
import type { ProblemLog } from './verify-report.ts';

/**
 * `snapshot`: every StateSnapshotted (src/commands/snapshots.ts) agrees with the history it summarizes. The
 * decisions trust a snapshot instead of folding the stream, so one that disagrees would let a payer overdraw
 * or a key pass its daily volume: the audit folds the same sums itself (bigint units, not the commands' code)
 * and compares them at the snapshot's revision.
 *
 * Snapshots are written after the events they summarize, so the pass meets them late; they are collected
 * first (one filtered read of `snapshot-*`, one entry per SNAPSHOT_EVERY events), and only streams that have
 * one are folded.
 */

const SNAPSHOT_PREFIX = 'snapshot-';

/** The sums each fold keeps, and how each event changes them: the audit's own reading of the event catalog. */
const FOLDS: Record<
  string,
  { prefix: string; fields: readonly string[]; apply(sums: Record<string, bigint>, event: RecordedEvent): void }
> = {
  'wallet/1': {
    prefix: 'wallet-',
    fields: ['balance', 'held'],
    apply(sums, event) {
      const data = event.data as { amount: string; heldAmount?: string };
      switch (event.type) {
        case 'FundsHeld':
          sums.held! += toUnits(data.amount);
          break;
        case 'HoldReleased':
          sums.held! -= toUnits(data.amount);
          break;
        case 'WalletCredited':
          sums.balance! += toUnits(data.amount);
          break;
        case 'WalletDebited':
          sums.balance! -= toUnits(data.amount);
          sums.held! -= toUnits(data.heldAmount ?? '0');
          break;
      }
    },
  },
  'keyVolume/1': {
    prefix: 'keyVolume-',
    fields: ['total'],
    apply(sums, event) {
      const data = event.data as { amount: string };
      if (event.type === 'VolumeReserved') sums.total! += toUnits(data.amount);
      else if (event.type === 'VolumeReleased') sums.total! -= toUnits(data.amount);
    },
  },
};

interface Claim {
  position: number;
  stream: string;
  revision: number;
  fold: string;
  state: Record<string, unknown>;
  checked: boolean;
}

interface Folding {
  fold: (typeof FOLDS)[string];
  sums: Record<string, bigint>;
  /** The claims on this stream by revision. */
  claims: Map<number, Claim[]>;
}

/**
 * A page of the history up to `head`, as the verifier reads it: a corrupted store is reported with the position the
 * unreadable part starts at, what an operator restoring the store needs first.
 */
export function readHistoryPage(
  store: EventStore,
  from: number,
  head: number,
  maxCount: number,
  filter?: EventFilter,
): Promise<RecordedEvent[]> {
  return store.readAll({ fromPosition: from, toPosition: head, maxCount, filter }).catch((error: unknown) => {
    if (error instanceof StoreCorruptedError)
      throw new StoreCorruptedError(
        error.store,
        `${error.reason}; the history is unreadable from position ${from} (of ${head})`,
        { cause: error },
      );
    throw error;
  });
}

export class SnapshotChecker {
  private readonly problems: ProblemLog;
  private readonly scale: number;
  private readonly folding = new Map<string, Folding>();
  private readonly claims: Claim[] = [];

  constructor(problems: ProblemLog, scale: number) {
    this.problems = problems;
    this.scale = scale;
  }

  get checked(): number {
    return this.claims.length;
  }

  /** Reads the snapshots up to `head` before the pass, and drops (as problems) those that cannot be checked. */
  async prepare(store: EventStore, head: number, pageSize = 1000): Promise<void> {
    for (let from = 0; from <= head;) {
      const page = await readHistoryPage(store, from, head, pageSize, { streamPrefixes: [SNAPSHOT_PREFIX] });
      if (page.length === 0) break;
      for (const event of page) this.claim(event);
      from = page[page.length - 1]!.position + 1;
    }
  }

  private claim(event: RecordedEvent): void {
    const problem = (detail: string) =>
      this.problems.add({ check: 'snapshot', position: event.position, stream: event.stream, detail });
    if (event.type !== 'StateSnapshotted')
      return problem(`${event.type} in a snapshot stream, which holds StateSnapshotted only`);
    const data = event.data as Partial<Claim>;
    const summarized = event.stream.slice(SNAPSHOT_PREFIX.length);
    if (data.stream !== summarized)
      return problem(`a snapshot of ${String(data.stream)} in the snapshot stream of ${summarized}`);
    const fold = typeof data.fold === 'string' ? FOLDS[data.fold] : undefined;
    if (!fold || !summarized.startsWith(fold.prefix))
      return problem(`a snapshot of ${summarized} by fold ${String(data.fold)}, which the audit cannot check`);
    if (typeof data.revision !== 'number' || !Number.isSafeInteger(data.revision) || data.revision < 0)
      return problem(`a snapshot of ${summarized} without a valid revision`);
    const state = (data.state ?? {}) as Record<string, unknown>;
    const malformed = fold.fields.filter((field) => {
      try {
        return typeof state[field] !== 'string' || (toUnits(state[field]), false);
      } catch {
        return true;
      }
    });
    if (malformed.length > 0)
      return problem(
        `the snapshot of ${summarized} at revision ${data.revision} has no decimal ${malformed.join(', ')}`,
      );
    const claim: Claim = {
      position: event.position,
      stream: summarized,
      revision: data.revision,
      fold: data.fold!,
      state,
      checked: false,
    };
    this.claims.push(claim);
    let folding = this.folding.get(summarized);
    if (!folding) {
      folding = { fold, sums: Object.fromEntries(fold.fields.map((field) => [field, 0n])), claims: new Map() };
      this.folding.set(summarized, folding);
    }
    folding.claims.set(claim.revision, [...(folding.claims.get(claim.revision) ?? []), claim]);
  }

  feed(event: RecordedEvent): void {
    const folding = this.folding.get(event.stream);
    if (!folding) return;
    folding.fold.apply(folding.sums, event);
    const claims = folding.claims.get(event.revision);
    if (!claims) return;
    for (const claim of claims) {
      claim.checked = true;
      const problem = (detail: string) =>
        this.problems.add({
          check: 'snapshot',
          position: claim.position,
          stream: `${SNAPSHOT_PREFIX}${claim.stream}`,
          detail,
        });
      if (claim.fold !== Object.keys(FOLDS).find((name) => FOLDS[name] === folding.fold)) {
        problem(
          `the snapshot of ${claim.stream} at revision ${claim.revision} is of fold ${claim.fold}, another than ` +
            `the stream's other snapshots`,
        );
        continue;
      }
      if (claim.position < event.position)
        problem(`the snapshot of ${claim.stream} at revision ${claim.revision} was written before that revision`);
      const wrong = folding.fold.fields.filter(
        (field) => toUnits(claim.state[field] as string) !== folding.sums[field],
      );
      if (wrong.length > 0) {
        const says = wrong
          .map((field) => `${field} ${fromUnits(toUnits(claim.state[field] as string), this.scale)}`)
          .join(', ');
        const folds = wrong.map((field) => `${field} ${fromUnits(folding.sums[field]!, this.scale)}`).join(', ');
        problem(
          `the snapshot of ${claim.stream} at revision ${claim.revision} disagrees with the history: it says ` +
            `${says}, the events fold to ${folds}`,
        );
      }
    }
  }

  finish(): void {
    for (const claim of this.claims) {
      if (claim.checked) continue;
      this.problems.add({
        check: 'snapshot',
        position: claim.position,
        stream: `${SNAPSHOT_PREFIX}${claim.stream}`,
        detail:
          `the snapshot of ${claim.stream} at revision ${claim.revision} summarizes a revision the stream never ` +
          'reached',
      });
    }
  }
}

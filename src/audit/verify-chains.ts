import type { RecordedEvent } from '../ports/event-store.ts';
import { GENESIS_HASH, eventHash } from './hash-chain.ts';
import { type AuditProblem } from './verify-report.ts';

// ---- hash and per-stream chains --------------------------------------------------------------------------

interface StreamHead {
  revision: number;
  hash: string;
  hashed: boolean;
}

/** Per-stream chains over events fed in $all order. Shared with the import, which checks a file the same way. */
export class ChainChecker {
  private readonly problems: { add(problem: AuditProblem): void };
  private readonly heads = new Map<string, StreamHead>();
  unhashed = 0;

  constructor(problems: { add(problem: AuditProblem): void }) {
    this.problems = problems;
  }

  get streams(): number {
    return this.heads.size;
  }

  /** Checks one event; returns the hash it stands for (the one it carries, or its content's if it carries none). */
  check(event: RecordedEvent): string {
    const computed = eventHash(event);
    const stored = event.metadata?.hash;
    const hashed = typeof stored === 'string';
    const { stream, revision, position } = event;
    if (hashed && stored !== computed) {
      this.problems.add({
        check: 'hash',
        position,
        stream,
        detail: `${event.type} at revision ${revision}: its content does not match its hash (altered)`,
      });
    }
    const head = this.heads.get(stream);
    const last = head?.revision ?? -1;
    let linked = true;
    if (revision <= last) {
      this.problems.add({
        check: 'chain',
        position,
        stream,
        detail: `revision ${revision} comes after revision ${last} in the global order (moved or duplicated)`,
      });
      linked = false;
    } else if (revision > last + 1) {
      const missing = revision - 1 > last + 1 ? `revisions ${last + 1} to ${revision - 1}` : `revision ${last + 1}`;
      this.problems.add({
        check: 'chain',
        position,
        stream,
        detail: `${missing} missing before revision ${revision} (removed, or moved after it)`,
      });
      linked = false;
    }
    if (hashed) {
      const expected = revision === 0 ? GENESIS_HASH : linked && head ? head.hash : null;
      const previous = event.metadata.previousHash;
      if (expected !== null && previous !== expected) {
        this.problems.add({
          check: 'chain',
          position,
          stream,
          detail:
            `revision ${revision}: previousHash ${String(previous).slice(0, 16)}… is not the hash of the event ` +
            `before it (${expected.slice(0, 16)}…): that event was altered or replaced`,
        });
      }
    } else {
      this.unhashed += 1;
      if (head?.hashed)
        this.problems.add({
          check: 'chain',
          position,
          stream,
          detail: `revision ${revision} carries no hash after hashed events (hash removed)`,
        });
    }
    const hash = hashed ? (stored as string) : computed;
    if (revision > last) {
      if (head) {
        head.revision = revision;
        head.hash = hash;
        head.hashed = hashed;
      } else {
        this.heads.set(stream, { revision, hash, hashed });
      }
    }
    return hash;
  }
}

import type { RecordedEvent } from '../ports/event-store.ts';
import { storedHash } from './hash-chain.ts';
import type { AuditProblem } from './verify-report.ts';

/**
 * What a history must hold, from an export's end marker or an import's record: its first `events` events end
 * with `lastID` carrying `lastHash`. A copy cut short is a valid history on its own (every chain and seal of
 * what is there checks), so only this tells it is incomplete.
 */
export interface ExpectedHistory {
  events: number;
  lastID: string | null;
  lastHash: string | null;
  /** Where the expectation comes from, for the report (an export file, the data directory's import record). */
  source: string;
  /** False when the import that recorded it never finished. */
  complete?: boolean;
}

/** The completeness check of `audit verify`: fed every event in position order. */
export class CompletenessChecker {
  private readonly expected: ExpectedHistory;
  private readonly problems: { add(problem: AuditProblem): void };
  private seen = 0;
  private found: { index: number; hash: string; position: number } | undefined;

  constructor(expected: ExpectedHistory, problems: { add(problem: AuditProblem): void }) {
    this.expected = expected;
    this.problems = problems;
  }

  feed(event: RecordedEvent): void {
    this.seen += 1;
    if (this.found === undefined && event.id === this.expected.lastID)
      this.found = { index: this.seen, hash: storedHash(event), position: event.position };
  }

  finish(): void {
    const { expected } = this;
    const add = (detail: string, position?: number) =>
      this.problems.add({
        check: 'completeness',
        ...(position === undefined ? {} : { position }),
        detail: `${detail} (expected by ${expected.source})`,
      });
    if (expected.complete === false)
      add('an import into this store did not finish: run events import again with the same file to resume it');
    if (expected.lastID === null) return;
    if (!this.found) {
      add(
        `the history is truncated: it holds ${this.seen} events, ${expected.events} expected ending with ` +
          `${expected.lastID}, which is missing`,
      );
    } else if (this.found.index !== expected.events) {
      add(
        `${expected.lastID} is event ${this.found.index} of the history, ${expected.events} expected: events are ` +
          'missing or were added before it',
        this.found.position,
      );
    } else if (this.found.hash !== expected.lastHash) {
      add(
        `${expected.lastID} carries hash ${this.found.hash.slice(0, 12)}..., ` +
          `${expected.lastHash?.slice(0, 12) ?? '-'}... expected`,
        this.found.position,
      );
    }
  }
}

import type { OperationCompleted, OperationExecutionStarted, OperationRequested } from '../../src/domain/events.ts';
import type { EventStore, RecordedEvent } from '../../src/ports/event-store.ts';

const OPERATION_EVENTS = [
  'OperationRequested',
  'OperationApproved',
  'OperationRejected',
  'OperationExecutionStarted',
  'OperationCompleted',
  'OperationFailed',
];
const PAGE = 1000;

export interface Outcome {
  type: 'OperationCompleted' | 'OperationFailed';
  at: number;
  data: Record<string, unknown>;
}

/**
 * The operations as the event store tells them, read incrementally (each refresh reads only what is new):
 * requests, decisions, claims and outcomes, with the stored times of the approvals and outcomes.
 */
export class OperationHistory {
  private readonly eventStore: EventStore;
  private position = 0;
  readonly requested = new Map<string, OperationRequested['data']>();
  /** Operation id -> the approval's stored time (epoch ms). */
  readonly approved = new Map<string, number>();
  readonly rejected = new Set<string>();
  /** Rejections by who made them: `checkers` (console users), or the system actor (e.g. `system:key-revocation`). */
  readonly rejectedBy: Record<string, number> = {};
  readonly outcomes = new Map<string, Outcome[]>();
  /** Operation id -> the executors' claims (OperationExecutionStarted), in order. */
  readonly claims = new Map<string, Array<{ executorID: string; attempt: number }>>();

  constructor(eventStore: EventStore) {
    this.eventStore = eventStore;
  }

  async refresh(): Promise<void> {
    for (;;) {
      const page = await this.eventStore.readAll({
        fromPosition: this.position + 1,
        maxCount: PAGE,
        filter: { eventTypes: OPERATION_EVENTS },
      });
      for (const event of page) this.apply(event);
      this.position = page.at(-1)?.position ?? this.position;
      if (page.length < PAGE) return;
    }
  }

  private apply(event: RecordedEvent): void {
    const data = event.data as { operationID: string };
    const id = data.operationID;
    switch (event.type) {
      case 'OperationRequested':
        this.requested.set(id, event.data as OperationRequested['data']);
        break;
      case 'OperationApproved':
        this.approved.set(id, Date.parse(event.createdAt));
        break;
      case 'OperationRejected': {
        this.rejected.add(id);
        const by = (event.data as { rejectedBy?: string }).rejectedBy ?? '?';
        const who = by.startsWith('system:') ? by : 'checkers';
        this.rejectedBy[who] = (this.rejectedBy[who] ?? 0) + 1;
        break;
      }
      case 'OperationExecutionStarted': {
        const claim = event.data as OperationExecutionStarted['data'];
        this.claims.set(id, [...(this.claims.get(id) ?? []), { executorID: claim.executorID, attempt: claim.attempt }]);
        break;
      }
      case 'OperationCompleted':
      case 'OperationFailed':
        this.outcomes.set(id, [
          ...(this.outcomes.get(id) ?? []),
          {
            type: event.type,
            at: Date.parse(event.createdAt),
            data: event.data as OperationCompleted['data'] & Record<string, unknown>,
          },
        ]);
        break;
    }
  }

  /** Why operations failed (their lastError, digits blurred so that alike causes count together), by count. */
  failureReasons(): Map<string, number> {
    const reasons = new Map<string, number>();
    for (const outcomes of this.outcomes.values()) {
      for (const outcome of outcomes) {
        if (outcome.type !== 'OperationFailed') continue;
        const lastError = outcome.data.lastError;
        const reason = (typeof lastError === 'string' ? lastError : '?').replace(/\d+/g, 'N').slice(0, 160);
        reasons.set(reason, (reasons.get(reason) ?? 0) + 1);
      }
    }
    return reasons;
  }

  /** Approved operations with no outcome yet. */
  unsettled(): string[] {
    return [...this.approved.keys()].filter((id) => !this.outcomes.has(id));
  }

  count(type: Outcome['type']): number {
    let n = 0;
    for (const outcomes of this.outcomes.values()) if (outcomes.some((o) => o.type === type)) n += 1;
    return n;
  }

  /** Approval to outcome, from the stored events' times, of operations approved at or after `since`. */
  settleLatencies(since: number): number[] {
    const latencies: number[] = [];
    for (const [id, approvedAt] of this.approved) {
      const outcome = this.outcomes.get(id)?.[0];
      if (outcome && approvedAt >= since) latencies.push(outcome.at - approvedAt);
    }
    return latencies;
  }
}

import { html, seg, time, type Html } from '../http/html.ts';
import type { RecordedEvent } from '../ports/event-store.ts';
import type { ConsoleServices } from './context.ts';
import { emailOf } from './users.ts';

/**
 * A stream's life in words: each event with when, who (the actor of its metadata, named as people know it:
 * a user's email, a key's label, the operator at the CLI, wallet-ops itself) and why (a reason, an error).
 * Read from the event history, so it is the record itself, not a read model's summary of it.
 */
export interface TimelineEntry {
  at: string;
  what: string;
  actor: Html;
  reason?: string;
  detail?: Html;
}

/** The actor of an event's metadata, as a link or a name. */
export async function describeActor(services: ConsoleServices, actor: unknown, operator?: unknown): Promise<Html> {
  const by = typeof operator === 'string' ? html` <span class="muted">(by ${operator} at the CLI)</span>` : '';
  if (typeof actor !== 'string' || actor === '') return html`<span class="muted">unknown</span>`;
  const [kind, ...rest] = actor.split(':');
  const id = rest.join(':');
  switch (kind) {
    case 'user':
      return html`<span class="actor-user">${await emailOf(services, id)}</span>${by}`;
    case 'apikey': {
      const key = services.deps.directory.get(id);
      const maker = key ? await emailOf(services, key.requestedBy) : null;
      return html`API key <a href="/console/keys/${seg(id)}">${key?.label ?? id}</a> <code class="muted">${id}</code>${
        maker ? html` <span class="muted">(requested by ${maker})</span>` : ''
      }`;
    }
    case 'operator':
      return html`operator ${id} <span class="muted">(CLI)</span>`;
    case 'system':
      return html`wallet-ops <span class="muted">(${id})</span>`;
    default:
      return html`${actor}`;
  }
}

type Describe = (data: Record<string, unknown>) => Pick<TimelineEntry, 'what' | 'reason' | 'detail'> & { at?: string };

const text = (value: unknown): string | undefined => (typeof value === 'string' && value !== '' ? value : undefined);

/** What each event means in a timeline; the time is the event's own (in its data), else the store's. */
const DESCRIPTIONS: Record<string, Describe> = {
  OperationRequested: (d) => ({
    what: 'Requested',
    at: text(d.createdAt),
    detail: html`${String(d.operationType)} of ${String(d.amount)} (fee ${String(d.fee)})`,
  }),
  OperationApproved: (d) => ({ what: 'Approved', at: text(d.approvedAt) }),
  OperationRejected: (d) => ({ what: 'Rejected', at: text(d.rejectedAt), reason: text(d.reason) }),
  OperationExecutionStarted: (d) => ({
    what: 'Execution started',
    at: text(d.startedAt),
    detail: html`attempt ${String(d.attempt)} by executor ${String(d.executorID)}`,
  }),
  OperationSubmitted: (d) => ({
    what: 'Submitted to the ledger',
    at: text(d.submittedAt),
    detail: html`sequence ${String(d.sequenceNumber)}`,
  }),
  OperationCompleted: (d) => ({
    what: 'Completed',
    at: text(d.completedAt),
    detail: html`blockchain <code class="hash">${String(d.blockchainID)}</code>`,
  }),
  OperationFailed: (d) => ({ what: 'Failed', at: text(d.failedAt), reason: text(d.lastError) }),
  ApiKeyRequested: (d) => ({ what: 'Requested', at: text(d.requestedAt) }),
  ApiKeyApproved: (d) => ({
    what: 'Approved',
    at: text(d.approvedAt),
    detail: typeof d.expiresAt === 'string' ? html`expires ${time(d.expiresAt)}` : undefined,
  }),
  ApiKeyRejected: (d) => ({ what: 'Rejected', at: text(d.rejectedAt), reason: text(d.reason) }),
  ApiKeyRevocationRequested: (d) => ({ what: 'Revocation requested', at: text(d.requestedAt), reason: text(d.reason) }),
  ApiKeyRevocationRejected: (d) => ({ what: 'Revocation rejected', at: text(d.rejectedAt), reason: text(d.reason) }),
  ApiKeyRevoked: (d) => ({ what: 'Revoked', at: text(d.revokedAt) }),
  ApiKeyRotationRequested: (d) => ({
    what: 'Secret rotation requested',
    at: text(d.requestedAt),
    reason: text(d.reason),
  }),
  ApiKeyRotationRejected: (d) => ({ what: 'Secret rotation rejected', at: text(d.rejectedAt), reason: text(d.reason) }),
  ApiKeyRotationWithdrawn: (d) => ({ what: 'Secret rotation withdrawn', at: text(d.withdrawnAt) }),
  ApiKeyRotated: (d) => ({
    what: 'Secret rotated',
    at: text(d.rotatedAt),
    detail:
      typeof d.previousValidUntil === 'string'
        ? html`previous secret valid until ${time(d.previousValidUntil)}`
        : undefined,
  }),
};

export async function timeline(services: ConsoleServices, events: RecordedEvent[]): Promise<TimelineEntry[]> {
  const entries: TimelineEntry[] = [];
  for (const event of events) {
    const describe = DESCRIPTIONS[event.type];
    const data = (event.data ?? {}) as Record<string, unknown>;
    const described = describe ? describe(data) : { what: event.type };
    const { at, ...rest } = described as ReturnType<Describe>;
    entries.push({
      ...rest,
      at: at ?? event.createdAt,
      actor: await describeActor(services, event.metadata.actor, event.metadata.operator),
    });
  }
  return entries;
}

export function timelineList(entries: TimelineEntry[], label: string): Html {
  return html`<ol class="timeline" aria-label="${label}">${entries.map(
    (entry) => html`<li data-event="${entry.what}">
      <p><strong>${entry.what}</strong> ${time(entry.at)}</p>
      <p class="by">by ${entry.actor}</p>
      ${entry.detail ? html`<p class="muted">${entry.detail}</p>` : ''}
      ${entry.reason ? html`<p class="reason">Reason: <q>${entry.reason}</q></p>` : ''}
    </li>`,
  )}</ol>`;
}

import type { Counterparty, OperationRequested } from '../domain/events.ts';
import { html, seg, time, type Html } from '../http/html.ts';
import { money } from './format.ts';
import { csrfField, reasonField } from './layout.ts';
import type { SessionDoc } from './sessions.ts';

/** Markup of the operations pages: pending approvals, the reject form, and the history. */
export interface PendingOperation {
  operation: OperationRequested['data'];
  keyLabel: string | null;
  /** The viewer requested the key that created it (and saw its secret): another checker must approve it. */
  viewerRequestedKey?: boolean;
}

export interface HistoryRow {
  operationID: string;
  operationType: string;
  amount: string;
  fee: string | null;
  counterpart: string;
  memo: string | null;
  status: string;
  blockchainID: string;
  sequenceNumber: number | null;
  lastError: string | null;
  createdAt: string;
  updatedAt: string;
}

export function counterpartText(counterparty: Counterparty): string {
  if (counterparty.kind === 'individual') return `${counterparty.name} (${counterparty.id})`;
  return `${counterparty.name} (${counterparty.kind} ${counterparty.shortCode ?? counterparty.id})`;
}

const opTabs = (current: 'pending' | 'history', pendingCount: number) => html`<nav class="tabs" aria-label="Operation lists"><ul>
    <li><a href="/console/operations"${current === 'pending' ? html` aria-current="page"` : ''}>Pending approval <span class="count">${pendingCount}</span></a></li>
    <li><a href="/console/operations/history"${current === 'history' ? html` aria-current="page"` : ''}>History</a></li>
  </ul></nav>`;

export function pendingPage(session: SessionDoc, items: PendingOperation[], checker: boolean, assetCode: string): Html {
  const table = items.length === 0
    ? html`<p class="empty">No operation is waiting for approval.</p>`
    : html`<table>
      <caption class="visually-hidden">Operations awaiting a checker</caption>
      <thead><tr><th scope="col">Operation</th><th scope="col" class="num">Amount</th><th scope="col" class="num">Fee</th><th scope="col">Counterpart</th><th scope="col">Memo</th><th scope="col">Created by key</th><th scope="col">Created</th>${checker ? html`<th scope="col">Actions</th>` : ''}</tr></thead>
      <tbody>${items.map(({ operation: op, keyLabel, viewerRequestedKey }) => html`<tr data-operation-id="${op.operationID}">
        <th scope="row">${op.operationType}<br><code class="muted">${op.operationID}</code></th>
        <td class="num">${money(op.amount, assetCode)}</td>
        <td class="num">${money(op.fee, assetCode)}</td>
        <td>${counterpartText(op.counterparty)}</td>
        <td>${op.memo ?? ''}</td>
        <td>${keyLabel ?? ''}<br><code class="muted">${op.keyID ?? ''}</code></td>
        <td>${time(op.createdAt)}</td>
        ${checker ? html`<td class="actions">
          ${viewerRequestedKey
            ? html`<button type="button" disabled aria-describedby="own-${op.operationID}">Approve</button>
              <p class="hint" id="own-${op.operationID}">You requested the key that created it: another checker must approve it.</p>`
            : html`<form method="post" action="/console/operations/${seg(op.operationID)}/approve" class="inline">${csrfField(session)}<button type="submit">Approve</button></form>`}
          <a class="button danger" href="/console/operations/${seg(op.operationID)}/reject">Reject…</a>
        </td>` : ''}
      </tr>`)}</tbody></table>`;
  return html`<h1>Operations</h1>${opTabs('pending', items.length)}
    <section aria-labelledby="pending-title"><h2 id="pending-title">Pending approval</h2>
    ${checker ? '' : html`<p class="hint">Only a checker of your party can approve or reject operations.</p>`}
    ${table}</section>`;
}

export function rejectPage(session: SessionDoc, pending: PendingOperation, assetCode: string, error?: string): Html {
  const op = pending.operation;
  return html`<h1>Reject operation</h1>
    <dl class="summary">
      <dt>Operation</dt><dd>${op.operationType} <code>${op.operationID}</code></dd>
      <dt>Amount</dt><dd>${money(op.amount, assetCode)} (fee ${money(op.fee, assetCode)})</dd>
      <dt>Counterpart</dt><dd>${counterpartText(op.counterparty)}</dd>
      <dt>Memo</dt><dd>${op.memo ?? '—'}</dd>
    </dl>
    <form method="post" action="/console/operations/${seg(op.operationID)}/reject" class="stack">
      ${csrfField(session)}
      ${reasonField(error)}
      <div class="actions"><button type="submit" class="danger">Reject operation</button> <a href="/console/operations">Cancel</a></div>
    </form>`;
}

const STATUS_LABELS: Record<string, string> = { pending: 'Pending', approved: 'Approved, executing', rejected: 'Rejected', completed: 'Completed', failed: 'Failed' };

export function historyPage(rows: HistoryRow[], page: { offset: number; limit: number }, pendingCount: number, assetCode: string): Html {
  const table = rows.length === 0
    ? html`<p class="empty">No operation yet.</p>`
    : html`<table class="history">
      <caption class="visually-hidden">Operations, newest first</caption>
      <thead><tr><th scope="col">Operation</th><th scope="col">Status</th><th scope="col" class="num">Amount</th><th scope="col" class="num">Fee</th><th scope="col">Counterpart</th><th scope="col">Memo</th><th scope="col">Blockchain</th></tr></thead>
      <tbody>${rows.map((row) => html`<tr data-operation-id="${row.operationID}">
        <th scope="row">${row.operationType}<br><code class="muted">${row.operationID}</code><br><span class="muted created">created ${time(row.createdAt)}</span></th>
        <td><span class="badge badge-${row.status}">${STATUS_LABELS[row.status] ?? row.status}</span>${row.lastError ? html`<br><span class="error-text">${row.lastError}</span>` : ''}${row.updatedAt !== row.createdAt ? html`<br><span class="muted">${time(row.updatedAt)}</span>` : ''}</td>
        <td class="num">${money(row.amount, assetCode)}</td>
        <td class="num">${money(row.fee, assetCode)}</td>
        <td>${row.counterpart}</td>
        <td>${row.memo ?? ''}</td>
        <td>${row.blockchainID ? html`<code class="hash" title="${row.blockchainID}" data-blockchain-id>${row.blockchainID}</code><br><span class="muted">sequence ${row.sequenceNumber ?? '—'}</span>` : row.sequenceNumber !== null ? html`<span class="muted">sequence ${row.sequenceNumber}</span>` : html`<span class="muted">—</span>`}</td>
      </tr>`)}</tbody></table>`;
  const newer = page.offset > 0 ? html`<a href="/console/operations/history?offset=${Math.max(0, page.offset - page.limit)}">Newer</a>` : '';
  const older = rows.length === page.limit ? html`<a href="/console/operations/history?offset=${page.offset + page.limit}">Older</a>` : '';
  return html`<h1>Operations</h1>${opTabs('history', pendingCount)}
    <section aria-labelledby="history-title"><h2 id="history-title">History</h2>${table}
    ${newer || older ? html`<nav class="pager" aria-label="Pages">${newer} ${older}</nav>` : ''}</section>`;
}

import type { Counterparty, OperationRequested } from '../domain/events.ts';
import { html, seg, time, type Html } from '../http/html.ts';
import type { ConsoleOperationDoc } from '../projections/console-operations.ts';
import { money } from './format.ts';
import { csrfField, reasonField } from './layout.ts';
import type { SessionDoc } from './sessions.ts';

/** Markup of the operations pages: pending approvals, the reject form, and the history. */
export interface PendingOperation {
  operation: OperationRequested['data'];
  keyLabel: string | null;
  /** The viewer requested the key that created it (and saw its secret): another checker must approve it. */
  viewerRequestedKey?: boolean;
  /** Above CONSOLE_CONFIRM_ABOVE: approving it asks once more. */
  large?: boolean;
}

/** A row of Pending approval: the read model's document, with the key's label from the key directory. */
export interface PendingRow {
  doc: ConsoleOperationDoc;
  keyLabel: string | null;
  /** The viewer requested the key that created it (and saw its secret): another checker must approve it. */
  viewerRequestedKey: boolean;
}

/** A counterparty as an event (shortCode absent) or a read model document (shortCode null) holds it. */
type Counterpart = Omit<Counterparty, 'shortCode'> & { shortCode?: string | null };

/** The counterparty as a document of console_operations holds it. */
export const counterpartOf = (doc: ConsoleOperationDoc): Counterpart => ({
  kind: doc.counterpartyKind,
  id: doc.counterpartyID,
  name: doc.counterpartyName,
  shortCode: doc.counterpartyShortCode,
});

export function counterpartText(counterparty: Counterpart): string {
  if (counterparty.kind === 'individual') return `${counterparty.name} (${counterparty.id})`;
  return `${counterparty.name} (${counterparty.kind} ${counterparty.shortCode ?? counterparty.id})`;
}

export const opTabs = (
  current: 'pending' | 'history',
  pendingCount: number,
) => html`<nav class="tabs" aria-label="Operation lists"><ul>
    <li>
    <a href="/console/operations"${
      current === 'pending' ? html` aria-current="page"` : ''
    }>Pending approval <span class="count">${pendingCount}</span></a></li>
    <li><a href="/console/operations/history"${current === 'history' ? html` aria-current="page"` : ''}>History</a></li>
  </ul></nav>`;

export function pendingPage(session: SessionDoc, items: PendingRow[], checker: boolean, assetCode: string): Html {
  const table =
    items.length === 0
      ? html`<p class="empty">No operation is waiting for approval.</p>`
      : html`<table class="pending">
      <caption class="visually-hidden">Operations awaiting a checker</caption>
      <thead><tr>${checker ? html`<th scope="col"><span class="visually-hidden">Select</span></th>` : ''}
      <th scope="col">Operation</th><th scope="col" class="num">Amount</th><th scope="col" class="num">Fee</th>
      <th scope="col">Payer</th><th scope="col">Counterpart</th><th scope="col">Memo</th>
      <th scope="col">Created by key</th><th scope="col">Created</th>
      ${checker ? html`<th scope="col">Actions</th>` : ''}</tr></thead>
      <tbody>${items.map(
        ({ doc: op, keyLabel, viewerRequestedKey }) => html`<tr data-operation-id="${op.operationID}">
        ${
          checker
            ? html`<td class="select"><input type="checkbox" name="operationID" value="${op.operationID}"
                form="bulk-form" id="select-${op.operationID}" aria-label="Select operation ${op.operationID}"></td>`
            : ''
        }
        <th scope="row">${op.operationType}<br>
        <a href="/console/operations/${seg(op.operationID)}"><code class="muted">${op.operationID}</code></a></th>
        <td class="num">${money(op.amount, assetCode)}</td>
        <td class="num">${money(op.fee, assetCode)}</td>
        <td>${op.payerName}</td>
        <td>${counterpartText(counterpartOf(op))}</td>
        <td>${op.memo ?? ''}</td>
        <td>${keyLabel ?? ''}<br><code class="muted">${op.keyID ?? ''}</code></td>
        <td>${time(op.createdAt)}</td>
        ${
          checker
            ? html`<td class="actions">
          ${
            viewerRequestedKey
              ? html`<button type="button" disabled aria-describedby="own-${op.operationID}">Approve</button>
              <p class="hint" id="own-${op.operationID}">You hold, or held, a secret of the key that created it: another
              checker must approve it.</p>`
              : html`<form method="post" action="/console/operations/${seg(op.operationID)}/approve" class="inline">
                ${csrfField(session)}<button type="submit">Approve</button></form>`
          }
          <a class="button danger" href="/console/operations/${seg(op.operationID)}/reject">Reject…</a>
        </td>`
            : ''
        }
      </tr>`,
      )}</tbody></table>`;
  return html`<h1>Operations</h1>${opTabs('pending', items.length)}
    <section aria-labelledby="pending-title"><h2 id="pending-title">Pending approval</h2>
    ${checker ? '' : html`<p class="hint">Only a checker of your party can approve or reject operations.</p>`}
    ${table}
    ${checker && items.length > 0 ? bulkForm(session) : ''}</section>`;
}

/** Bulk decisions on the rows ticked above (their checkboxes belong to this form by its id). */
function bulkForm(session: SessionDoc): Html {
  return html`<form method="post" action="/console/operations/bulk" id="bulk-form" class="bulk stack"
      aria-labelledby="bulk-title">
      <h3 id="bulk-title">Selected operations</h3>
      ${csrfField(session)}
      <p class="hint">Each selected operation is decided on its own: one that cannot be approved or rejected is reported
      and the others go ahead. At most ${BULK_LIMIT} at a time.</p>
      <div class="actions"><button type="submit" name="action" value="approve">Approve selected</button></div>
      <div class="field">
      <label for="bulk-reason">Reason for rejecting the selected operations</label><input id="bulk-reason" name="reason"
        maxlength="500"></div>
      <div class="actions"><button type="submit" name="action" value="reject" class="danger">Reject selected</button>
      </div>
    </form>`;
}

export const BULK_LIMIT = 40;

/** The second question before approving large amounts: everything the checker needs to see, once more. */
export function confirmApprovalPage(
  session: SessionDoc,
  items: PendingOperation[],
  threshold: string,
  bulk: boolean,
): Html {
  const large = items.filter((item) => item.large);
  return html`<h1>Confirm approval</h1>
    <p class="notice warning" role="alert">${
      large.length === 1 && !bulk ? 'This operation is' : `${large.length} of these operations are`
    } above ${threshold}: check the amount, fee, payer and counterparty once more.</p>
    <table class="stack"><caption class="visually-hidden">Operations to approve</caption>
      <thead><tr><th scope="col">Operation</th><th scope="col" class="num">Amount</th>
      <th scope="col" class="num">Fee</th><th scope="col">Payer</th><th scope="col">Counterparty</th>
      <th scope="col">Memo</th></tr></thead>
      <tbody>${items.map(
        ({
          operation: op,
          large: isLarge,
        }) => html`<tr data-operation-id="${op.operationID}"${isLarge ? html` class="large"` : ''}>
        <th scope="row">${op.operationType}<br><code class="muted">${op.operationID}</code></th>
        <td class="num" data-label="Amount">${isLarge ? html`<strong>${op.amount}</strong>` : op.amount}</td>
        <td class="num" data-label="Fee">${op.fee}</td>
        <td data-label="Payer">${op.payerName}</td>
        <td data-label="Counterparty">${counterpartText(op.counterparty)}</td>
        <td data-label="Memo">${op.memo ?? ''}</td></tr>`,
      )}</tbody></table>
    <form method="post" action="${
      bulk ? '/console/operations/bulk' : `/console/operations/${seg(items[0]!.operation.operationID)}/approve`
    }" class="stack">
      ${csrfField(session)}
      <input type="hidden" name="confirm" value="yes">
      ${
        bulk
          ? html`<input type="hidden" name="action" value="approve">${items.map(
              ({ operation: op }) => html`<input type="hidden" name="operationID" value="${op.operationID}">`,
            )}`
          : ''
      }
      <div class="actions">
      <button type="submit">${
        bulk ? `Approve ${items.length} operations` : 'Approve operation'
      }</button> <a href="/console/operations">Cancel</a></div>
    </form>`;
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
      <div class="actions">
      <button type="submit" class="danger">Reject operation</button> <a href="/console/operations">Cancel</a></div>
    </form>`;
}

export const STATUS_LABELS: Record<string, string> = {
  pending: 'Pending',
  approved: 'Approved, executing',
  rejected: 'Rejected',
  completed: 'Completed',
  failed: 'Failed',
};

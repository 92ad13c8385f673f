import type { OperationRequested } from '../domain/events.ts';
import { html, seg, time, type Html } from '../http/html.ts';
import type { PublicApiKey } from '../projections/api-key-directory.ts';
import type { OperationPage } from '../projections/console-operation-queries.ts';
import { money } from './format.ts';
import { counterpartyOf } from './operation-list-pages.ts';
import { counterpartText, STATUS_LABELS } from './operations-pages.ts';
import { timelineList, type TimelineEntry } from './timeline.ts';

/** Markup of an operation's page and an API key's page. */
export interface OperationView {
  request: OperationRequested['data'];
  /** The viewer's party received it (a cash-in to a merchant): the payer is the counterparty. */
  received: boolean;
  status: string;
  sequenceNumber: number | null;
  blockchainID: string | null;
  walletOperationID: string | null;
  lastError: string | null;
  keyLabel: string | null;
  timeline: TimelineEntry[];
  /** ASSET_CODE: the currency beside every amount. */
  assetCode: string;
}

const wallet = (w: OperationRequested['data']['payer']): string =>
  w.kind === 'platform' ? `platform ${w.id}` : `${w.kind} ${w.id}`;

function ledger(view: OperationView): Html {
  const op = view.request;
  if (view.status === 'completed') {
    return html`<dl class="summary">
        <dt>Blockchain id</dt><dd><code class="hash" data-blockchain-id>${view.blockchainID}</code></dd>
        <dt>Wallet operation</dt><dd><code>${view.walletOperationID}</code></dd>
        <dt>Sequence</dt><dd>${view.sequenceNumber ?? '—'}</dd>
      </dl>
      <table class="stack"><caption>Movements of the transaction</caption>
        <thead><tr><th scope="col">From</th><th scope="col">To</th><th scope="col" class="num">Amount</th></tr></thead>
        <tbody>
          <tr><td data-label="From">${op.payerName} <span class="muted">(${wallet(op.payer)})</span></td>
          <td data-label="To">${wallet(op.payee)}</td>
          <td class="num" data-label="Amount">${money(op.amount, view.assetCode)}</td></tr>
          ${
            op.fee !== '0' && !/^0(\.0+)?$/.test(op.fee)
              ? html`<tr><td data-label="From">${op.payerName} <span class="muted">(${wallet(op.payer)})</span></td>
                <td data-label="To">platform fees</td>
                <td class="num" data-label="Amount">${money(op.fee, view.assetCode)}</td></tr>`
              : ''
          }
        </tbody></table>`;
  }
  if (view.status === 'rejected' || view.status === 'failed')
    return html`<p>No ledger transaction: the operation ${
      view.status === 'rejected' ? 'was rejected' : 'failed'
    }, and what it held was released.</p>`;
  return html`<p>Not on the ledger yet${
    view.sequenceNumber !== null ? html` (submitted, sequence ${view.sequenceNumber})` : ''
  }.</p>`;
}

export function operationPage(view: OperationView): Html {
  const op = view.request;
  return html`<p class="crumbs"><a href="/console/operations/history">Operations › History</a></p>
    <h1>Operation <code>${op.operationID}</code></h1>
    <dl class="summary" data-operation-fields>
      <dt>Status</dt><dd>
      <span class="badge badge-${view.status}">${STATUS_LABELS[view.status] ?? view.status}</span>${
        view.lastError ? html` <span class="error-text">${view.lastError}</span>` : ''
      }</dd>
      <dt>Type</dt><dd>${op.operationType}</dd>
      <dt>Amount</dt><dd>${money(op.amount, view.assetCode)}</dd>
      <dt>Fee</dt><dd>${view.received ? '0 (paid by the sender)' : money(op.fee, view.assetCode)}</dd>
      <dt>Payer</dt><dd>${op.payerName}${op.payerShortCode ? ` (${op.payer.kind} ${op.payerShortCode})` : ''}</dd>
      <dt>Counterparty</dt>
      <dd>${
        view.received
          ? `${op.payerName} (${op.payer.kind} ${op.payerShortCode ?? op.payer.id})`
          : counterpartText(op.counterparty)
      }</dd>
      <dt>Memo</dt><dd>${op.memo ?? '—'}</dd>
      ${
        op.cashOutFulfillmentID
          ? html`<dt>Fulfillment</dt><dd>${op.cashOutFulfillmentType} ${op.cashOutFulfillmentID}</dd>`
          : ''
      }
      <dt>Created</dt><dd>${time(op.createdAt)}</dd>
      <dt>API key</dt>
      <dd>${
        op.keyID && !view.received
          ? html`<a href="/console/keys/${seg(op.keyID)}">${
              view.keyLabel ?? op.keyID
            }</a> <code class="muted">${op.keyID}</code>`
          : html`<span class="muted">—</span>`
      }</dd>
    </dl>
    <section aria-labelledby="timeline-title"><h2 id="timeline-title">Timeline</h2>
    ${timelineList(view.timeline, 'Events of this operation, oldest first')}</section>
    <section aria-labelledby="ledger-title"><h2 id="ledger-title">Ledger transaction</h2>${ledger(view)}</section>`;
}

export interface KeyView {
  key: PublicApiKey;
  requestedBy: string;
  approvedBy: string | null;
  usage: { count: number; lastUsedAt: string | null };
  timeline: TimelineEntry[];
  operations: OperationPage;
  assetCode: string;
}

export function keyPage(view: KeyView): Html {
  const { key } = view;
  return html`<p class="crumbs"><a href="/console/keys">Settings › API keys</a></p>
    <h1>API key “${key.label}”</h1>
    <dl class="summary" data-key-fields>
      <dt>Key id</dt><dd><code>${key.keyID}</code></dd>
      <dt>Status</dt><dd>
      <span class="badge badge-${key.state}">${key.state}</span>${
        key.revocationReason ? html` <span class="muted">${key.revocationReason}</span>` : ''
      }</dd>
      <dt>Permissions</dt><dd>${key.permissions.join(', ')}</dd>
      <dt>Max transaction amount</dt>
      <dd>${key.maxTransactionAmount === null ? 'no limit' : money(key.maxTransactionAmount, view.assetCode)}</dd>
      <dt>Max daily volume</dt>
      <dd>${key.maxDailyVolume === null ? 'no limit' : money(key.maxDailyVolume, view.assetCode)}</dd>
      <dt>Allowed IPs</dt><dd>${key.allowedIPs.length ? key.allowedIPs.join(', ') : 'any'}</dd>
      <dt>Expires</dt><dd>${key.expiresAt ? time(key.expiresAt) : html`${key.expiresInDays} days after approval`}</dd>
      <dt>Requested by</dt><dd>${view.requestedBy}, ${time(key.requestedAt)}</dd>
      <dt>Approved by</dt><dd>${view.approvedBy ?? '—'}</dd>
      <dt>Usage</dt>
      <dd>${view.usage.count.toLocaleString('en-US')} requests${
        view.usage.lastUsedAt ? html`, last ${time(view.usage.lastUsedAt)}` : ''
      }</dd>
    </dl>
    <section aria-labelledby="timeline-title"><h2 id="timeline-title">Timeline</h2>
    ${timelineList(view.timeline, 'Events of this key, oldest first')}</section>
    <section aria-labelledby="ops-title"><h2 id="ops-title">Operations it created</h2>
      ${
        view.operations.total === 0
          ? html`<p class="empty">None yet.</p>`
          : html`<table class="stack"><caption class="visually-hidden">Newest first</caption>
        <thead><tr><th scope="col">Operation</th><th scope="col">Status</th><th scope="col" class="num">Amount</th>
        <th scope="col">Counterpart</th><th scope="col">Created</th></tr></thead>
        <tbody>${view.operations.rows.map(
          (doc) => html`<tr data-operation-id="${doc.operationID}">
          <th scope="row"><a href="/console/operations/${seg(doc.operationID)}"><code>${doc.operationID}</code></a>
          <br>${doc.operationType}</th>
          <td data-label="Status"><span class="badge badge-${doc.status}">${
            STATUS_LABELS[doc.status] ?? doc.status
          }</span></td>
          <td class="num" data-label="Amount">${money(doc.amount, view.assetCode)}</td>
          <td data-label="Counterpart">${counterpartyOf(doc)}</td>
          <td data-label="Created">${time(doc.createdAt)}</td></tr>`,
        )}</tbody></table>
        <p>
        <a href="/console/operations/history?key=${encodeURIComponent(key.keyID)}">
          All ${view.operations.total.toLocaleString('en-US')} operations of this key</a></p>`
      }
    </section>`;
}

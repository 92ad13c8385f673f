import { money } from './format.ts';
import { html, seg, time, type Html } from '../http/html.ts';
import type { OperationPage } from '../projections/console-operation-queries.ts';
import type { ConsoleOperationDoc } from '../projections/console-operations.ts';
import { filterQuery, STATUSES, TYPES, type FilterValues } from './operation-filters.ts';
import { counterpartOf, counterpartText, opTabs, STATUS_LABELS } from './operations-pages.ts';

/** Markup of Operations › History: the filter form, one page of rows, where the page is, and the export link. */
const count = (n: number) => n.toLocaleString('en-US');

export function counterpartyOf(doc: ConsoleOperationDoc): Html {
  return html`<a href="/console/operations/history?counterparty=${encodeURIComponent(doc.counterparty)}"
      title="Operations with this counterparty">${counterpartText(counterpartOf(doc))}</a>`;
}

function option(value: string, label: string, selected: string): Html {
  return html`<option value="${value}"${value === selected ? html` selected` : ''}>${label}</option>`;
}

function filterForm(values: FilterValues, keys: Array<{ keyID: string; label: string }>): Html {
  return html`<form method="get" action="/console/operations/history" class="filters" role="search"
      aria-label="Filter operations">
    <div class="field"><label for="f-q">Search</label><input id="f-q" name="q" type="search" value="${values.q}"
      maxlength="100" placeholder="operation id, phone or memo"></div>
    <div class="field"><label for="f-status">Status</label><select id="f-status" name="status">
    ${option('', 'Any', values.status)}${STATUSES.map((s) => option(s, STATUS_LABELS[s] ?? s, values.status))}</select>
    </div>
    <div class="field"><label for="f-type">Type</label><select id="f-type" name="type">
    ${option('', 'Any', values.type)}${TYPES.map((t) => option(t, t, values.type))}</select></div>
    <div class="field"><label for="f-key">API key</label><select id="f-key" name="key">
    ${option('', 'Any', values.key)}${keys.map((k) => option(k.keyID, `${k.label} (${k.keyID})`, values.key))}</select>
    </div>
    <div class="field"><label for="f-counterparty">Counterparty</label><input id="f-counterparty" name="counterparty"
      value="${values.counterparty}" maxlength="40" placeholder="+234… or short code"></div>
    <div class="field"><label for="f-from">From (UTC day)</label><input id="f-from" name="from" type="date"
      value="${values.from}"></div>
    <div class="field"><label for="f-to">To (UTC day)</label><input id="f-to" name="to" type="date"
      value="${values.to}"></div>
    <div class="field"><label for="f-min">Amount from</label><input id="f-min" name="min" inputmode="decimal"
      value="${values.min}" maxlength="30"></div>
    <div class="field"><label for="f-max">Amount to</label><input id="f-max" name="max" inputmode="decimal"
      value="${values.max}" maxlength="30"></div>
    <div class="field"><label for="f-order">Order</label><select id="f-order" name="order">
    ${option('newest', 'Newest first', values.order)}${option('oldest', 'Oldest first', values.order)}</select></div>
    <div class="actions"><button type="submit">Filter</button> <a href="/console/operations/history">Clear</a></div>
  </form>`;
}

function row(doc: ConsoleOperationDoc, assetCode: string): Html {
  return html`<tr data-operation-id="${doc.operationID}">
    <th scope="row">${doc.operationType}<br>
    <a href="/console/operations/${seg(doc.operationID)}"><code>${doc.operationID}</code></a><br>
    <span class="muted created">created ${time(doc.createdAt)}</span></th>
    <td data-label="Status">
    <span class="badge badge-${doc.status}">${STATUS_LABELS[doc.status] ?? doc.status}</span>${
      doc.lastError
        ? html`<br>
      <span class="error-text">${doc.lastError}</span>`
        : ''
    }${doc.updatedAt !== doc.createdAt ? html`<br><span class="muted">${time(doc.updatedAt)}</span>` : ''}</td>
    <td class="num" data-label="Amount">${money(doc.amount, assetCode)}</td>
    <td class="num" data-label="Fee">${money(doc.fee, assetCode)}</td>
    <td data-label="Counterpart">${
      doc.side === 'received' ? html`<span class="muted">from</span> ` : ''
    }${counterpartyOf(doc)}</td>
    <td data-label="Memo">${doc.memo ?? ''}</td>
    <td data-label="Key">${
      doc.keyID
        ? html`<a href="/console/keys/${seg(doc.keyID)}"><code>${doc.keyID}</code></a>`
        : html`<span class="muted">—</span>`
    }</td>
    <td data-label="Blockchain">${
      doc.blockchainID
        ? html`<code class="hash" title="${doc.blockchainID}" data-blockchain-id>${doc.blockchainID}</code><br>
          <span class="muted">sequence ${doc.sequenceNumber ?? '—'}</span>`
        : doc.sequenceNumber !== null
          ? html`<span class="muted">sequence ${doc.sequenceNumber}</span>`
          : html`<span class="muted">—</span>`
    }</td>
  </tr>`;
}

export function operationListPage(view: {
  values: FilterValues;
  page: OperationPage;
  keys: Array<{ keyID: string; label: string }>;
  pendingCount: number;
  filtered: boolean;
  assetCode: string;
}): Html {
  const { values, page } = view;
  const base = '/console/operations/history';
  const where =
    page.total === 0
      ? html`<p class="empty" role="status">${
          view.filtered ? 'No operation matches these filters.' : 'No operation yet.'
        }</p>`
      : html`<p class="page-position" role="status" data-page-position>${count(page.start)}–${count(
          page.start + page.rows.length - 1,
        )} of ${count(page.total)}</p>`;
  const table =
    page.rows.length === 0
      ? ''
      : html`<table class="history stack">
      <caption class="visually-hidden">Operations, ${values.order === 'oldest' ? 'oldest' : 'newest'} first</caption>
      <thead><tr><th scope="col">Operation</th><th scope="col">Status</th><th scope="col" class="num">Amount</th>
      <th scope="col" class="num">Fee</th><th scope="col">Counterpart</th><th scope="col">Memo</th>
      <th scope="col">Key</th><th scope="col">Blockchain</th></tr></thead>
      <tbody>${page.rows.map((doc) => row(doc, view.assetCode))}</tbody></table>`;
  const newer = page.previous
    ? html`<a href="${base}${filterQuery(values, { before: page.previous })}" rel="prev">Previous 50</a>`
    : '';
  const older = page.next
    ? html`<a href="${base}${filterQuery(values, { after: page.next })}" rel="next">Next 50</a>`
    : '';
  const first = page.previous ? html`<a href="${base}${filterQuery(values)}">First page</a>` : '';
  return html`<h1>Operations</h1>${opTabs('history', view.pendingCount)}
    <section aria-labelledby="history-title"><h2 id="history-title">History</h2>
    ${filterForm(values, view.keys)}
    <div class="list-head">
    ${where}${
      page.total > 0
        ? html`<a class="button secondary" href="/console/operations/export.csv${filterQuery(values)}"
            download>Export CSV (${count(page.total)} rows)</a>`
        : ''
    }</div>
    ${table}
    ${
      first || newer || older ? html`<nav class="pager" aria-label="Pages">${first} ${newer} ${older}</nav>` : ''
    }</section>`;
}

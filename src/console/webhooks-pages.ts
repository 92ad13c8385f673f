import { WEBHOOK_EVENT_TYPES, type WebhookEventType } from '../domain/events.ts';
import { html, seg, time, type Html } from '../http/html.ts';
import type { WebhookEndpointDoc } from '../projections/webhook-endpoints.ts';
import { csrfField, errorSummary, reasonField } from './layout.ts';
import type { SessionDoc } from './sessions.ts';

/**
 * The markup of Webhooks: the party's endpoints, the registration form, the disable form, and what they share with an
 * endpoint's page.
 */
export interface EndpointView extends WebhookEndpointDoc {
  requestedByEmail: string;
  decidedByEmail: string;
  disabledByEmail: string;
  /** Who asked for the pending secret rotation (empty when none waits). */
  rotationRequestedByEmail: string;
}

/** Who looks, and what they may do. */
export interface WebhookViewer {
  userID: string;
  maker: boolean;
  checker: boolean;
  session: SessionDoc;
}

export const disabledBySystem = (endpoint: WebhookEndpointDoc) =>
  endpoint.status === 'disabled' && endpoint.disabledBy === 'system';

const STATUS_LABELS: Record<WebhookEndpointDoc['status'], string> = {
  pending: 'Awaiting approval',
  active: 'Active',
  rejected: 'Rejected',
  disabled: 'Disabled',
};

export const endpointBadge = (endpoint: WebhookEndpointDoc): Html =>
  disabledBySystem(endpoint)
    ? html`<span class="badge badge-disabled">Disabled automatically</span>`
    : html`<span class="badge badge-${endpoint.status}">${STATUS_LABELS[endpoint.status]}</span>`;

export const eventTypeList = (types: readonly string[]): Html =>
  html`<ul class="plain">${types.map((type) => html`<li><code>${type}</code></li>`)}</ul>`;

/** Requested, decided, disabled: who, when and why, in words. */
export function lifecycle(endpoint: EndpointView): Html {
  const requested = html`<li>Requested by ${endpoint.requestedByEmail}, ${time(endpoint.requestedAt)}</li>`;
  const decided =
    endpoint.status === 'pending'
      ? html`<li class="muted">Waiting for a checker</li>`
      : endpoint.status === 'rejected'
        ? html`<li>Rejected by ${endpoint.decidedByEmail}, ${time(endpoint.decidedAt)}${
            endpoint.reason ? html`: <q>${endpoint.reason}</q>` : ''
          }</li>`
        : html`<li>Approved by ${endpoint.decidedByEmail}, ${time(endpoint.decidedAt)}</li>`;
  const disabled =
    endpoint.status !== 'disabled'
      ? ''
      : disabledBySystem(endpoint)
        ? html`<li class="error-text" data-disabled-by-system>
          Disabled automatically after a day of failed deliveries, ${time(endpoint.disabledAt)}${
            endpoint.reason ? html`: <q>${endpoint.reason}</q>` : ''
          }</li>`
        : html`<li>Disabled by ${endpoint.disabledByEmail}, ${time(
            endpoint.disabledAt,
          )}: <q>${endpoint.reason ?? ''}</q></li>`;
  const rotated = endpoint.rotatedAt
    ? html`<li>Signing secret rotated ${time(endpoint.rotatedAt)}; deliveries were signed with the previous secret too
      until ${time(endpoint.previousSecretValidUntil ?? null)}</li>`
    : '';
  const rotation =
    endpoint.status === 'active' && endpoint.rotationRequestedBy
      ? html`<li>Secret rotation requested by ${
          endpoint.rotationRequestedByEmail
        }: <q>${endpoint.rotationReason ?? ''}</q></li>`
      : '';
  return html`<ul class="plain lifecycle">
    ${requested}${decided}${rotated}${signatures(endpoint)}${rotation}${disabled}</ul>`;
}

/** The headers of a Standard Webhooks signature, as the endpoint page names them. */
const STANDARD_HEADERS = html`<code>webhook-id</code>, <code>webhook-timestamp</code>, <code>webhook-signature</code>`;

/** How deliveries are signed (docs/webhooks.md): Standard Webhooks, the legacy header, or the switch between them. */
function signatures(endpoint: EndpointView): Html | '' {
  if (endpoint.status !== 'active' || endpoint.signatureScheme === undefined) return '';
  if (endpoint.signatureScheme === 'stripe-v1') {
    return html`<li data-signature-scheme="stripe-v1">Deliveries are signed the legacy way
      (<code>Webhook-Signature: t=…,v1=…</code>); rotating the secret moves them to Standard Webhooks</li>`;
  }
  if (endpoint.previousSignatureScheme === 'stripe-v1') {
    const from = time(endpoint.previousSecretValidUntil ?? null);
    return html`<li data-signature-scheme="standard-webhooks">
      Deliveries are signed with Standard Webhooks (${STANDARD_HEADERS}) from ${from};
      until then the legacy way, with both secrets</li>`;
  }
  return html`<li
    data-signature-scheme="standard-webhooks">Deliveries are signed with Standard Webhooks (${STANDARD_HEADERS})</li>`;
}

/**
 * A pending secret rotation: Approve and Reject for a checker who did not ask, Withdraw for the maker who did;
 * with none pending, Rotate secret for a maker.
 */
function rotationActions(viewer: WebhookViewer, endpoint: WebhookEndpointDoc): Html {
  const base = `/console/webhooks/${seg(endpoint.id)}`;
  const requester = endpoint.rotationRequestedBy ?? null;
  if (requester === null)
    return viewer.maker ? html`<a class="button" href="${base}/rotate">Rotate secret…</a>` : html``;
  const own = requester === viewer.userID;
  const withdraw = own
    ? html`<form method="post" action="${base}/rotation/withdraw" class="inline">
      ${csrfField(viewer.session)}<button type="submit" class="danger">Withdraw rotation</button></form>`
    : '';
  if (!viewer.checker) return html`${withdraw}<span class="muted">Secret rotation waiting for a checker</span>`;
  if (own) {
    const note = `own-rotation-${endpoint.id}`;
    return html`<button type="button" disabled aria-describedby="${note}">Approve rotation</button> ${withdraw}
      <p class="hint" id="${note}">You asked for this rotation: another checker must decide on it.</p>`;
  }
  return html`<form method="post" action="${base}/rotation/approve" class="inline">
    ${csrfField(viewer.session)}<button type="submit">Approve rotation</button></form>
    <form method="post" action="${base}/rotation/reject" class="inline">${csrfField(viewer.session)}
      <label class="compact"><span class="visually-hidden">Reason for rejecting the rotation
      of ${endpoint.url}</span><input name="reason" maxlength="500" placeholder="Reason (optional)"></label>
      <button type="submit" class="danger">Reject rotation</button></form>`;
}

/**
 * Approve and Reject for a checker on a pending endpoint (never on their own request); on an active one, its rotation
 * and Disable.
 */
export function endpointActions(viewer: WebhookViewer, endpoint: WebhookEndpointDoc): Html {
  const base = `/console/webhooks/${seg(endpoint.id)}`;
  if (endpoint.status === 'pending') {
    if (!viewer.checker) return html`<span class="muted">Waiting for a checker</span>`;
    if (endpoint.requestedBy === viewer.userID) {
      const note = `own-${endpoint.id}`;
      return html`<button type="button" disabled aria-describedby="${note}">Approve</button>
        <p class="hint" id="${note}">You registered this endpoint: another checker must decide on it.</p>`;
    }
    return html`<form method="post" action="${base}/approve" class="inline">
      ${csrfField(viewer.session)}<button type="submit">Approve</button></form>
      <form method="post" action="${base}/reject" class="inline">${csrfField(viewer.session)}
        <label class="compact"><span class="visually-hidden">Reason for rejecting ${endpoint.url}</span><input
          name="reason" maxlength="500" placeholder="Reason (optional)"></label>
        <button type="submit" class="danger">Reject</button></form>`;
  }
  if (endpoint.status === 'active' && (viewer.maker || viewer.checker))
    return html`${rotationActions(viewer, endpoint)} <a class="button danger" href="${base}/disable">Disable…</a>`;
  return html``;
}

export function webhooksPage(viewer: WebhookViewer, endpoints: EndpointView[]): Html {
  const failed = endpoints.filter(disabledBySystem);
  const table =
    endpoints.length === 0
      ? html`<p class="empty">Your party has no webhook endpoint yet.${
          viewer.maker
            ? ' Register one to be told of approvals, completions, failures, payments and revoked keys as they happen.'
            : ''
        }</p>`
      : html`<table class="webhooks stack">
      <caption class="visually-hidden">Webhook endpoints, newest first</caption>
      <thead><tr><th scope="col">Endpoint</th><th scope="col">Events</th><th scope="col">Status</th>
      <th scope="col">History</th><th scope="col">Actions</th></tr></thead>
      <tbody>${endpoints.map(
        (endpoint) => html`<tr data-endpoint-id="${endpoint.id}">
        <th scope="row"><a href="/console/webhooks/${seg(endpoint.id)}" class="url">${endpoint.url}</a><br>
        <code class="muted">${endpoint.id}</code></th>
        <td data-label="Events">${eventTypeList(endpoint.eventTypes)}</td>
        <td data-label="Status">${endpointBadge(endpoint)}</td>
        <td data-label="History">${lifecycle(endpoint)}</td>
        <td class="actions">${endpointActions(
          viewer,
          endpoint,
        )} <a href="/console/webhooks/${seg(endpoint.id)}">Deliveries</a></td>
      </tr>`,
      )}</tbody></table>`;
  return html`<div class="page-head"><h1>Webhooks</h1>
    ${viewer.maker ? html`<a class="button" href="/console/webhooks/new">Register endpoint</a>` : ''}</div>
    <p class="hint">Endpoints receive your party’s events as signed HTTPS requests. A maker registers one, a checker
    approves it; the maker then sees its signing secret once.</p>
    ${
      failed.length > 0
        ? html`<div class="notice error" data-system-disabled><h2>${
            failed.length === 1 ? 'An endpoint was' : `${failed.length} endpoints were`
          } disabled automatically</h2>
      <p>Deliveries to ${failed.map(
        (e, i) => html`${i > 0 ? ', ' : ''}<a href="/console/webhooks/${seg(e.id)}">${e.url}</a>`,
      )} failed for a day, so nothing more is sent there. Register a new endpoint once the receiver works again.</p>
      </div>`
        : ''
    }
    <section aria-labelledby="endpoints-title"><h2 id="endpoints-title">Endpoints</h2>${table}</section>`;
}

export interface EndpointFormValues {
  url: string;
  eventTypes: string[];
}

export const EMPTY_ENDPOINT_FORM: EndpointFormValues = { url: '', eventTypes: [] };

const EVENT_HELP: Record<WebhookEventType, string> = {
  'operation.approved': 'a checker approved an operation',
  'operation.rejected': 'an operation was rejected',
  'operation.completed': 'an operation was executed',
  'operation.failed': 'an operation failed',
  'payment.received': 'your wallet received a payment',
  'api_key.revoked': 'one of your API keys was revoked',
};

export function newEndpointPage(
  session: SessionDoc,
  values: EndpointFormValues,
  errors: Record<string, string>,
  allowInsecureLocalhost: boolean,
): Html {
  const urlError = errors.url;
  const typesError = errors.eventTypes;
  const urlDescribedBy = ['url-hint', urlError ? 'url-error' : ''].filter(Boolean).join(' ');
  return html`<h1>Register a webhook endpoint</h1>
    <p>A checker of your party approves it. You will then see its signing secret once, on your next page.</p>
    ${errorSummary(errors, (name) => (name === 'eventTypes' ? `event-${WEBHOOK_EVENT_TYPES[0]}` : name))}
    <form method="post" action="/console/webhooks" class="stack" novalidate>
      ${csrfField(session)}
      <div class="field${urlError ? ' invalid' : ''}">
        <label for="url">URL</label>
        <p class="hint" id="url-hint">Where deliveries go: an https address such as
        https://erp.example.com/wallet-ops/events.${
          allowInsecureLocalhost
            ? ' This server also accepts http://127.0.0.1, http://localhost and http://[::1] (development only).'
            : ''
        }</p>
        ${urlError ? html`<p class="field-error" id="url-error">${urlError}</p>` : ''}
        <input id="url" name="url" type="url" inputmode="url" value="${values.url}" required maxlength="2048"
          autocomplete="off" spellcheck="false" aria-describedby="${urlDescribedBy}"${
            urlError ? html` aria-invalid="true"` : ''
          }>
      </div>
      <fieldset class="field${typesError ? ' invalid' : ''}"${
        typesError ? html` aria-describedby="eventTypes-error"` : ''
      }>
        <legend>Events</legend>
        ${typesError ? html`<p class="field-error" id="eventTypes-error">${typesError}</p>` : ''}
        ${WEBHOOK_EVENT_TYPES.map(
          (type) => html`<div class="check">
          <input type="checkbox" id="event-${type}" name="eventTypes" value="${type}"${
            values.eventTypes.includes(type) ? html` checked` : ''
          }>
          <label for="event-${type}"><code>${type}</code> <span class="muted">— ${EVENT_HELP[type]}</span></label>
          </div>`,
        )}
      </fieldset>
      <div class="actions"><button type="submit">Register endpoint</button> <a href="/console/webhooks">Cancel</a></div>
    </form>`;
}

export function rotateEndpointPage(session: SessionDoc, endpoint: WebhookEndpointDoc, error?: string): Html {
  return html`<h1>Rotate the signing secret</h1>
    <p>A checker of your party approves the rotation; you then see the new signing secret once, on your next page.
    Deliveries to <code>${endpoint.url}</code>
      are then signed with both the new and the current secret for a while (two <code>v1=</code> signatures), so that
      your receiver can switch; after that only with the new one.</p>
    <form method="post" action="/console/webhooks/${seg(endpoint.id)}/rotate" class="stack">
      ${csrfField(session)}
      ${reasonField(error)}
      <div class="actions">
      <button type="submit">Request rotation</button> <a href="/console/webhooks/${seg(endpoint.id)}">Cancel</a></div>
    </form>`;
}

export function disablePage(session: SessionDoc, endpoint: WebhookEndpointDoc, error?: string): Html {
  return html`<h1>Disable a webhook endpoint</h1>
    <p>Nothing more is sent to <code>${endpoint.url}</code>, at once. Disabling is final: to receive events again,
    register a new endpoint.</p>
    <form method="post" action="/console/webhooks/${seg(endpoint.id)}/disable" class="stack">
      ${csrfField(session)}
      ${reasonField(error)}
      <div class="actions">
      <button type="submit" class="danger">Disable endpoint</button>
      <a href="/console/webhooks/${seg(endpoint.id)}">Cancel</a></div>
    </form>`;
}

import { html, seg, time, type Html } from '../http/html.ts';
import type { AttemptDoc, DeliveryDoc, RouteDoc } from '../webhooks/deliveries.ts';
import { csrfField } from './layout.ts';
import {
  endpointActions,
  endpointBadge,
  eventTypeList,
  lifecycle,
  type EndpointView,
  type WebhookViewer,
} from './webhooks-pages.ts';

/** The markup of one webhook endpoint: its terms and lifecycle, its delivery log, and one delivery's attempts. */
export interface EndpointPageView {
  viewer: WebhookViewer;
  endpoint: EndpointView;
  /** The delivery consumer's view of the endpoint; null until it has seen it. */
  route: RouteDoc | null;
  deliveries: DeliveryDoc[];
  total: number;
  page: { offset: number; limit: number };
  /** The "since" field's value, and its error after a refused form. */
  since: string;
  sinceError?: string;
}

const DELIVERY_LABELS: Record<DeliveryDoc['status'], string> = {
  pending: 'Pending',
  delivered: 'Delivered',
  failed: 'Failed',
};
const deliveryBadge = (status: DeliveryDoc['status']) =>
  html`<span class="badge badge-${status}">${DELIVERY_LABELS[status]}</span>`;
const isoOf = (ms: number) => new Date(ms).toISOString();

/** Redelivery is for makers of the party, on an active endpoint the delivery consumer knows. */
export const mayRedeliver = (view: Pick<EndpointPageView, 'viewer' | 'endpoint' | 'route'>) =>
  view.viewer.maker && view.endpoint.status === 'active' && view.route !== null;

const deliveryPath = (endpointID: string, eventID: string) =>
  `/console/webhooks/${seg(endpointID)}/deliveries/${seg(eventID)}`;

function redeliverButton(viewer: WebhookViewer, delivery: DeliveryDoc, from: 'log' | 'delivery'): Html {
  return html`<form method="post" action="${deliveryPath(delivery.endpointID, delivery.eventID)}/redeliver"
      class="inline">${csrfField(viewer.session)}
    <input type="hidden" name="from" value="${from}"><button type="submit" class="secondary"
      aria-label="Redeliver ${delivery.eventID}">Redeliver</button></form>`;
}

function lastResponse(delivery: DeliveryDoc): Html {
  if (delivery.lastAttemptAt === null) return html`<span class="muted">not attempted yet</span>`;
  return html`${
    delivery.lastStatusCode === null
      ? html`<span class="muted">no answer</span>`
      : html`<span class="status-code">HTTP ${delivery.lastStatusCode}</span>`
  }<br><span class="muted">${time(delivery.lastAttemptAt)}</span>`;
}

function deliveryTable(view: EndpointPageView): Html {
  if (view.deliveries.length === 0) return html`<p class="empty">No event has been sent to this endpoint yet.</p>`;
  const redeliver = mayRedeliver(view);
  return html`<table class="deliveries stack">
    <caption class="visually-hidden">Deliveries, newest event first</caption>
    <thead><tr><th scope="col">Event</th><th scope="col">Status</th><th scope="col" class="num">Attempts</th>
    <th scope="col">Last response</th><th scope="col">Last error</th><th scope="col">Next attempt</th>
    ${redeliver ? html`<th scope="col">Actions</th>` : ''}</tr></thead>
    <tbody>${view.deliveries.map(
      (d) => html`<tr data-event-id="${d.eventID}">
      <th scope="row"><code>${d.eventType}</code><br><a href="${deliveryPath(
        d.endpointID,
        d.eventID,
      )}"><code>${d.eventID}</code></a><br><span class="muted created">${time(d.createdAt)}</span></th>
      <td data-label="Status">${deliveryBadge(d.status)}${
        d.redeliveredAt ? html`<br><span class="muted">redelivery asked ${time(d.redeliveredAt)}</span>` : ''
      }</td>
      <td class="num" data-label="Attempts">${d.attempts}</td>
      <td data-label="Last response">${lastResponse(d)}</td>
      <td data-label="Last error">${
        d.lastError ? html`<span class="error-text">${d.lastError}</span>` : html`<span class="muted">—</span>`
      }</td>
      <td data-label="Next attempt">${
        d.status === 'pending' ? time(isoOf(d.nextAttemptAt)) : html`<span class="muted">—</span>`
      }</td>
      ${redeliver ? html`<td class="actions">${redeliverButton(view.viewer, d, 'log')}</td>` : ''}
    </tr>`,
    )}</tbody></table>`;
}

function pager(view: EndpointPageView): Html {
  const { offset, limit } = view.page;
  const base = `/console/webhooks/${seg(view.endpoint.id)}`;
  const newer =
    offset > 0 ? html`<a href="${base}?offset=${Math.max(0, offset - limit)}#deliveries-title">Newer</a>` : '';
  const older =
    offset + limit < view.total ? html`<a href="${base}?offset=${offset + limit}#deliveries-title">Older</a>` : '';
  const shown =
    view.deliveries.length === 0
      ? ''
      : html`<span class="muted">${offset + 1}–${offset + view.deliveries.length} of ${view.total}</span>`;
  return newer || older || shown
    ? html`<nav class="pager" aria-label="Delivery pages">${shown} ${newer} ${older}</nav>`
    : html``;
}

function redeliverSinceForm(view: EndpointPageView): Html {
  const error = view.sinceError;
  return html`<form method="post" action="/console/webhooks/${seg(view.endpoint.id)}/redeliver"
      class="since${error ? ' invalid' : ''}">
    ${csrfField(view.viewer.session)}
    <div class="field${error ? ' invalid' : ''}">
      <label for="since">Redeliver every event since (UTC)</label>
      ${error ? html`<p class="field-error" id="since-error">${error}</p>` : ''}
      <input id="since" name="since" type="datetime-local" step="1" value="${view.since}"
        required${error ? html` aria-invalid="true" aria-describedby="since-error"` : ''}>
    </div>
    <button type="submit" class="secondary">Redeliver since</button>
  </form>`;
}

function deliveryState(view: EndpointPageView): Html {
  const { endpoint, route } = view;
  if (endpoint.status === 'pending')
    return html`<p class="hint">Nothing is sent before a checker approves the endpoint.</p>`;
  if (endpoint.status === 'rejected')
    return html`<p class="hint">The endpoint was rejected: nothing is sent to it.</p>`;
  if (endpoint.status === 'disabled')
    return html`<p class="hint">The endpoint is disabled: nothing more is sent to it, and its deliveries cannot be
      redelivered.</p>`;
  if (route === null)
    return html`<p class="hint">The delivery service has not picked up this endpoint yet; its deliveries appear here
      once it has.</p>`;
  return view.viewer.maker
    ? redeliverSinceForm(view)
    : html`<p class="hint">A maker of your party can redeliver events.</p>`;
}

export function endpointPage(view: EndpointPageView): Html {
  const { endpoint } = view;
  const actions = endpointActions(view.viewer, endpoint);
  return html`<p><a href="/console/webhooks">← Webhooks</a></p>
    <h1>Webhook endpoint</h1>
    <dl class="summary endpoint">
      <dt>URL</dt><dd><code class="url">${endpoint.url}</code></dd>
      <dt>Endpoint id</dt><dd><code>${endpoint.id}</code></dd>
      <dt>Status</dt><dd>${endpointBadge(endpoint)}</dd>
      <dt>Events</dt><dd>${eventTypeList(endpoint.eventTypes)}</dd>
      <dt>History</dt><dd>${lifecycle(endpoint)}</dd>
    </dl>
    ${actions.value.trim() ? html`<div class="actions endpoint-actions">${actions}</div>` : ''}
    <section aria-labelledby="deliveries-title"><h2 id="deliveries-title">Delivery log</h2>
      ${deliveryState(view)}
      ${deliveryTable(view)}
      ${pager(view)}
    </section>`;
}

export interface DeliveryPageView {
  viewer: WebhookViewer;
  endpoint: EndpointView;
  route: RouteDoc | null;
  delivery: DeliveryDoc;
  attempts: AttemptDoc[];
  redeliveredByEmail: string;
}

/** What a receiver answered, shortened for the page: the store keeps the first KiB. */
const SHOWN_BODY = 500;
const shortBody = (body: string | null) =>
  body === null || body === '' ? null : body.length > SHOWN_BODY ? `${body.slice(0, SHOWN_BODY)}…` : body;

export function deliveryPage(view: DeliveryPageView): Html {
  const { delivery: d, endpoint } = view;
  const attempts =
    view.attempts.length === 0
      ? html`<p class="empty">Not attempted yet.</p>`
      : html`<table class="attempts stack">
      <caption class="visually-hidden">Attempts, first first</caption>
      <thead><tr><th scope="col" class="num">Attempt</th><th scope="col">Time</th>
      <th scope="col" class="num">Duration</th><th scope="col">Response</th><th scope="col">Response body</th>
      <th scope="col">Error</th></tr></thead>
      <tbody>${view.attempts.map(
        (a) => html`<tr data-attempt="${a.attempt}">
        <th scope="row" class="num"><span class="stack-only">Attempt </span>${a.attempt}</th>
        <td data-label="Time">${time(a.at)}</td>
        <td class="num" data-label="Duration">${a.durationMs} ms</td>
        <td data-label="Response">${
          a.statusCode === null
            ? html`<span class="muted">no answer</span>`
            : html`<span class="badge badge-${a.ok ? 'delivered' : 'failed'}">HTTP ${a.statusCode}</span>`
        }</td>
        <td data-label="Response body">${
          shortBody(a.responseBody) === null
            ? html`<span class="muted">—</span>`
            : html`<pre class="body">${shortBody(a.responseBody)}</pre>`
        }</td>
        <td data-label="Error">${
          a.error ? html`<span class="error-text">${a.error}</span>` : html`<span class="muted">—</span>`
        }</td>
      </tr>`,
      )}</tbody></table>`;
  return html`<p><a href="/console/webhooks/${seg(endpoint.id)}">← ${endpoint.url}</a></p>
    <h1>Delivery of <code>${d.eventID}</code></h1>
    <dl class="summary">
      <dt>Event</dt><dd><code>${d.eventType}</code>, ${time(d.createdAt)}</dd>
      <dt>Endpoint</dt><dd><code class="url">${endpoint.url}</code> ${endpointBadge(endpoint)}</dd>
      <dt>Status</dt><dd>${deliveryBadge(d.status)}${d.deliveredAt ? html` ${time(d.deliveredAt)}` : ''}</dd>
      <dt>Attempts</dt>
      <dd>${d.attempts}${d.status === 'pending' ? html`; next ${time(isoOf(d.nextAttemptAt))}` : ''}</dd>
      ${
        d.redeliveredAt
          ? html`<dt>Redelivery</dt><dd>asked by ${view.redeliveredByEmail}, ${time(d.redeliveredAt)}</dd>`
          : ''
      }
    </dl>
    ${
      mayRedeliver(view)
        ? html`<div class="actions endpoint-actions">${redeliverButton(view.viewer, d, 'delivery')}</div>`
        : ''
    }
    <section aria-labelledby="attempts-title"><h2 id="attempts-title">Attempts</h2>${attempts}</section>
    <details class="sent"><summary>The body sent</summary><pre class="body">${d.body}</pre></details>`;
}

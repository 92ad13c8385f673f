import type { AccessRequestRecord } from '../commands/access-requests.ts';
import type { AccessChange } from '../domain/events.ts';
import { html, seg, time, type Html } from '../http/html.ts';
import { csrfField } from './layout.ts';
import type { SessionDoc } from './sessions.ts';

/** The markup of Access requests: pending requests with their decisions, decided ones, and the one-time password. */
export type AccessTab = 'pending' | 'decided';

export interface AccessView {
  tab: AccessTab;
  requests: AccessRequestRecord[];
  counts: Record<AccessTab, number>;
  userID: string;
  session: SessionDoc;
  describe: (change: AccessChange) => string;
  email: (userID: string) => string;
}

const STATUS_TEXT = { pending: 'Pending', approved: 'Approved', rejected: 'Rejected' } as const;
const badgeClass = { pending: 'pending', approved: 'active', rejected: 'rejected' } as const;

function decisionControls(view: AccessView, request: AccessRequestRecord): Html {
  const base = `/console/admin/access/${seg(request.requestID)}`;
  const reject = (
    label: string,
  ) => html`<form method="post" action="${base}/reject" class="inline">${csrfField(view.session)}
    <label class="compact"><span class="visually-hidden">Reason for rejecting ${request.requestID}</span><input
      name="reason" maxlength="500" placeholder="Reason (optional)"></label>
    <button type="submit" class="danger">${label}</button></form>`;
  const note = `note-${request.requestID}`;
  if (request.requestedBy === view.userID) {
    return html`<button type="button" disabled aria-describedby="${note}">Approve</button>
      <p class="hint" id="${note}">You made this request: another administrator must approve it.</p>
      ${reject('Withdraw')}`;
  }
  if (request.change.userID === view.userID) {
    return html`<button type="button" disabled aria-describedby="${note}">Approve</button>
      <p class="hint" id="${note}">This changes your own access: another administrator must decide on it.</p>`;
  }
  return html`<form method="post" action="${base}/approve" class="inline">
    ${csrfField(view.session)}<button type="submit">Approve</button></form>${reject('Reject')}`;
}

function requestsTable(view: AccessView): Html {
  if (view.requests.length === 0)
    return html`<p class="empty">${
      view.tab === 'pending' ? 'No access request is waiting.' : 'No access request has been decided yet.'
    }</p>`;
  const pending = view.tab === 'pending';
  return html`<table>
    <caption class="visually-hidden">${
      pending ? 'Access requests awaiting another administrator' : 'Decided access requests'
    }</caption>
    <thead><tr><th scope="col">Change</th><th scope="col">Reason</th><th scope="col">Requested by</th>
    ${pending ? html`<th scope="col">Actions</th>` : html`<th scope="col">Decision</th>`}</tr></thead>
    <tbody>${view.requests.map(
      (request) => html`<tr id="${request.requestID}" data-request-id="${request.requestID}">
      <th scope="row">${view.describe(request.change)}<br><code class="muted">${request.requestID}</code></th>
      <td>${request.reason ?? html`<span class="muted">—</span>`}</td>
      <td>${view.email(request.requestedBy)}<br>${time(request.requestedAt)}</td>
      ${
        pending
          ? html`<td class="actions">${decisionControls(view, request)}</td>`
          : html`<td><span class="badge badge-${badgeClass[request.status]}">${STATUS_TEXT[request.status]}</span>
            ${
              request.decidedBy
                ? html`<br>${
                    request.decidedBy === request.requestedBy && request.status === 'rejected' ? 'withdrawn by' : 'by'
                  } ${view.email(request.decidedBy)}<br>${time(request.decidedAt)}`
                : ''
            }
            ${
              request.rejectionReason ? html`<br><span class="muted">Reason: ${request.rejectionReason}</span>` : ''
            }</td>`
      }
    </tr>`,
    )}</tbody></table>`;
}

export function accessPage(view: AccessView): Html {
  const tabs = (['pending', 'decided'] as const).map(
    (tab) =>
      html`<li>
        <a href="/console/admin/access?tab=${tab}"${
          tab === view.tab ? html` aria-current="page"` : ''
        }>${tab === 'pending' ? 'Pending' : 'Decided'} <span class="count">${view.counts[tab]}</span></a></li>`,
  );
  return html`<h1>Access requests</h1>
    <p>Every change that grants or widens access (a new user, a new role, enabling a user, a password reset) takes
    effect
      only when an administrator other than the one who asked approves it. Nobody decides on a change to their own
      access.</p>
    <nav class="tabs" aria-label="Access request lists"><ul>${tabs}</ul></nav>
    <section aria-labelledby="list-title">
    <h2 id="list-title">${view.tab === 'pending' ? 'Awaiting another administrator' : 'Approved and rejected'}</h2>
    ${requestsTable(view)}</section>`;
}

/** Shown once, to the approving administrator, in the response to the approval itself (never stored). */

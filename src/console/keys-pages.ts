import type { KeyUsage } from '../http/key-usage.ts';
import type { PublicApiKey } from '../projections/api-key-directory.ts';
import { money } from './format.ts';
import { html, seg, time, type Html } from '../http/html.ts';
import { csrfField, errorSummary, reasonField } from './layout.ts';
import type { SessionDoc } from './sessions.ts';

/** The markup of Settings › API keys: tabs, the three lists, the request form and the revocation form. */
export type KeyTab = 'pending' | 'active' | 'inactive';

export interface KeyRow extends PublicApiKey {
  requestedByEmail: string;
  /** Who asked for the revocation, while one is pending. */
  revocationRequestedBy: string | null;
  revocationRequestedByEmail: string;
  /** Requests made with the key (active keys only). */
  usage: KeyUsage | null;
  /** A secret rotation waiting for a checker. */
  rotation: { requestedBy: string; requestedByEmail: string; reason: string; requestedAt: string } | null;
  /** While a rotation's overlap lasts: until when the previous secret works. */
  previousSecretValidUntil: string | null;
  /**
   * The viewer holds a working secret of the key, or requested it: they may not approve its rotation or revocation
   * (src/domain/segregation.ts).
   */
  viewerHoldsSecret?: boolean;
  /** In the pending list, the row stands for the key's rotation request rather than for the key. */
  pendingRequest?: 'rotation';
}

export interface KeysView {
  tab: KeyTab;
  rows: Record<KeyTab, KeyRow[]>;
  userID: string;
  maker: boolean;
  checker: boolean;
  session: SessionDoc;
  /** ASSET_CODE: the currency beside the limits. */
  assetCode: string;
}

const TAB_LABELS: Record<KeyTab, string> = { pending: 'Pending', active: 'Active', inactive: 'Inactive' };
const TAB_HEADINGS: Record<KeyTab, string> = {
  pending: 'Requests awaiting a checker',
  active: 'Active keys',
  inactive: 'Rejected, withdrawn, revoked and expired keys',
};
const STATE_LABELS: Record<string, string> = {
  pending: 'Awaiting approval',
  active: 'Active',
  revocation_pending: 'Revocation requested',
  rejected: 'Rejected',
  withdrawn: 'Withdrawn',
  revoked: 'Revoked',
  expired: 'Expired',
};

const limits = (key: KeyRow, assetCode: string) => html`<dl class="limits">
    <dt>Max per operation</dt>
    <dd>${key.maxTransactionAmount === null ? 'no limit' : money(key.maxTransactionAmount, assetCode)}</dd>
    <dt>Max per day</dt><dd>${key.maxDailyVolume === null ? 'no limit' : money(key.maxDailyVolume, assetCode)}</dd>
    <dt>Allowed IPs</dt><dd>${key.allowedIPs.length ? key.allowedIPs.join(', ') : 'any'}</dd>
  </dl>`;

const permissions = (key: KeyRow) => html`<ul class="plain">${key.permissions.map((p) => html`<li>${p}</li>`)}</ul>`;

const badge = (state: string) => html`<span class="badge badge-${state}">${STATE_LABELS[state] ?? state}</span>`;

function postButton(
  view: KeysView,
  action: string,
  label: string,
  options: { danger?: boolean; reasonLabel?: string } = {},
): Html {
  return html`<form method="post" action="${action}" class="inline">${csrfField(view.session)}
    ${
      options.reasonLabel
        ? html`<label class="compact"><span class="visually-hidden">${options.reasonLabel}</span><input name="reason"
            maxlength="500" placeholder="Reason (optional)"></label>`
        : ''
    }
    <button type="submit"${options.danger ? html` class="danger"` : ''}>${label}</button></form>`;
}

function rotationActions(view: KeysView, key: KeyRow): Html {
  const base = `/console/keys/${seg(key.keyID)}/rotation`;
  const own = key.rotation?.requestedBy === view.userID;
  const withdraw = own ? postButton(view, `${base}/withdraw`, 'Withdraw rotation', { danger: true }) : '';
  if (!view.checker) return html`${withdraw}<span class="muted">Waiting for a checker</span>`;
  if (own) {
    const note = `own-rotation-${key.keyID}`;
    return html`<button type="button" disabled aria-describedby="${note}">Approve rotation</button> ${withdraw}
      <p class="hint" id="${note}">You made this request: another checker must decide on it.</p>`;
  }
  const reject = postButton(view, `${base}/reject`, 'Reject rotation', {
    danger: true,
    reasonLabel: `Reason for rejecting the rotation of ${key.label}`,
  });
  if (key.viewerHoldsSecret) return holderNote(key, 'Approve rotation', reject);
  return html`${postButton(view, `${base}/approve`, 'Approve rotation')}
    ${reject}`;
}

/** A disabled approval, and why: the viewer holds, or held, a secret of the key (a rejection stays theirs to make). */
function holderNote(key: KeyRow, label: string, other: Html): Html {
  const note = `holder-${key.keyID}`;
  return html`<button type="button" disabled aria-describedby="${note}">${label}</button> ${other}
    <p class="hint" id="${note}">You hold, or requested, a secret of this key: another checker must approve it.</p>`;
}

function pendingActions(view: KeysView, key: KeyRow): Html {
  if (key.pendingRequest === 'rotation') return rotationActions(view, key);
  const revocation = key.state === 'revocation_pending';
  const ownRequest = (revocation ? key.revocationRequestedBy : key.requestedBy) === view.userID;
  // The maker who asked for a key may take the request back while it waits.
  const withdraw =
    !revocation && ownRequest
      ? postButton(view, `/console/keys/${seg(key.keyID)}/withdraw`, 'Withdraw request', { danger: true })
      : '';
  if (!view.checker) return html`${withdraw}<span class="muted">Waiting for a checker</span>`;
  if (ownRequest) {
    const note = `own-${key.keyID}`;
    return html`<button type="button" disabled aria-describedby="${note}">Approve</button> ${withdraw}
      <p class="hint" id="${note}">You made this request: another checker must decide on it.</p>`;
  }
  const base = `/console/keys/${seg(key.keyID)}`;
  const keep = postButton(view, `${base}/revocation/reject`, 'Keep the key', {
    reasonLabel: `Reason for keeping ${key.label}`,
  });
  if (revocation && key.viewerHoldsSecret) return holderNote(key, 'Approve revocation', keep);
  return revocation
    ? html`${postButton(view, `${base}/revocation/approve`, 'Approve revocation', { danger: true })}
        ${keep}`
    : html`${postButton(view, `${base}/approve`, 'Approve')}
        ${postButton(view, `${base}/reject`, 'Reject', {
          danger: true,
          reasonLabel: `Reason for rejecting ${key.label}`,
        })}`;
}

function pendingTable(view: KeysView): Html {
  const rows = view.rows.pending;
  if (rows.length === 0) return html`<p class="empty">No key request or revocation request is waiting.</p>`;
  return html`<table>
    <caption class="visually-hidden">Requests awaiting a checker</caption>
    <thead><tr><th scope="col">Label</th><th scope="col">Request</th><th scope="col">Permissions</th>
    <th scope="col">Limits</th><th scope="col">Requested by</th><th scope="col">Actions</th></tr></thead>
    <tbody>${rows.map((key) => {
      const rotation = key.pendingRequest === 'rotation' ? key.rotation : null;
      const revocation = !rotation && key.state === 'revocation_pending';
      const request = rotation
        ? html`Secret rotation<br><span class="muted">Reason: ${rotation.reason}</span><br>
          <span class="muted">the previous secret keeps working for a while after the approval</span>`
        : revocation
          ? html`Revocation<br><span class="muted">Reason: ${key.revocationReason ?? ''}</span>`
          : html`New key<br><span class="muted">expires ${key.expiresInDays} days after approval</span>`;
      return html`<tr data-key-id="${key.keyID}"${rotation ? html` data-request="rotation"` : ''}>
        <th scope="row">${key.label}<br><code class="muted">${key.keyID}</code></th>
        <td>${request}</td>
        <td>${permissions(key)}</td>
        <td>${limits(key, view.assetCode)}</td>
        <td>${
          rotation
            ? html`${rotation.requestedByEmail}<br>${time(rotation.requestedAt)}`
            : revocation
              ? key.revocationRequestedByEmail
              : html`${key.requestedByEmail}<br>${time(key.requestedAt)}`
        }</td>
        <td class="actions">${pendingActions(view, key)}</td>
      </tr>`;
    })}</tbody></table>`;
}

function activeTable(view: KeysView): Html {
  const rows = view.rows.active;
  if (rows.length === 0) return html`<p class="empty">No active key.</p>`;
  return html`<table>
    <caption class="visually-hidden">Active keys</caption>
    <thead><tr><th scope="col">Label</th><th scope="col">Permissions</th><th scope="col">Limits</th>
    <th scope="col">Used</th><th scope="col">Expires</th><th scope="col">Requested by</th><th scope="col">Actions</th>
    </tr></thead>
    <tbody>${rows.map(
      (key) => html`<tr data-key-id="${key.keyID}">
      <th scope="row">${key.label}<br>
        <code class="muted">${key.keyID}</code>${
          key.state === 'revocation_pending' ? html`<br>${badge(key.state)}` : ''
        }${key.rotation ? html`<br><span class="badge badge-rotation_pending">Rotation requested</span>` : ''}${
          key.previousSecretValidUntil
            ? html`<br><span class="muted">previous secret valid until ${time(key.previousSecretValidUntil)}</span>`
            : ''
        }</th>
      <td>${permissions(key)}</td>
      <td>${limits(key, view.assetCode)}</td>
      <td class="usage">${String(key.usage?.count ?? 0)} requests${
        key.usage?.lastUsedAt
          ? html`<br><span class="muted">last ${time(key.usage.lastUsedAt)}</span>`
          : html`<br><span class="muted">never used</span>`
      }</td>
      <td>${time(key.expiresAt)}</td>
      <td>${key.requestedByEmail}</td>
      <td class="actions">${
        view.maker && key.state === 'active'
          ? html`${
              key.rotation
                ? ''
                : html`<a class="button" href="/console/keys/${seg(key.keyID)}/rotate">Rotate secret</a> `
            }<a class="button danger" href="/console/keys/${seg(key.keyID)}/revoke">Request revocation</a>`
          : ''
      }</td>
    </tr>`,
    )}</tbody></table>`;
}

function inactiveTable(view: KeysView): Html {
  const rows = view.rows.inactive;
  if (rows.length === 0) return html`<p class="empty">No rejected, withdrawn, revoked or expired key.</p>`;
  return html`<table>
    <caption class="visually-hidden">Rejected, withdrawn, revoked and expired keys</caption>
    <thead><tr><th scope="col">Label</th><th scope="col">State</th><th scope="col">Permissions</th>
    <th scope="col">Requested</th><th scope="col">Expiry</th><th scope="col">Revocation reason</th></tr></thead>
    <tbody>${rows.map(
      (key) => html`<tr data-key-id="${key.keyID}">
      <th scope="row">${key.label}<br><code class="muted">${key.keyID}</code></th>
      <td>${badge(key.state)}</td>
      <td>${permissions(key)}</td>
      <td>${key.requestedByEmail}<br>${time(key.requestedAt)}</td>
      <td>${time(key.expiresAt)}</td>
      <td>${key.revocationReason ?? ''}</td>
    </tr>`,
    )}</tbody></table>`;
}

export function keysPage(view: KeysView): Html {
  const tabs = (['pending', 'active', 'inactive'] as const).map(
    (tab) =>
      html`<li>
        <a href="/console/keys?tab=${tab}"${
          tab === view.tab ? html` aria-current="page"` : ''
        }>${TAB_LABELS[tab]} <span class="count">${view.rows[tab].length}</span></a></li>`,
  );
  const table =
    view.tab === 'pending' ? pendingTable(view) : view.tab === 'active' ? activeTable(view) : inactiveTable(view);
  return html`<div class="page-head"><h1>API keys</h1>
    ${view.maker ? html`<a class="button" href="/console/keys/new">New API key</a>` : ''}</div>
    <nav class="tabs" aria-label="API key lists"><ul>${tabs}</ul></nav>
    <section aria-labelledby="list-title"><h2 id="list-title">${TAB_HEADINGS[view.tab]}</h2>${table}</section>`;
}

export interface KeyFormValues {
  label: string;
  permissions: string[];
  maxTransactionAmount: string;
  maxDailyVolume: string;
  allowedIPs: string;
  expiresInDays: string;
}

export const EMPTY_KEY_FORM: KeyFormValues = {
  label: '',
  permissions: [],
  maxTransactionAmount: '',
  maxDailyVolume: '',
  allowedIPs: '',
  expiresInDays: '365',
};

const PERMISSION_CHOICES = [
  ['read-balance', 'Read Balance', 'read the wallet balance'],
  ['read-transactions', 'Read Transactions', 'list operations and payments'],
  ['perform-operations', 'Perform Operations', 'create operations (a checker still approves each one)'],
] as const;

function textField(
  name: keyof KeyFormValues,
  label: string,
  values: KeyFormValues,
  errors: Record<string, string>,
  extra: { hint?: string; inputmode?: string; type?: string; required?: boolean } = {},
): Html {
  const error = errors[name];
  const describedBy = [extra.hint ? `${name}-hint` : '', error ? `${name}-error` : ''].filter(Boolean).join(' ');
  return html`<div class="field${error ? ' invalid' : ''}">
    <label for="${name}">${label}</label>
    ${extra.hint ? html`<p class="hint" id="${name}-hint">${extra.hint}</p>` : ''}
    ${error ? html`<p class="field-error" id="${name}-error">${error}</p>` : ''}
    <input id="${name}" name="${name}" type="${extra.type ?? 'text'}" value="${values[name] as string}"${
      extra.inputmode ? html` inputmode="${extra.inputmode}"` : ''
    }${extra.required ? html` required` : ''}${
      describedBy ? html` aria-describedby="${describedBy}"` : ''
    }${error ? html` aria-invalid="true"` : ''}>
  </div>`;
}

export function newKeyPage(session: SessionDoc, values: KeyFormValues, errors: Record<string, string>): Html {
  const permissionError = errors.permissions;
  return html`<h1>New API key</h1>
    <p>A checker of your party approves the request. You will then see the key once, on your next page.</p>
    ${errorSummary(errors, (name) => (name === 'permissions' ? 'perm-read-balance' : name))}
    <form method="post" action="/console/keys" class="stack" novalidate>
      ${csrfField(session)}
      ${textField('label', 'Label', values, errors, {
        hint: 'What the key is for, e.g. "till 3" or "ERP integration".',
        required: true,
      })}
      <fieldset class="field${permissionError ? ' invalid' : ''}"${
        permissionError ? html` aria-describedby="permissions-error"` : ''
      }>
        <legend>Permissions</legend>
        ${permissionError ? html`<p class="field-error" id="permissions-error">${permissionError}</p>` : ''}
        ${PERMISSION_CHOICES.map(
          ([value, label, help]) => html`<div class="check">
          <input type="checkbox" id="perm-${value}" name="permissions" value="${value}"${
            values.permissions.includes(value) ? html` checked` : ''
          }>
          <label for="perm-${value}">${label} <span class="muted">— ${help}</span></label></div>`,
        )}
      </fieldset>
      ${textField('maxTransactionAmount', 'Max transaction amount (optional)', values, errors, {
        hint: 'The largest amount of one operation. Empty: no limit.',
        inputmode: 'decimal',
      })}
      ${textField('maxDailyVolume', 'Max daily volume (optional)', values, errors, {
        hint: 'The total of one day’s operations. Empty: no limit.',
        inputmode: 'decimal',
      })}
      ${textField('allowedIPs', 'Allowed IPs (optional)', values, errors, {
        hint: 'Comma-separated addresses or CIDR ranges, e.g. 203.0.113.7, 10.0.0.0/8. Empty: any address.',
      })}
      ${textField('expiresInDays', 'Expires in (days)', values, errors, {
        hint: 'Counted from the approval; 1 to 3650.',
        inputmode: 'numeric',
      })}
      <div class="actions"><button type="submit">Request key</button> <a href="/console/keys">Cancel</a></div>
    </form>`;
}

export function rotatePage(session: SessionDoc, key: PublicApiKey, error?: string): Html {
  return html`<h1>Rotate the secret of “${key.label}”</h1>
    <p>A checker of your party approves the rotation. You will then see the new key once, on your next page; its id,
    permissions, limits and expiry stay the same.
      The current secret keeps working for a while after the approval (the page then says until when), so that you can
      switch your systems to the new one; after that only the new one works.</p>
    <form method="post" action="/console/keys/${seg(key.keyID)}/rotate" class="stack">
      ${csrfField(session)}
      ${reasonField(error)}
      <div class="actions"><button type="submit">Request rotation</button> <a href="/console/keys?tab=active">Cancel</a>
      </div>
    </form>`;
}

export function revokePage(session: SessionDoc, key: PublicApiKey, error?: string): Html {
  return html`<h1>Request revocation of “${key.label}”</h1>
    <p>A checker of your party approves the revocation; the key keeps working until then, and never works again
    after.</p>
    <form method="post" action="/console/keys/${seg(key.keyID)}/revoke" class="stack">
      ${csrfField(session)}
      ${reasonField(error)}
      <div class="actions">
      <button type="submit" class="danger">Request revocation</button> <a href="/console/keys?tab=active">Cancel</a>
      </div>
    </form>`;
}

import type { AccessRequestRecord } from '../commands/access-requests.ts';
import type { UserRole } from '../domain/events.ts';
import { html, seg, type Html } from '../http/html.ts';
import type { PartySummary, PartyWithUsers, PublicUser } from '../projections/user-directory.ts';
import { csrfField } from './layout.ts';
import type { LiveCredential } from '../commands/departures.ts';
import { searchForm } from './parties-pages.ts';
import type { SessionDoc } from './sessions.ts';

/** The markup of Users: every party with its users, and one user's page with what an administrator may do. */
const ROLE_TEXT: Record<UserRole, string> = { maker: 'maker', checker: 'checker' };

export const partyTitle = (party: PartySummary) => `${party.name} (${party.type} ${party.shortCode})`;

export function statusBadges(user: PublicUser): Html {
  return html`<span class="badge badge-${user.status === 'active' ? 'active' : 'revoked'}">${
    user.status === 'active' ? 'Active' : 'Disabled'
  }</span>${user.mustChangePassword ? html` <span class="badge badge-pending">Temporary password</span>` : ''}`;
}

const rolesText = (user: PublicUser) =>
  user.platformAdmin ? 'platform administrator' : user.roles.map((r) => ROLE_TEXT[r]).join(', ');

/** What an administrator may do to the user, each a link to its form on the user's page. */
function lifecycleLinks(user: PublicUser): Html {
  const base = `/console/admin/users/${seg(user.userID)}`;
  const links: Array<[string, string]> =
    user.status === 'active'
      ? [
          ['disable-title', 'Disable…'],
          ['reset-title', 'Reset password…'],
          ...(user.platformAdmin ? [] : [['actions', 'Roles…'] as [string, string]]),
        ]
      : [['enable-title', 'Request enabling…']];
  return html`<ul class="plain links">
    ${links.map(
      ([anchor, text]) =>
        html`<li><a href="${base}#${anchor}">${text}<span class="visually-hidden"> ${user.email}</span></a></li>`,
    )}</ul>`;
}

function usersTable(caption: string, users: PublicUser[]): Html {
  if (users.length === 0) return html`<p class="empty">No user yet.</p>`;
  return html`<table>
    <caption class="visually-hidden">${caption}</caption>
    <thead><tr><th scope="col">User</th><th scope="col">Roles</th><th scope="col">Status</th>
    <th scope="col">Actions</th></tr></thead>
    <tbody>${users.map(
      (user) => html`<tr data-user-id="${user.userID}">
      <th scope="row"><a href="/console/admin/users/${seg(user.userID)}">${user.email}</a></th>
      <td>${rolesText(user)}</td>
      <td>${statusBadges(user)}</td>
      <td class="actions">${lifecycleLinks(user)}</td>
    </tr>`,
    )}</tbody></table>`;
}

export function usersPage(view: {
  administrators: PublicUser[] | null;
  parties: PartyWithUsers[];
  filtered: boolean;
  query: string;
  onlyParty: string | null;
}): Html {
  return html`<div class="page-head"><h1>Users</h1><a class="button" href="/console/admin#user-title">Request a user</a>
    </div>
    <p>Disabling a user or removing one of their roles takes effect at once. Adding a user or a role, enabling a user
    and
      resetting a password are requests that another administrator approves. Open a user for what you may do.</p>
    ${
      view.onlyParty
        ? ''
        : searchForm(
            '/console/admin/users',
            'Find a user',
            'Part of an email, a party’s name or its short code.',
            view.query,
          )
    }
    ${view.filtered ? html`<p><a href="/console/admin/users">All parties</a></p>` : ''}
    ${
      view.administrators
        ? html`<section aria-labelledby="admins-title"><h2 id="admins-title">Platform administrators</h2>
          ${usersTable('Platform administrators', view.administrators)}</section>`
        : ''
    }
    ${
      view.parties.length === 0
        ? html`<p class="empty">${view.query ? 'No party or user matches.' : 'No party.'}</p>`
        : ''
    }
    ${view.parties.map(
      (party) => html`<section aria-labelledby="party-${party.type}-${party.id}" data-party="${party.type}:${party.id}">
      <h2 id="party-${party.type}-${party.id}">${partyTitle(party)} <a class="small"
        href="/console/admin/users?party=${party.type}:${seg(party.id)}">only this party</a></h2>
      ${usersTable(`Users of ${party.name}`, party.users)}</section>`,
    )}`;
}

export interface UserView {
  user: PublicUser;
  party: PartySummary | null;
  self: boolean;
  pending: AccessRequestRecord[];
  session: SessionDoc;
  /**
   * The keys and webhook endpoints whose secret this user holds (current or previous), or asked to rotate: a departure
   * ends that.
   */
  credentials: LiveCredential[];
  /** A refusal of a form on this page, shown beside it. */
  error?: { form: string; message: string };
}

const ENDS: Record<LiveCredential['ends'][number], string> = {
  credential: 'stops working: only they hold its secret',
  'previous-secret':
    'its previous secret, which they still hold during a rotation’s overlap, stops working; the current one, ' +
    'another maker’s, keeps working',
  'rotation-request': 'the rotation they asked for is withdrawn',
};

/** What disabling the user (or removing their maker role) ends at once, and how to keep an integration running. */
function departureList(view: UserView): Html {
  if (view.credentials.length === 0) return html``;
  return html`<div class="notice warning" data-departure><p>Every secret ${view.user.email} knows ends at once:</p>
    <ul>${view.credentials.map(
      (c) => html`<li data-credential="${c.id}" data-ends="${c.ends.join(' ')}">
      ${
        c.kind === 'api-key' ? 'API key' : 'Webhook endpoint'
      } <strong>${c.label}</strong> (<code>${c.id}</code>, ${c.status}):
      ${c.ends.map((end) => ENDS[end]).join('; ')}</li>`,
    )}</ul>
    <p>To keep an integration running, another maker of the party rotates its secret first (a checker approves):
    the new secret is theirs.</p></div>`;
}

function reasonInput(view: UserView, form: string, label: string, required: boolean): Html {
  const id = `${form}-reason`;
  const error = view.error?.form === form ? view.error.message : undefined;
  return html`<div class="field${error ? ' invalid' : ''}"><label for="${id}">${label}</label>
    ${error ? html`<p class="field-error" id="${id}-error">${error}</p>` : ''}
    <input id="${id}" name="reason" maxlength="500"${required ? html` required` : ''}${
      error ? html` aria-invalid="true" aria-describedby="${id}-error"` : ''
    }></div>`;
}

function actionCard(
  view: UserView,
  form: string,
  title: string,
  action: string,
  text: string,
  button: Html,
  options: { reason?: 'required' | 'optional'; role?: UserRole } = {},
): Html {
  return html`<section class="card" aria-labelledby="${form}-title"><h2 id="${form}-title">${title}</h2>
    <p class="hint">${text}</p>
    <form method="post" action="/console/admin/users/${seg(view.user.userID)}/${action}" class="stack">
    ${csrfField(view.session)}
      ${options.role ? html`<input type="hidden" name="role" value="${options.role}">` : ''}
      ${
        options.reason
          ? reasonInput(
              view,
              form,
              options.reason === 'required' ? 'Reason' : 'Reason (optional)',
              options.reason === 'required',
            )
          : ''
      }
      ${button}</form></section>`;
}

function actions(view: UserView): Html[] {
  const { user } = view;
  if (view.self)
    return [
      html`<p class="hint">This is you: change your own password on the <a href="/console/password">Password</a> page.
        Another administrator manages your access.</p>`,
    ];
  const cards: Html[] = [];
  if (user.status === 'active') {
    cards.push(
      actionCard(
        view,
        'disable',
        'Disable',
        'disable',
        'At once: their console sessions end and they cannot log in, and the API keys and webhook endpoints ' +
          'whose secret only they hold stop working. Enabling them again needs another administrator’s approval.',
        html`${departureList(view)}<button type="submit" class="danger">Disable user</button>`,
        { reason: 'required' },
      ),
    );
  } else {
    cards.push(
      actionCard(
        view,
        'enable',
        'Enable',
        'enable',
        'Requests that another administrator enable this user again.',
        html`<button type="submit">Request enabling</button>`,
        { reason: 'optional' },
      ),
    );
  }
  if (!user.platformAdmin) {
    for (const role of ['maker', 'checker'] as const) {
      if (user.roles.includes(role) && user.roles.length > 1) {
        cards.push(
          actionCard(
            view,
            `remove-${role}`,
            `Remove the ${role} role`,
            'roles/remove',
            role === 'maker'
              ? 'At once, with the API keys and webhook endpoints whose secret only they hold. A user keeps at ' +
                  'least one role: to remove the last one, disable the user.'
              : 'At once. A user keeps at least one role: to remove the last one, disable the user.',
            html`${role === 'maker' ? departureList(view) : ''}<button type="submit"
                class="danger">Remove ${role} role</button>`,
            { role },
          ),
        );
      } else if (!user.roles.includes(role) && user.status === 'active') {
        cards.push(
          actionCard(
            view,
            `add-${role}`,
            `Give the ${role} role`,
            'roles/add',
            'Requests that another administrator approve the new role.',
            html`<button type="submit">Request ${role} role</button>`,
            { role, reason: 'optional' },
          ),
        );
      }
    }
  }
  if (user.status === 'active') {
    cards.push(
      actionCard(
        view,
        'reset',
        'Reset the password',
        'reset-password',
        'Requests a reset. On approval the temporary password is made in two halves: you see the first, the ' +
          'approving administrator the second, and each of you gives yours to the user, who must change it at ' +
          'their next login. Their sessions end.',
        html`<button type="submit">Request password reset</button>`,
        { reason: 'optional' },
      ),
    );
  }
  return cards;
}

export function userPage(view: UserView, describe: (request: AccessRequestRecord) => string): Html {
  const { user } = view;
  return html`<h1>${user.email}</h1>
    ${view.error ? html`<p class="notice error" role="alert">${view.error.message}</p>` : ''}
    <dl class="summary">
      <dt>Belongs to</dt>
      <dd>${view.party ? partyTitle(view.party) : user.platformAdmin ? 'the platform (administrator)' : user.party}</dd>
      <dt>Roles</dt><dd>${rolesText(user)}</dd>
      <dt>Status</dt><dd>${statusBadges(user)}</dd>
      <dt>User id</dt><dd><code>${user.userID}</code></dd>
    </dl>
    ${
      view.pending.length
        ? html`<section aria-labelledby="pending-title"><h2 id="pending-title">Waiting for approval</h2>
      <ul>${view.pending.map(
        (request) =>
          html`<li>${describe(request)} <a href="/console/admin/access#${request.requestID}">${request.requestID}</a>
            </li>`,
      )}</ul></section>`
        : ''
    }
    <div class="cards align-start" id="actions">${actions(view)}</div>
    <p><a href="/console/admin/users">All users</a></p>`;
}

import type { ActiveUser } from '../commands/back-office.ts';
import { html, type Html, type Renderable } from '../http/html.ts';
import type { DeliveredSecret } from '../commands/held-credentials.ts';
import type { SessionDoc } from './sessions.ts';
import type { Waiting } from './waiting.ts';

export type Section =
  | 'dashboard'
  | 'operations'
  | 'keys'
  | 'webhooks'
  | 'admin'
  | 'parties'
  | 'users'
  | 'access'
  | 'password'
  | 'login'
  | 'none';

export interface PageOptions {
  title: string;
  section: Section;
  body: Renderable;
  /** Absent on the login page. */
  viewer?: { user: ActiveUser; session: SessionDoc; partyName: string | null; waiting: Waiting };
  flash?: SessionDoc['flash'];
  /** Secrets shown once, in a dialog, on this page view. */
  secrets?: DeliveredSecret[];
  /** How often console.js asks for the waiting counts. */
  pollMs?: number;
}

export const csrfField = (session: SessionDoc): Html =>
  html`<input type="hidden" name="_csrf" value="${session.csrfToken}">`;

/** A form's problems above it, each a link to its field (`anchor` names the field's element). */
export function errorSummary(errors: Record<string, string>, anchor: (name: string) => string): Html {
  const list = Object.entries(errors);
  if (!list.length) return html``;
  return html`<div class="notice error" role="alert" id="form-errors"><h2>The request has ${
    list.length === 1 ? 'a problem' : `${list.length} problems`
  }</h2>
      <ul>${list.map(([name, message]) => html`<li><a href="#${anchor(name)}">${message}</a></li>`)}</ul></div>`;
}

/** The required "Reason" text area of a rejection or revocation, with its inline error. */
export const reasonField = (error?: string): Html => html`<div class="field${error ? ' invalid' : ''}">
        <label for="reason">Reason</label>
        ${error ? html`<p class="field-error" id="reason-error">${error}</p>` : ''}
        <textarea id="reason" name="reason" rows="3" maxlength="500" required${
          error ? html` aria-invalid="true" aria-describedby="reason-error"` : ''
        }></textarea>
      </div>`;

/**
 * The count of decisions waiting, kept current by console.js (GET /console/waiting). Rendered hidden at zero,
 * so that the page says the same with or without the script.
 */
function waitingBadge(kind: keyof Waiting, count: number): Html {
  return html` <span class="waiting" data-waiting="${kind}"${
    count === 0 ? html` hidden` : ''
  }><span data-count>${String(count)}</span><span class="visually-hidden"> waiting for you</span></span>`;
}

function navLink(href: string, label: string, current: boolean, waiting?: [keyof Waiting, number]): Html {
  return html`<li>
    <a href="${href}"${current ? html` aria-current="page"` : ''}>${label}${waiting ? waitingBadge(...waiting) : ''}</a>
    </li>`;
}

function navigation(user: ActiveUser, section: Section, waiting: Waiting): Html {
  const checker = user.roles.includes('checker');
  const links = user.party
    ? [
        navLink('/console/', 'Dashboard', section === 'dashboard'),
        navLink(
          '/console/operations',
          'Operations',
          section === 'operations',
          checker ? ['operations', waiting.operations] : undefined,
        ),
        navLink(
          '/console/keys',
          'Settings › API keys',
          section === 'keys',
          checker ? ['keys', waiting.keys] : undefined,
        ),
        navLink(
          '/console/webhooks',
          'Webhooks',
          section === 'webhooks',
          checker ? ['webhooks', waiting.webhooks] : undefined,
        ),
      ]
    : [
        navLink('/console/', 'Dashboard', section === 'dashboard'),
        navLink('/console/admin', 'Administration', section === 'admin'),
        navLink('/console/admin/parties', 'Parties', section === 'parties'),
        navLink('/console/admin/users', 'Users', section === 'users'),
        navLink('/console/admin/access', 'Access requests', section === 'access', ['access', waiting.access]),
      ];
  return html`<nav aria-label="Main"><ul>${links}</ul></nav>`;
}

/**
 * The navigation and the user's links in one disclosure: a "Menu" button on a phone, always open on a wide
 * screen (CSS shows a closed one's content there; console.js also opens it, for browsers without ::details-content).
 */
function menu(options: NonNullable<PageOptions['viewer']> & { section: Section }): Html {
  return html`<details class="menu" data-menu>
    <summary><span class="menu-label">Menu</span>${waitingBadge('total', options.waiting.total)}</summary>
    <div class="menu-body">
      ${navigation(options.user, options.section, options.waiting)}
      ${who(options)}
    </div>
  </details>`;
}

function who(options: NonNullable<PageOptions['viewer']> & { section: Section }): Html {
  const { user, session, partyName } = options;
  const role = user.platformAdmin
    ? 'platform administrator'
    : (['maker', 'checker'] as const).filter((r) => user.roles.includes(r)).join(' and ');
  return html`<div class="who">
      <span><span class="email">${user.email}</span> <span class="muted">· ${
        partyName ? html`${partyName} · ` : ''
      }${role}</span></span>
      <a href="/console/password"${options.section === 'password' ? html` aria-current="page"` : ''}>Password</a>
      <form method="post" action="/console/logout">${csrfField(session)}<button type="submit"
        class="link">Log out</button></form>
    </div>`;
}

function flashMessage(flash: PageOptions['flash']): Html {
  if (!flash) return html``;
  return flash.kind === 'ok'
    ? html`<p class="notice ok" role="status" data-flash="ok">${flash.text}</p>`
    : html`<p class="notice error" role="alert" data-flash="error">${flash.text}</p>`;
}

/** The one-time secret: opened as a modal by console.js (focus inside, Escape closes), plain and open without it. */
/** What each kind of held credential's dialog says, and the value it shows. */
function secretText(secret: DeliveredSecret, id: string): { intro: Html; label: string; value: string } {
  switch (secret.kind) {
    case 'webhook-endpoint':
      return {
        intro: html`<h2 id="${id}-title">Webhook endpoint signing secret</h2>
          <p class="secret-for"><code>${secret.url}</code></p>
          <p id="${id}-help">Deliveries to this endpoint are signed with this secret: your receiver checks each
          signature with it.
            This is the only time it is shown. Copy it now and keep it somewhere safe: nobody can show it again, not
            even an administrator.</p>`,
        label: 'Signing secret',
        value: secret.signingSecret,
      };
    case 'password-half':
      return {
        intro: html`<h2 id="${id}-title">Your half of the temporary password for ${secret.email}</h2>
          <p id="${id}-help">Access request ${secret.requestID} made a temporary password in two halves, so that no
          administrator alone can log in as ${secret.email}.
            This is the <strong>${secret.half}</strong> half; the other administrator of the request has the ${
              secret.half === 'first' ? 'second' : 'first'
            }.
            Give yours to ${secret.email} yourself, by a channel other than the one that tells them their login email:
            they type the first half, a hyphen, then the second,
            and must choose their own password at that login. This is the only time it is shown.</p>`,
        label: `Temporary password, ${secret.half} half`,
        value: secret.value,
      };
    default:
      return {
        intro: html`<h2 id="${id}-title">API key “${secret.label}” is ready</h2>
          <p id="${id}-help">This is the only time the key is shown. Copy it now and keep it somewhere safe: nobody can
          show it again, not even an administrator.</p>`,
        label: 'API key',
        value: secret.apiKey,
      };
  }
}

function secretDialog(secret: DeliveredSecret, index: number): Html {
  const id = `secret-${index}`;
  const { intro, label, value } = secretText(secret, id);
  return html`<dialog class="secret" open data-modal aria-labelledby="${id}-title" aria-describedby="${id}-help">
      ${intro}
      <label for="${id}">${label}</label>
      <input id="${id}" class="secret-value" type="text" readonly value="${value}" autocomplete="off" spellcheck="false"
        data-secret${secret.kind === 'password-half' ? html` data-password-half="${secret.half}"` : ''}>
      <div class="actions">
        <button type="button" data-copy="${id}" hidden>Copy to clipboard</button>
        <form method="dialog"><button type="submit" class="secondary">I have stored it</button></form>
        <span class="copy-status" role="status" data-copy-status></span>
      </div>
    </dialog>`;
}

export function page(options: PageOptions): Html {
  return html`<!doctype html>
<html lang="en"${options.pollMs ? html` data-poll-ms="${String(options.pollMs)}"` : ''}>
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="same-origin">
<title>${options.title} · wallet-ops console</title>
<link rel="stylesheet" href="/console/assets/console.css">
<script src="/console/assets/console.js" defer></script>
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header class="top">
  <a class="brand" href="/console/">wallet-ops <span>console</span></a>
  ${options.viewer ? menu({ ...options.viewer, section: options.section }) : ''}
</header>
<main id="main" tabindex="-1">
${flashMessage(options.flash)}
${options.body}
${(options.secrets ?? []).map(secretDialog)}
</main>
</body>
</html>
`;
}

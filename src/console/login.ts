import { DomainError } from '../domain/errors.ts';
import type { Request, RequestHandler, Response, Router } from 'express';
import { findUserByEmail, type ActiveUser } from '../commands/back-office.ts';
import { hashPassword, verifyPassword } from '../domain/passwords.ts';
import { ConsoleError, field, settled, type ConsoleServices } from './context.ts';
import { html } from '../http/html.ts';
import {
  clearCookie,
  isSameOrigin,
  LOGIN_CSRF_COOKIE,
  readCookie,
  SESSION_COOKIE,
  setCookie,
  tokensEqual,
} from './http-security.ts';
import { renderPage } from './render.ts';
import { loadUser } from './users.ts';
import { newToken } from './sessions.ts';
import { upgradeHashAfterLogin } from './hash-upgrade.ts';

/**
 * Login and logout, and the middleware that admits every other console request: a live session, and for a
 * state-changing request a same-origin source and the session's synchronizer token.
 */
const LOGIN_FORM_MS = 60 * 60_000;

/**
 * Where a login returns to: a console page of this origin only (a path, never a scheme, a host or `//`), so
 * that a crafted link cannot send a user elsewhere after they log in (no open redirect). Anything else: the dashboard.
 */
export function safeReturnPath(value: unknown): string | null {
  if (typeof value !== 'string' || value.length > 1000 || !value.startsWith('/console') || /[\\\s]/.test(value))
    return null;
  let url: URL;
  try {
    url = new URL(value, 'http://console.invalid');
  } catch {
    return null;
  }
  if (url.origin !== 'http://console.invalid') return null;
  if (url.pathname !== '/console' && !url.pathname.startsWith('/console/')) return null;
  if (/^\/console\/(login|logout|waiting|assets\/)/.test(url.pathname)) return null;
  return url.pathname + url.search;
}

/** The page to return to after a form post refused for an ended session: the page the form was on. */
export function returnPathOf(req: Request): string | null {
  if (req.method === 'GET' || req.method === 'HEAD') return safeReturnPath(req.originalUrl);
  const referer = req.get('referer');
  if (!referer) return null;
  try {
    const url = new URL(referer);
    return url.host === req.host ? safeReturnPath(url.pathname + url.search) : null;
  } catch {
    return null;
  }
}

export const loginLink = (next: string | null, ended: boolean): string => {
  const query = new URLSearchParams();
  if (ended) query.set('ended', '1');
  if (next && next !== '/console/') query.set('next', next);
  const text = query.toString();
  return `/console/login${text ? `?${text}` : ''}`;
};

/** Shown in a <pre>, where a line break would show: two pieces, rendered as one line. */
const FIRST_ADMINISTRATOR_COMMAND = [
  html`npx wallet-ops user add --platform-admin --email you@example.com `,
  html`--password 'a long passphrase'`,
];

/**
 * On a system without any administrator yet (a fresh install), how to begin: nobody can log in until an operator,
 * who holds the stores, adds the first administrator with the CLI; that administrator then onboards the rest.
 */
const FIRST_ADMINISTRATOR = html`<div class="notice" role="note" id="first-admin">
    <p>
    <strong>No administrator exists yet.</strong> An operator with access to this system's stores creates the first one
    with the CLI,
    with the same <code>DATA_DIR</code> (or <code>POSTGRES_URL</code> and <code>SECRETS_KEY</code>) as the server:</p>
    <pre><code>${FIRST_ADMINISTRATOR_COMMAND}</code></pre>
    <p>then logs in here with it. That administrator onboards the parties and adds their users (docs/console.md).</p>
  </div>`;

function loginForm(
  token: string,
  options: { email?: string; error?: string; notice?: string; next?: string | null; firstAdministrator?: boolean } = {},
) {
  const error = options.error;
  return html`<div class="login">
    <h1>Log in to the console</h1>
    ${options.firstAdministrator ? FIRST_ADMINISTRATOR : ''}
    ${options.notice ? html`<p class="notice ok" role="status">${options.notice}</p>` : ''}
    ${error ? html`<p class="notice error" role="alert" id="login-error">${error}</p>` : ''}
    <form method="post" action="/console/login" class="stack">
      <input type="hidden" name="_csrf" value="${token}">
      ${options.next ? html`<input type="hidden" name="next" value="${options.next}">` : ''}
      <div class="field">
        <label for="email">Email</label>
        <input id="email" name="email" type="email" autocomplete="username" required maxlength="254"
          value="${options.email ?? ''}"${
            error ? html` aria-describedby="login-error"` : ''
          }${options.email ? '' : html` autofocus`}>
      </div>
      <div class="field">
        <label for="password">Password</label>
        <input id="password" name="password" type="password" autocomplete="current-password" required
          maxlength="1024"${options.email ? html` autofocus` : ''}>
      </div>
      <button type="submit">Log in</button>
    </form>
  </div>`;
}

async function showLogin(
  services: ConsoleServices,
  req: Request,
  res: Response,
  status: number,
  options: Parameters<typeof loginForm>[1] = {},
) {
  // Login CSRF: a double-submit token, so no other site can log a browser into an account of its choosing.
  const token = newToken();
  setCookie(req, res, LOGIN_CSRF_COOKIE, token, LOGIN_FORM_MS);
  // An administrator the CLI added a moment ago counts.
  await settled(services.deps.userReads.current());
  const firstAdministrator = services.users.administrators().length === 0;
  await renderPage(services, res, {
    title: 'Log in',
    section: 'login',
    status,
    body: loginForm(token, { ...options, firstAdministrator }),
  });
}

export function loginRoutes(router: Router, services: ConsoleServices): void {
  const { sessions, throttle, deps } = services;
  // Unknown emails cost one scrypt too, against this hash, so timing does not tell which emails exist.
  let dummyHash: Promise<string> | undefined;
  const dummy = () => (dummyHash ??= hashPassword(newToken()));

  router.get('/login', async (req, res) => {
    const next = safeReturnPath(req.query.next);
    const token = readCookie(req, SESSION_COOKIE);
    if (token && (await sessions.resume(token))) return res.redirect(303, next ?? '/console/');
    const ended = req.query.ended === '1';
    const notice = ended
      ? `Your session has ended. Please log in again${next ? ': you will be back on the page you were on' : ''}.`
      : req.query.out === '1'
        ? 'You have logged out.'
        : undefined;
    await showLogin(services, req, res, 200, { ...(notice ? { notice } : {}), next });
  });

  router.post('/login', async (req, res) => {
    if (!isSameOrigin(req))
      throw new ConsoleError(403, 'The login form was not sent from this console, so it was refused.');
    const next = safeReturnPath(field(req, 'next'));
    if (!tokensEqual(field(req, '_csrf'), readCookie(req, LOGIN_CSRF_COOKIE) ?? '')) {
      // A login page left open past its token's hour (or from before a restart of the browser): nothing
      // happened, so say so and offer a fresh form rather than a bare refusal. The password is never echoed.
      const email = (field(req, 'email') ?? '').trim().toLowerCase().slice(0, 254);
      return showLogin(services, req, res, 403, {
        email,
        next,
        notice: 'This login form had expired, so nothing was sent. Please enter your password again.',
      });
    }
    const email = (field(req, 'email') ?? '').trim().toLowerCase().slice(0, 254);
    const password = field(req, 'password') ?? '';
    const address = req.ip ?? '';
    // Counted before the password is checked: parallel guesses cannot get more checks than the limit.
    const admission = await throttle.admit(email, address);
    if (!admission.admitted) {
      res.set('Retry-After', String(admission.retryAfterSeconds));
      deps.logger.warn({ ip: address, reason: admission.reason }, 'console: login throttled');
      const error =
        admission.reason === 'locked'
          ? `Too many failed attempts. Try again in ${duration(admission.retryAfterSeconds * 1000).noun}.`
          : 'Logins for this email are slowed down after many failed attempts from elsewhere. Try again in ' +
            `${duration(admission.retryAfterSeconds * 1000).noun}.`;
      return showLogin(services, req, res, 429, { email, next, error });
    }
    let user: ActiveUser | null;
    try {
      user = await findUserByEmail(services.backOffice, email);
    } catch (error) {
      // Unknown, disabled or malformed: answered exactly like a wrong password. A store that cannot be read is
      // not a refusal of this user: it answers 503 (the problem handler), not a misleading 401.
      if (!(error instanceof DomainError)) throw error;
      user = null;
    }
    const valid =
      password.length > 0 &&
      password.length <= 1024 &&
      (await verifyPassword(password, user?.passwordHash ?? (await dummy())));
    if (!user || !valid) {
      deps.logger.warn({ ip: address }, 'console: login failed');
      return showLogin(services, req, res, 401, {
        email,
        next,
        error: `The email or the password is wrong. ${attemptsLeft(admission, throttle.limits.lockoutMs)}`,
      });
    }
    await throttle.succeeded(email, address);
    await upgradeHashAfterLogin(services, user, password, res);
    // A session this browser had is ended, not kept beside the new one.
    const previous = readCookie(req, SESSION_COOKIE);
    const old = previous ? await sessions.resume(previous) : null;
    if (old) await sessions.destroy(old);
    const { token } = await sessions.create(user.userID);
    setCookie(req, res, SESSION_COOKIE, token, sessions.times.absoluteMs);
    clearCookie(req, res, LOGIN_CSRF_COOKIE);
    deps.logger.info({ userID: user.userID }, 'console: logged in');
    res.redirect(303, next ?? '/console/');
  });
}

/** What a failed login leaves: said on the page, so that a user who mistyped knows where they stand. */
function attemptsLeft(admission: { attemptsLeft: number; limitedBy: 'email' | 'address' }, lockoutMs: number): string {
  const lockout = duration(lockoutMs);
  if (admission.attemptsLeft > 0)
    return (
      `${admission.attemptsLeft} attempt${admission.attemptsLeft === 1 ? '' : 's'} left before a ` +
      `${lockout.adjective} lockout.`
    );
  const which = admission.limitedBy === 'email' ? 'for this email from this address' : 'from this address';
  return `No attempts left: logins ${which} are locked for ${lockout.noun}.`;
}

/** "15 minutes" and "15-minute"; whole hours as hours, under a minute in seconds. */
function duration(ms: number): { noun: string; adjective: string } {
  const [count, unit] =
    ms >= 3_600_000 && ms % 3_600_000 === 0
      ? [ms / 3_600_000, 'hour']
      : ms >= 60_000
        ? [Math.ceil(ms / 60_000), 'minute']
        : [Math.ceil(ms / 1000), 'second'];
  return { noun: `${count} ${unit}${count === 1 ? '' : 's'}`, adjective: `${count}-${unit}` };
}

/**
 * Admits a request with a live session; refuses a state-changing one without the same origin and the session's token.
 */
export function requireSession(services: ConsoleServices): RequestHandler {
  return async (req, res, next) => {
    const token = readCookie(req, SESSION_COOKIE);
    const session = token ? await services.sessions.resume(token) : null;
    const user = session ? await loadUser(services, session.userID) : null;
    if (!session || !user) {
      if (token) clearCookie(req, res, SESSION_COOKIE);
      const next = returnPathOf(req);
      if (req.method === 'GET' || req.method === 'HEAD') return res.redirect(303, loginLink(next, Boolean(token)));
      throw new ConsoleError(
        401,
        'Your session has ended, so this was not done. Log in again: you will be back on the page you were on, ' +
          'with what you typed there, and can send it again.',
        {
          title: 'Please log in again',
          link: { href: loginLink(next, true), text: 'Log in' },
        },
      );
    }
    res.locals.consoleViewer = { user, session };
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      if (!isSameOrigin(req))
        throw new ConsoleError(403, 'This request did not come from a console page, so it was refused.');
      if (!tokensEqual(field(req, '_csrf'), session.csrfToken)) {
        // Same origin, but the token of another (ended) session: a page left open across a new login.
        const back = returnPathOf(req);
        throw new ConsoleError(
          403,
          'This form was opened before your current login, so nothing was done. Open the page again and repeat ' +
            'what you were doing: what you typed in a reason is kept.',
          {
            title: 'Please try again',
            ...(back ? { link: { href: back, text: 'Back to the page' } } : {}),
          },
        );
      }
    }
    next();
  };
}

export function logoutRoute(router: Router, services: ConsoleServices): void {
  router.post('/logout', async (req, res) => {
    const current = res.locals.consoleViewer as { session: { id: string } };
    await services.sessions.destroy(current.session);
    clearCookie(req, res, SESSION_COOKIE);
    res.redirect(303, '/console/login?out=1');
  });
}

import type { ErrorRequestHandler, Response } from 'express';
import { loadState } from '../commands/pipeline.ts';
import { userDecider } from '../commands/users.ts';
import type { ActiveUser } from '../commands/back-office.ts';
import { DomainError, type DomainErrorCode } from '../domain/errors.ts';
import { streams } from '../domain/streams.ts';
import { ConsoleError, type ConsoleServices, type Viewer } from './context.ts';
import { html, type Renderable } from '../http/html.ts';
import { noStore } from './http-security.ts';
import { page, type Section } from './layout.ts';
import { NOTHING_WAITING, waitingFor } from './waiting.ts';

/** Sends a full page for the logged-in viewer: their party, a pending flash message, and any secret waiting for them. */
export async function renderPage(
  services: ConsoleServices,
  res: Response,
  options: { title: string; section: Section; body: Renderable; status?: number },
): Promise<void> {
  const current = res.locals.consoleViewer as Viewer | undefined;
  noStore(res);
  if (!current) {
    res.status(options.status ?? 200).type('html').send(page({ title: options.title, section: 'none', body: options.body }).value);
    return;
  }
  const { user, session } = current;
  const partyName = user.party ? ((await services.lookup.party(user.party))?.name ?? null) : null;
  const flash = await services.sessions.takeFlash(session);
  // Taken as the page is rendered: the next view, a reload included, will not have it. Only a GET shows it
  // (a HEAD would take it and send no body).
  const secrets = res.req.method === 'GET' ? await services.secrets.take(user.userID) : [];
  // The counts are a convenience: a page is never refused because they could not be read.
  const waiting = await waitingFor(services, user).catch((error: unknown) => {
    services.deps.logger.warn({ err: error, userID: user.userID }, 'console: waiting counts not available');
    return NOTHING_WAITING;
  });
  const body = page({ ...options, viewer: { user, session, partyName, waiting }, flash, secrets, pollMs: services.deps.waitingPollMs ?? 15_000 });
  res.status(options.status ?? 200).type('html').send(body.value);
}

/** Post/Redirect/Get: the message is shown once on the page redirected to. */
export async function redirectWith(services: ConsoleServices, res: Response, location: string, flash: { kind: 'ok' | 'error'; text: string }): Promise<void> {
  const current = res.locals.consoleViewer as Viewer | undefined;
  if (current) await services.sessions.setFlash(current.session, flash);
  res.redirect(303, location);
}

export async function loadUser(services: ConsoleServices, userID: string): Promise<ActiveUser | null> {
  const { state } = await loadState(services.backOffice, streams.user(userID), userDecider);
  return state.status === 'active' ? state : null;
}

/** A user id as people know it: the email. */
export async function emailOf(services: ConsoleServices, userID: string | null): Promise<string> {
  if (!userID) return '';
  if (!/^[0-9a-f-]{36}$/.test(userID)) return userID; // an operator or a system actor
  // Also a disabled user's: lists still say who requested or approved what.
  const { state } = await loadState(services.backOffice, streams.user(userID), userDecider);
  return state.status === 'none' ? userID : state.email;
}

const STATUS_OF: Partial<Record<DomainErrorCode, number>> = {
  INVALID_INPUT: 400,
  ROLE_REQUIRED: 403,
  OTHER_PARTY: 403,
  SAME_USER: 403,
  NOT_FOUND: 404,
};

const TITLES: Record<number, string> = {
  400: 'Check the form',
  401: 'Please log in',
  403: 'Not allowed',
  404: 'Not found',
  409: 'Not possible now',
  413: 'Too large',
  429: 'Too many attempts',
};

/** Every refusal becomes a page that says what happened; internals never reach the page, only the request id. */
export function consoleErrorHandler(services: ConsoleServices): ErrorRequestHandler {
  return async (error: unknown, req, res, _next) => {
    if (res.headersSent) return;
    let status: number;
    let message: string;
    let custom: ConsoleError['page'] = {};
    if (error instanceof ConsoleError) {
      status = error.status;
      message = error.message;
      custom = error.page;
    } else if (error instanceof DomainError) {
      status = STATUS_OF[error.code] ?? 409;
      message = error.message.charAt(0).toUpperCase() + error.message.slice(1) + '.';
    } else if (typeof error === 'object' && error !== null && typeof (error as { status?: unknown }).status === 'number' && (error as { status: number }).status < 500) {
      status = (error as { status: number }).status;
      message = status === 413 ? 'The form is larger than the console accepts.' : 'The request could not be read.';
    } else {
      status = 500;
      const requestId = String(res.getHeader('X-Request-Id') ?? '');
      services.deps.logger.error({ err: error, requestId, method: req.method, path: req.path }, 'console: unexpected error');
      message = `Something went wrong on our side. Request id ${requestId}.`;
    }
    const title = custom.title ?? TITLES[status] ?? 'Something went wrong';
    const back = custom.link
      ? html`<p><a class="button" href="${custom.link.href}">${custom.link.text}</a></p>`
      : res.locals.consoleViewer ? html`<p><a href="/console/">Back to the dashboard</a></p>` : html`<p><a href="/console/login">Log in</a></p>`;
    try {
      await renderPage(services, res, { title, section: 'none', status, body: html`<h1>${title}</h1><p class="notice error" role="alert">${message}</p>${back}` });
    } catch (renderError) {
      services.deps.logger.error({ err: renderError }, 'console: error page failed');
      if (!res.headersSent) res.status(500).type('text').send('Internal error');
    }
  };
}

import type { ErrorRequestHandler } from 'express';
import { DomainError } from '../domain/errors.ts';
import { html } from '../http/html.ts';
import { statusOfDomainError } from '../http/problems.ts';
import { ConsoleError, type ConsoleServices, sentence } from './context.ts';
import { renderPage } from './render.ts';

const TITLES: Record<number, string> = {
  400: 'Check the form',
  401: 'Please log in',
  403: 'Not allowed',
  404: 'Not found',
  409: 'Not possible now',
  413: 'Too large',
  422: 'Not possible',
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
      // The API's status for the same refusal: one table (src/http/problems.ts), the console only words the page.
      status = statusOfDomainError(error.code);
      message = sentence(error.message);
    } else if (
      typeof error === 'object' &&
      error !== null &&
      typeof (error as { status?: unknown }).status === 'number' &&
      (error as { status: number }).status < 500
    ) {
      status = (error as { status: number }).status;
      message = status === 413 ? 'The form is larger than the console accepts.' : 'The request could not be read.';
    } else {
      status = 500;
      const requestId = String(res.getHeader('X-Request-Id') ?? '');
      services.deps.logger.error(
        { err: error, requestId, method: req.method, path: req.path },
        'console: unexpected error',
      );
      message = `Something went wrong on our side. Request id ${requestId}.`;
    }
    const title = custom.title ?? TITLES[status] ?? 'Something went wrong';
    const back = custom.link
      ? html`<p><a class="button" href="${custom.link.href}">${custom.link.text}</a></p>`
      : res.locals.consoleViewer
        ? html`<p><a href="/console/">Back to the dashboard</a></p>`
        : html`<p><a href="/console/login">Log in</a></p>`;
    try {
      await renderPage(services, res, {
        title,
        section: 'none',
        status,
        body: html`<h1>${title}</h1><p class="notice error" role="alert">${message}</p>${back}`,
      });
    } catch (renderError) {
      services.deps.logger.error({ err: renderError }, 'console: error page failed');
      if (!res.headersSent) res.status(500).type('text').send('Internal error');
    }
  };
}

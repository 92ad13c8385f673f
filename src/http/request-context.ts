import { randomUUID } from 'node:crypto';
import type { RequestHandler, Response } from 'express';
import type { Logger } from '../logger.ts';
import { validTraceparent } from '../ports/tracing.ts';

const CLIENT_REQUEST_ID = /^[A-Za-z0-9._:-]{1,64}$/;

/**
 * Every response carries an X-Request-Id (the client's, when it is a sane token, else a new uuid), and every
 * request is logged once when it ends (routine ones at debug): method, path without the query, status, duration, key
 * id. Never a header value or a body: the Authorization header holds a secret.
 *
 * A `traceparent` header (W3C Trace Context) that is well formed is kept for the commands the request runs
 * (`requestTraceparent`); one that is not is dropped silently, as the W3C recommends: the request goes on in a new
 * trace.
 */
export function requestContext(logger: Logger): RequestHandler {
  // One listener shared by every response rather than a closure per request: what it logs rides on the response.
  function finished(this: Response): void {
    const { req, locals } = this;
    const path = req.baseUrl + req.path;
    const level = routine(path) && this.statusCode < 400 ? 'debug' : 'info';
    // At the usual LOG_LEVEL (info), an API request is logged and a probe is not: nothing is built for the latter.
    if (!logger.isLevelEnabled(level)) return;
    const durationMs = performance.now() - (locals.requestStartedMs as number);
    const keyID = (locals.apiKey as { keyID?: string } | undefined)?.keyID;
    logger[level](
      {
        requestId: locals.requestId as string,
        method: req.method,
        path,
        status: this.statusCode,
        durationMs: Math.round(durationMs * 100) / 100,
        keyID,
      },
      'request',
    );
  }
  return (req, res, next) => {
    // The headers as Node parsed them: express's req.get would lower-case the name and look it up again.
    const incoming = req.headers['x-request-id'];
    const requestId = typeof incoming === 'string' && CLIENT_REQUEST_ID.test(incoming) ? incoming : randomUUID();
    res.setHeader('X-Request-Id', requestId);
    const traceparent = validTraceparent(req.headers.traceparent);
    if (traceparent !== undefined) res.locals.traceparent = traceparent;
    // Nothing is logged below info (routine requests at debug): at LOG_LEVEL=warn a request registers no listener.
    if (logger.isLevelEnabled('info')) {
      res.locals.requestId = requestId;
      res.locals.requestStartedMs = performance.now();
      res.on('finish', finished); // a response finishes once
    }
    next();
  };
}

/**
 * Requests that come every few seconds and say nothing when they succeed: the probes, the metrics scrape and the
 * console's static files. Logged at debug (LOG_LEVEL=debug shows them), unless they fail: a failing probe is news.
 */
const ROUTINE = new Set(['/health', '/ready', '/metrics', '/favicon.ico']);
const routine = (path: string) => ROUTINE.has(path) || path.startsWith('/console/assets/');

/** The request's checked traceparent (requestContext), if it sent a well-formed one. */
export const requestTraceparent = (res: Response): string | undefined => res.locals.traceparent as string | undefined;

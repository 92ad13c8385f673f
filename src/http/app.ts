import express, { type Express } from 'express';
import type { Logger } from '../logger.ts';
import { fieldError, ProblemError, problemHandler, validationProblem } from './problems.ts';
import { requestContext } from './request-context.ts';

export interface AppDeps {
  logger: Logger;
  clock: () => Date;
  /** Express's trust proxy setting: whether X-Forwarded-For names the client. */
  trustProxy: boolean | number | string[];
  /** The API's routers, mounted in order. */
  routers: express.Router[];
  /** Whether the process is alive: its background consumers have not been down past their grace. Reads no store. */
  liveness?: () => { alive: boolean } & Record<string, unknown>;
  /** Whether the process can serve current data (for orchestrators' readiness probes). */
  readiness: () => Promise<{ ready: boolean } & Record<string, unknown>>;
  /**
   * The OpenAPI document, served without authentication at /api/v1/openapi.json, and its page at /api/v1/docs
   * (rendered by the read API, which owns the document: the HTTP edge only serves them).
   */
  openApi?: { document: () => unknown; page: (document: unknown) => string };
  /**
   * Metrics (src/metrics): `observe` sees every request first (the HTTP histogram); `endpoint`, when the scrape
   * is served on this port, is mounted before the API's routers, without authentication.
   */
  metrics?: { observe: express.RequestHandler; endpoint?: { path: string; handler: express.RequestHandler } };
  /** A store found corrupted (src/health.ts, CorruptionWatch): every request after the probes is refused with it. */
  corrupted?: () => Error | null;
}

/** The HTTP application, without `listen` and without reading the environment: tests start it on port 0. */
export function createApp(deps: AppDeps): Express {
  const app = express();
  app.disable('x-powered-by');
  // No ETag on every answer: the read API tags its GETs' 200s itself (src/http/conditional.ts).
  app.set('etag', false);
  app.set('trust proxy', deps.trustProxy);
  // Flat query strings only: no nested objects or arrays built from "a[b]=c".
  app.set('query parser', 'simple');
  if (deps.metrics) app.use(deps.metrics.observe);
  app.use(requestContext(deps.logger));
  // Liveness: the process answers and its consumers run (503 tells an orchestrator to restart it). Readiness:
  // its read models are close enough to the head of the store; it also reports each consumer's state and lag.
  app.get('/health', (_req, res) => {
    const { alive, ...details } = deps.liveness?.() ?? { alive: true };
    res.status(alive ? 200 : 503).json({
      status: alive ? 'ok' : details.corrupted ? 'corrupted' : 'failing',
      time: deps.clock().toISOString(),
      ...details,
    });
  });
  app.get('/ready', async (_req, res) => {
    const readiness = await deps.readiness();
    res.status(readiness.ready ? 200 : 503).json({ status: readiness.ready ? 'ready' : 'not ready', ...readiness });
  });
  if (deps.metrics?.endpoint) app.get(deps.metrics.endpoint.path, deps.metrics.endpoint.handler);
  if (deps.openApi) serveApiDescription(app, deps.openApi);
  // A corrupted store is not served around: a request that would not touch the damage may still read what it did.
  if (deps.corrupted) {
    const corrupted = deps.corrupted;
    app.use((_req, _res, next) => {
      const error = corrupted();
      if (error) throw error;
      next();
    });
  }
  for (const router of deps.routers) app.use(router);
  // The contract answers a wrong endpoint URL with a validation problem.
  app.use('/api', (req) => {
    throw validationProblem(
      [fieldError('url', `${req.method} ${req.baseUrl}${req.path} is not an endpoint of this API`)],
      'No such endpoint.',
    );
  });
  app.use(() => {
    throw new ProblemError({
      type: '/problems/not-found',
      status: 404,
      title: 'Not Found',
      detail: 'Nothing is served at this address.',
    });
  });
  app.use(problemHandler(deps.logger));
  return app;
}

/** The document is rendered once, at the first request: it does not change while the process runs. */
function serveApiDescription(app: Express, openApi: NonNullable<AppDeps['openApi']>): void {
  let rendered: { json: string; html: string } | undefined;
  const render = () => {
    if (!rendered) {
      const document = openApi.document();
      rendered = { json: JSON.stringify(document), html: openApi.page(document) };
    }
    return rendered;
  };
  app.get('/api/v1/openapi.json', (_req, res) => {
    res.type('application/json').send(render().json);
  });
  app.get('/api/v1/docs', (_req, res) => {
    // No script and nothing fetched from elsewhere: the page needs only its own inline style.
    res.set(
      'Content-Security-Policy',
      "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    );
    res.type('html').send(render().html);
  });
}

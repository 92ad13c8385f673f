import express, { type Express } from 'express';
import type { Logger } from '../logger.ts';
import { fieldError, ProblemError, problemHandler, validationProblem } from './problems.ts';
import { inSequence } from './in-sequence.ts';
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
  // The probes, the scrape and the API's description, answered before a corrupted store is refused.
  const probes = express.Router();
  // Liveness: the process answers and its consumers run (503 tells an orchestrator to restart it). Readiness:
  // its read models are close enough to the head of the store; it also reports each consumer's state and lag.
  probes.get('/health', (_req, res) => {
    const { alive, ...details } = deps.liveness?.() ?? { alive: true };
    res.status(alive ? 200 : 503).json({
      status: alive ? 'ok' : details.corrupted ? 'corrupted' : 'failing',
      time: deps.clock().toISOString(),
      ...details,
    });
  });
  probes.get('/ready', async (_req, res) => {
    const readiness = await deps.readiness();
    res.status(readiness.ready ? 200 : 503).json({ status: readiness.ready ? 'ready' : 'not ready', ...readiness });
  });
  if (deps.metrics?.endpoint) probes.get(deps.metrics.endpoint.path, deps.metrics.endpoint.handler);
  if (deps.openApi) serveApiDescription(probes, deps.openApi);

  // Everything before the error handlers is one layer of express's router, not one per concern: each layer costs a
  // request a match, a params pass and closures, and a balance answered from memory costs little more than that.
  const steps: express.RequestHandler[] = [];
  if (deps.metrics) steps.push(deps.metrics.observe);
  steps.push(requestContext(deps.logger));
  steps.push(enteredOnItsPaths(probes));
  // A corrupted store is not served around: a request that would not touch the damage may still read what it did.
  if (deps.corrupted) {
    const corrupted = deps.corrupted;
    steps.push((_req, _res, next) => {
      const error = corrupted();
      if (error) throw error;
      next();
    });
  }
  steps.push(...deps.routers.map(enteredByItsMethods));
  app.use(inSequence(steps));
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

/**
 * A router entered only by a request whose path is one of its routes', as express matches them (any case, one
 * trailing slash): the probes' routes are not tried one by one on the way of every API request. Fixed paths only.
 */
function enteredOnItsPaths(router: express.Router): express.RequestHandler {
  const paths = router.stack.map((layer) => {
    const path = layer.route?.path;
    if (typeof path !== 'string' || /[:*{}(]/.test(path)) throw new Error(`not a route of a fixed path: ${path}`);
    return path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  });
  const path = new RegExp(`^(?:${paths.join('|')})/?$`, 'i');
  const entered: express.RequestHandler = (req, res, next) => (path.test(req.path) ? router(req, res, next) : next());
  // The router's layers, for what reads the app's routes (see inSequence).
  return Object.assign(entered, { stack: router.stack });
}

/**
 * A router made of routes alone is entered only by a request of a method one of them answers (HEAD with GET;
 * OPTIONS, which the router answers with the Allow header): entering and leaving a router costs a request about
 * as much as its own answer from memory, and a GET would otherwise pass through the write API's router.
 */
function enteredByItsMethods(router: express.Router): express.RequestHandler {
  // Read at the first request (the routers come built); null: not routes alone, every request enters.
  let methods: Set<string> | null | undefined;
  const entered: express.RequestHandler = (req, res, next) => {
    if (methods === undefined) methods = methodsOf(router);
    if (methods === null || methods.has(req.method)) return router(req, res, next);
    next();
  };
  // The router's layers, for what reads the app's routes (see inSequence).
  return Object.assign(entered, { stack: router.stack });
}

function methodsOf(router: express.Router): Set<string> | null {
  const methods = new Set(['OPTIONS']);
  for (const layer of router.stack) {
    if (!layer.route) return null;
    for (const handler of layer.route.stack) {
      // No method: route.all(), which answers any.
      if (!handler.method) return null;
      methods.add(handler.method.toUpperCase());
      if (handler.method === 'get') methods.add('HEAD');
    }
  }
  return methods;
}

/** The document is rendered once, at the first request: it does not change while the process runs. */
function serveApiDescription(app: express.Router, openApi: NonNullable<AppDeps['openApi']>): void {
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

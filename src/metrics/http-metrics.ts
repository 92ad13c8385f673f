import express, { type Express, type Request, type RequestHandler, type Response } from 'express';
import type { WalletOpsMetrics } from './metrics.ts';

/** Where the scrape is served, on the API port or on METRICS_PORT: Prometheus's default metrics_path. */
export const METRICS_PATH = '/metrics';

/**
 * The label of a request's route: the express route pattern it matched (`/api/v1/merchants/:merchantID/balance`),
 * never the raw URL, whose ids would make a series per party, operation or key (unbounded cardinality).
 * - a matched route: the mount path of its router (`/console`) and the route's pattern;
 * - answered by middleware inside a mounted router without a route (a console redirect to the login page,
 *   the console's own 404): `<mount path>/*`;
 * - anything else (the API's 404s, unknown paths): `unmatched`.
 * All three come from the code's own patterns, so the set of values is fixed whatever clients send.
 */
export function routeLabel(req: Request): string {
  const route = (req as Request & { route?: { path?: unknown } }).route;
  if (route && route.path !== undefined) return `${req.baseUrl}${String(route.path)}`;
  if (req.baseUrl) return `${req.baseUrl}/*`;
  return 'unmatched';
}

/**
 * Times every request from its arrival to its last byte and counts it by method, route and status, except
 * the scrapes of `skipPath` (a scrape would otherwise be counted, half-finished, into the very output it
 * produces, and a 15 s scrape interval would dominate the rate of a quiet system). /health and /ready are
 * counted under their own routes: filter them out (`route!~"/health|/ready"`) where they are noise.
 *
 * The route is read when the response finishes: by then express has matched it, and a response sent from a
 * mounted router (the console) still has that router's mount path as its base URL.
 */
export function httpMetrics(metrics: WalletOpsMetrics, skipPath?: string): RequestHandler {
  const { httpDuration } = metrics;
  // One listener shared by every response rather than a closure per request (about 1 µs a request): the start
  // rides on the response.
  function finished(this: Response): void {
    const seconds = (performance.now() - (this.locals.metricsStartedMs as number)) / 1000;
    const labels = { method: this.req.method, route: routeLabel(this.req), status: String(this.statusCode) };
    httpDuration.observe(labels, seconds);
  }
  return (req, res, next) => {
    if (skipPath !== undefined && req.path === skipPath) return next();
    res.locals.metricsStartedMs = performance.now();
    res.on('finish', finished); // a response finishes once
    next();
  };
}

/** GET of the scrape: the Prometheus text format, uncached. */
export function metricsEndpoint(metrics: WalletOpsMetrics): RequestHandler {
  return async (_req, res) => {
    const body = await metrics.scrape();
    res.set('Cache-Control', 'no-store').type(metrics.contentType).send(body);
  };
}

/**
 * The scrape alone, for METRICS_PORT: GET /metrics and nothing else (a plain 404 elsewhere), so that the
 * port can be opened to Prometheus without opening the API, and the API port carries no /metrics.
 */
export function metricsApp(metrics: WalletOpsMetrics): Express {
  const app = express();
  app.disable('x-powered-by');
  app.get(METRICS_PATH, metricsEndpoint(metrics));
  app.use((_req, res) => {
    res.status(404).type('text/plain').send('Not found: metrics are at /metrics\n');
  });
  return app;
}

import express, { type Express, type Request, type RequestHandler, type Response } from 'express';
import type { Histogram } from 'prom-client';
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
  const durations = new RequestDurations(metrics.httpDuration);
  // One listener shared by every response rather than a closure per request (about 1 µs a request): the start
  // rides on the response.
  function finished(this: Response): void {
    const seconds = (performance.now() - (this.locals.metricsStartedMs as number)) / 1000;
    durations.observe(routeLabel(this.req), this.req.method, this.statusCode, seconds);
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

/** prom-client's record of one label set of a histogram (prom-client 15, lib/histogram.js createBaseValues). */
interface HistogramRecord {
  labels: Record<string, string | number>;
  bucketValues: Record<string, number>;
  sum: number;
  count: number;
}

/**
 * The HTTP histogram's observations added to prom-client's record of their label set, found by route, method and
 * status in maps. prom-client's observe builds a labels object, checks it, and builds and hashes a key string at each
 * request: about 0.7 µs, a sixth of what a balance answered from memory costs above bare express. What the scrape
 * shows is prom-client's own exposition of the same records (test/metrics/http-metrics.test.ts compares it with
 * prom-client's observe).
 */
export class RequestDurations {
  private readonly histogram: Histogram<'method' | 'route' | 'status'>;
  private readonly bounds: readonly number[];
  /** The bucket keys of prom-client's records: its upper bounds as property names. */
  private readonly boundKeys: readonly string[];
  private records = new Map<string, Map<string, Map<number, HistogramRecord>>>();
  /** prom-client's map of records that `records` holds records of: a reset of the histogram replaces it. */
  private recordsOf: unknown;

  /** Set once prom-client's records are not where this class looks: every observation then goes through observe. */
  private publicOnly: boolean;

  constructor(histogram: Histogram<'method' | 'route' | 'status'>) {
    this.histogram = histogram;
    const { upperBounds } = this.internals();
    this.publicOnly = !Array.isArray(upperBounds);
    this.bounds = upperBounds ?? [];
    this.boundKeys = this.bounds.map(String);
  }

  observe(route: string, method: string, status: number, seconds: number): void {
    // A prom-client that keeps its records otherwise: its own observe, never a failure in a response's listener.
    if (this.publicOnly) return this.histogram.observe({ method, route, status: String(status) }, seconds);
    const internals = this.internals();
    if (internals.hashMap !== this.recordsOf) {
      this.records = new Map();
      this.recordsOf = internals.hashMap;
    }
    let byMethod = this.records.get(route);
    if (!byMethod) this.records.set(route, (byMethod = new Map()));
    let byStatus = byMethod.get(method);
    if (!byStatus) byMethod.set(method, (byStatus = new Map()));
    let record = byStatus.get(status);
    if (!record) {
      record = this.recordFor({ method, route, status: String(status) });
      if (!record) {
        this.publicOnly = true;
        return this.histogram.observe({ method, route, status: String(status) }, seconds);
      }
      byStatus.set(status, record);
    }
    record.sum += seconds;
    record.count += 1;
    // As prom-client counts it: in the first bucket whose bound holds it (none past the last: +Inf is the count).
    for (let i = 0; i < this.bounds.length; i++)
      if (seconds <= this.bounds[i]!) {
        record.bucketValues[this.boundKeys[i]!]! += 1;
        return;
      }
  }

  /** prom-client's record of a label set, made by its public `zero` (only the first time: zero resets it). */
  private recordFor(labels: { method: string; route: string; status: string }): HistogramRecord | undefined {
    this.histogram.zero(labels);
    return Object.values(this.internals().hashMap ?? {}).find(
      (r) =>
        r?.labels?.method === labels.method &&
        r.labels.route === labels.route &&
        r.labels.status === labels.status &&
        typeof r.bucketValues === 'object',
    );
  }

  private internals() {
    return this.histogram as unknown as { hashMap?: Record<string, HistogramRecord>; upperBounds?: number[] };
  }
}

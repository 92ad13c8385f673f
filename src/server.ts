import { createServer, type RequestListener, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadConfig, type Config } from './config.ts';
import { demoInstructions, seedDemo, type DemoSeed } from './demo.ts';
import { asyncStdout, createLogger, flushLogs } from './logger.ts';
import { answerClientErrors } from './http/client-errors.ts';
import { limitConnections, trustedProxies, type RefusedConnection } from './http/connection-limits.ts';
import { ALL_PARTS, buildWalletOps, type Part } from './wallet-ops.ts';
import { buildWithFollowersThread, followersThreadSplit } from './followers-thread.ts';

/**
 * How long a stopping process may take to finish its requests and close its stores before it exits anyway.
 * An orchestrator must wait longer than this before it kills the process (docker-compose.yml's stop_grace_period).
 */
export const SHUTDOWN_TIMEOUT_MS = 10_000;

/** The HTTP server could not listen (port in use, not permitted, no such address): the process cannot serve. */
export class ListenError extends Error {
  readonly code: string | undefined;
  constructor(host: string, port: number, cause: NodeJS.ErrnoException) {
    const where = host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
    const why = cause.code && LISTEN_ERRORS[cause.code] ? LISTEN_ERRORS[cause.code] : cause.message;
    super(`cannot listen on ${where}: ${why}${cause.code ? ` (${cause.code})` : ''}`, { cause });
    this.name = 'ListenError';
    this.code = cause.code;
  }
}

const LISTEN_ERRORS: Record<string, string> = {
  EADDRINUSE: 'address already in use',
  EACCES: 'permission denied',
  EADDRNOTAVAIL: 'address not available on this host',
  EAFNOSUPPORT: 'address family not supported',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'host name lookup failed',
};

/**
 * The HTTP timeouts and connection caps of a production server, from the configuration (src/config.ts says why each
 * value).
 */
export type HttpTimeouts = Pick<
  Config,
  | 'HTTP_KEEP_ALIVE_TIMEOUT_MS'
  | 'HTTP_HEADERS_TIMEOUT_MS'
  | 'HTTP_REQUEST_TIMEOUT_MS'
  | 'HTTP_MAX_CONNECTIONS'
  | 'HTTP_MAX_CONNECTIONS_PER_ADDRESS'
  | 'TRUST_PROXY'
>;

/**
 * How often Node looks for requests past their headers or request timeout: its default (30 s) would let a
 * 10 s headers timeout run to 40 s. A quarter of the headers timeout, at most a second: a walk over the
 * connections with a request in progress, cheap even with thousands of them.
 */
const checkEveryMs = (headersTimeoutMs: number) => Math.min(1000, Math.floor(headersTimeoutMs / 4));

/**
 * An HTTP server for the app that can drain: `drain()` stops accepting connections, lets the requests in
 * flight finish, closes keep-alive connections as soon as they are idle, and resolves once the last connection
 * is gone. Node's default keep-alive timeout (5 s) is shorter than a load balancer's idle timeout (60 s), which
 * then sends requests on connections the server is closing: hence the configured timeouts. Slow clients are
 * bounded by the headers timeout (from a request's first byte) and the connection caps (src/http/connection-limits.ts).
 */
export function createHttpServer(
  handler: RequestListener,
  timeouts: HttpTimeouts,
  options: { onRefusedConnection?: (reason: RefusedConnection) => void } = {},
): { server: Server; drain: () => Promise<void> } {
  let draining = false;
  const inFlight = new Set<ServerResponse>();
  const server = createServer(
    {
      keepAliveTimeout: timeouts.HTTP_KEEP_ALIVE_TIMEOUT_MS,
      headersTimeout: timeouts.HTTP_HEADERS_TIMEOUT_MS,
      requestTimeout: timeouts.HTTP_REQUEST_TIMEOUT_MS,
      connectionsCheckingInterval: checkEveryMs(timeouts.HTTP_HEADERS_TIMEOUT_MS),
    },
    (req, res) => {
      // A request that arrives on a kept-alive connection while draining is still served, but its connection
      // closes after the response, or server.close() would wait for it until the keep-alive timeout.
      if (draining) res.setHeader('Connection', 'close');
      inFlight.add(res);
      res.once('close', () => {
        inFlight.delete(res);
        // Its connection is now idle (unless the client pipelined another request): close it.
        if (draining) server.closeIdleConnections();
      });
      handler(req, res);
    },
  );
  answerClientErrors(server);
  const proxies = trustedProxies(timeouts.TRUST_PROXY);
  limitConnections(server, {
    total: timeouts.HTTP_MAX_CONNECTIONS,
    perAddress: timeouts.HTTP_MAX_CONNECTIONS_PER_ADDRESS,
    ...(proxies ? { exempt: proxies } : {}),
    ...(options.onRefusedConnection ? { onRefused: options.onRefusedConnection } : {}),
  });
  let drained: Promise<void> | undefined;
  const drain = () =>
    (drained ??= new Promise<void>((resolve) => {
      draining = true;
      // Stops listening at once (new connections are refused) and resolves when every connection has ended.
      server.close(() => resolve());
      for (const res of inFlight) if (!res.headersSent) res.setHeader('Connection', 'close');
      server.closeIdleConnections();
    }));
  return { server, drain };
}

/** Where a person on this machine reaches an address the server listens on (any address: the loopback). */
function baseUrl(host: string, port: number): string {
  const reachable = host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '::1' : host;
  return `http://${reachable.includes(':') ? `[${reachable}]` : reachable}:${port}`;
}

/** A store's URL without its password (a URL this parser cannot read is not shown at all). */
function withoutPassword(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return '(a URL not shown)';
  }
}

/** Which store holds what, for the start line: each server's address without its password. */
export function storesInUse(config: Config): { events: string; readModels: string; ledger: string } {
  const at = (kind: string, url: string | undefined) =>
    kind === 'embedded' ? `embedded (${config.DATA_DIR})` : `${kind} (${url ? withoutPassword(url) : 'no URL'})`;
  const serverUrl = (kind: string) =>
    kind === 'postgres' ? config.POSTGRES_URL : kind === 'kurrentdb' ? config.KURRENTDB_URL : config.MONGODB_URL;
  return {
    events: at(config.EVENT_STORE, serverUrl(config.EVENT_STORE)),
    readModels: at(config.READ_STORE, serverUrl(config.READ_STORE)),
    ledger: config.LEDGER === 'embedded' ? `embedded (${config.DATA_DIR})` : config.LEDGER,
  };
}

/** What this process serves, as addresses to open: the API, its docs, the console, the probes, the metrics. */
function startUrls(
  config: Config,
  parts: readonly Part[],
  port: number,
  metricsPort: number | undefined,
): Record<string, string> {
  const base = baseUrl(config.HOST, port);
  const api = parts.includes('write-api') || parts.includes('read-api');
  return {
    ...(api ? { api: `${base}/api/v1`, apiDocs: `${base}/api/v1/docs` } : {}),
    ...(parts.includes('write-api') ? { console: `${base}/console` } : {}),
    health: `${base}/health`,
    ...(config.METRICS_ENABLED
      ? {
          metrics:
            metricsPort === undefined
              ? `${base}/metrics`
              : `${baseUrl(config.METRICS_HOST ?? config.HOST, metricsPort)}/metrics`,
        }
      : {}),
  };
}

/** Resolves once the server listens; rejects with the server's error (EADDRINUSE, EACCES…) if it cannot. */
function listen(server: Server, port: number, host: string): Promise<Server> {
  return new Promise((resolve, reject) => {
    const failed = (error: Error) => reject(error);
    server.once('error', failed);
    server.listen(port, host, () => {
      server.off('error', failed);
      resolve(server);
    });
  });
}

/**
 * Runs the chosen parts of wallet-ops in this process until SIGINT or SIGTERM. With an API part it listens
 * on PORT; the projections and the executor need no port but still answer /health and /ready on it. If it
 * cannot listen, it closes what it opened and rejects with a ListenError (logging "wallet-ops started" only
 * once it listens). With `demo`, it seeds the demo first; a store that is not the demo's rejects with a
 * DemoStoreRefusedError and nothing is served.
 */
export async function serve(parts: readonly Part[] = ALL_PARTS, options: { demo?: boolean } = {}): Promise<void> {
  // A demo is a sandbox: the keys its console issues are test keys too, unless API_KEY_ENVIRONMENT says otherwise.
  const env = options.demo ? { API_KEY_ENVIRONMENT: 'test', ...process.env } : { ...process.env };
  const config = loadConfig(env);
  const logger = createLogger(config.LOG_LEVEL, asyncStdout());
  // With an API and followers both, the followers run on a thread of their own (FOLLOWERS_THREAD).
  const split = followersThreadSplit(config, parts);
  const system = split
    ? await buildWithFollowersThread(env, config, logger, split)
    : await buildWalletOps(config, logger, () => new Date(), parts);
  // The demo is seeded before the port opens: a store that is not the demo's (src/demo-store.ts) starts nothing.
  let demo: DemoSeed | undefined;
  if (options.demo) {
    try {
      demo = await seedDemo(system.stores.eventStore, config.ASSET_SCALE, system.credentials);
    } catch (error) {
      await system
        .close()
        .catch((closing: unknown) => logger.error({ err: closing }, 'closing after a refused demo failed'));
      throw error;
    }
  }
  // A cap that bites is counted, and logged at most once a minute per cap: a misjudged cap (a load balancer's
  // pool above the per-address cap) shows at once, a flood does not flood the log.
  const lastLogged = { total: 0, 'per-address': 0 };
  const http = createHttpServer(system.app, config, {
    onRefusedConnection: (reason) => {
      system.metrics?.httpConnectionsRefused.inc({ reason });
      if (Date.now() - lastLogged[reason] < 60_000) return;
      lastLogged[reason] = Date.now();
      logger.warn(
        {
          reason,
          maxConnections: config.HTTP_MAX_CONNECTIONS,
          maxConnectionsPerAddress: config.HTTP_MAX_CONNECTIONS_PER_ADDRESS,
        },
        'connection refused: over a connection cap',
      );
    },
  });
  try {
    await listen(http.server, config.PORT, config.HOST);
  } catch (error) {
    // Nothing runs without the port: close what was opened (stores, ledger, projections, executor) and say why.
    await system
      .close()
      .catch((closing: unknown) => logger.error({ err: closing }, 'closing after a failed listen failed'));
    throw new ListenError(config.HOST, config.PORT, error as NodeJS.ErrnoException);
  }
  // METRICS_PORT: the scrape on a port of its own (src/metrics), which a failed listen stops like the API's.
  let metricsServer: Server | undefined;
  if (system.metricsApp && config.METRICS_PORT !== undefined) {
    const metricsHost = config.METRICS_HOST ?? config.HOST;
    try {
      metricsServer = await listen(createServer(system.metricsApp), config.METRICS_PORT, metricsHost);
    } catch (error) {
      http.server.close();
      await system
        .close()
        .catch((closing: unknown) => logger.error({ err: closing }, 'closing after a failed listen failed'));
      throw new ListenError(metricsHost, config.METRICS_PORT, error as NodeJS.ErrnoException);
    }
  }
  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    setTimeout(() => {
      logger.error({ signal, timeoutMs: SHUTDOWN_TIMEOUT_MS }, 'shutdown took too long; exiting anyway');
      process.exit(1);
    }, SHUTDOWN_TIMEOUT_MS).unref();
    // The stores close only once the last request has been answered: a request in flight still uses them.
    const drained = http.drain();
    metricsServer?.close();
    metricsServer?.closeIdleConnections();
    logger.info({ signal }, 'shutting down: no new connections; finishing the requests in flight');
    void drained
      .then(() => system.close())
      // Every line is written before the exit: the request log of the last requests included.
      .then(() => flushLogs(logger))
      .then(
        () => process.exit(0),
        (error: unknown) => {
          logger.error({ err: error }, 'shutdown failed');
          process.exit(1);
        },
      );
  };
  // Before the start line: whoever waits for it may signal at once, and a signal without a handler kills outright.
  process.once('SIGINT', () => shutdown('SIGINT'));
  process.once('SIGTERM', () => shutdown('SIGTERM'));

  // The ports it got, which PORT=0 (or METRICS_PORT=0) leaves to the system.
  const { port } = http.server.address() as AddressInfo;
  const metricsAddress = metricsServer?.address();
  const metricsPort = metricsAddress && typeof metricsAddress === 'object' ? metricsAddress.port : undefined;
  logger.info(
    {
      port,
      host: config.HOST,
      dataDir: config.DATA_DIR,
      parts,
      stores: storesInUse(config),
      urls: startUrls(config, parts, port, metricsPort),
      ...(metricsAddress && typeof metricsAddress === 'object'
        ? { metricsPort: metricsAddress.port, metricsHost: metricsAddress.address }
        : {}),
    },
    'wallet-ops started',
  );
  if (demo) process.stdout.write(demoInstructions(demo, baseUrl(config.HOST, port), config.DATA_DIR));
}

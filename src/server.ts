import { createServer, type Server } from 'node:http';
import { loadConfig } from './config.ts';
import { demoInstructions, seedDemo } from './demo.ts';
import { createLogger } from './logger.ts';
import { ALL_PARTS, buildWalletOps, type Part } from './wallet-ops.ts';

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

/** Resolves once the server listens; rejects with the server's error (EADDRINUSE, EACCES…) if it cannot. */
function listen(handler: Parameters<typeof createServer>[1], port: number, host: string): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = createServer(handler);
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
 * once it listens).
 */
export async function serve(parts: readonly Part[] = ALL_PARTS, options: { demo?: boolean } = {}): Promise<void> {
  const config = loadConfig(process.env);
  const logger = createLogger(config.LOG_LEVEL);
  const system = await buildWalletOps(config, logger, () => new Date(), parts);
  let server: Server;
  try {
    server = await listen(system.app, config.PORT, config.HOST);
  } catch (error) {
    // Nothing runs without the port: close what was opened (stores, ledger, projections, executor) and say why.
    await system.close().catch((closing: unknown) => logger.error({ err: closing }, 'closing after a failed listen failed'));
    throw new ListenError(config.HOST, config.PORT, error as NodeJS.ErrnoException);
  }
  // METRICS_PORT: the scrape on a port of its own (src/metrics), which a failed listen stops like the API's.
  let metricsServer: Server | undefined;
  if (system.metricsApp && config.METRICS_PORT !== undefined) {
    const metricsHost = config.METRICS_HOST ?? config.HOST;
    try {
      metricsServer = await listen(system.metricsApp, config.METRICS_PORT, metricsHost);
    } catch (error) {
      server.close();
      await system.close().catch((closing: unknown) => logger.error({ err: closing }, 'closing after a failed listen failed'));
      throw new ListenError(metricsHost, config.METRICS_PORT, error as NodeJS.ErrnoException);
    }
  }
  const metricsAddress = metricsServer?.address();
  logger.info({
    port: config.PORT,
    host: config.HOST,
    dataDir: config.DATA_DIR,
    parts,
    ...(metricsAddress && typeof metricsAddress === 'object' ? { metricsPort: metricsAddress.port, metricsHost: metricsAddress.address } : {}),
  }, 'wallet-ops started');
  if (options.demo) {
    const seed = await seedDemo(system.stores.eventStore, config.ASSET_SCALE);
    process.stdout.write(demoInstructions(seed, `http://${config.HOST === '0.0.0.0' ? '127.0.0.1' : config.HOST}:${config.PORT}`, config.DATA_DIR));
  }

  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    server.close();
    server.closeIdleConnections();
    metricsServer?.close();
    metricsServer?.closeIdleConnections();
    void system.close().then(
      () => process.exit(0),
      (error: unknown) => {
        logger.error({ err: error }, 'shutdown failed');
        process.exit(1);
      },
    );
    setTimeout(() => process.exit(1), SHUTDOWN_TIMEOUT_MS).unref();
  };
  process.once('SIGINT', () => shutdown('SIGINT'));
  process.once('SIGTERM', () => shutdown('SIGTERM'));
}

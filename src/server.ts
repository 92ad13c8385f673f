import type { Server } from 'node:http';
import { loadConfig } from './config.ts';
import { demoInstructions, seedDemo } from './demo.ts';
import { createLogger } from './logger.ts';
import { ALL_PARTS, buildWalletOps, type Part } from './wallet-ops.ts';

/**
 * Runs the chosen parts of wallet-ops in this process until SIGINT or SIGTERM. With an API part it listens
 * on PORT; the projections and the executor need no port but still answer /health and /ready on it.
 */
export async function serve(parts: readonly Part[] = ALL_PARTS, options: { demo?: boolean } = {}): Promise<void> {
  const config = loadConfig(process.env);
  const logger = createLogger(config.LOG_LEVEL);
  const system = await buildWalletOps(config, logger, () => new Date(), parts);
  const server: Server = await new Promise((resolve) => {
    const s = system.app.listen(config.PORT, config.HOST, () => resolve(s));
  });
  logger.info({ port: config.PORT, host: config.HOST, dataDir: config.DATA_DIR, parts }, 'wallet-ops started');
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
    void system.close().then(() => process.exit(0));
    setTimeout(() => process.exit(1), 10_000).unref();
  };
  process.once('SIGINT', () => shutdown('SIGINT'));
  process.once('SIGTERM', () => shutdown('SIGTERM'));
}

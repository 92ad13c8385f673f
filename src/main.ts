import type { Server } from 'node:http';
import { ConfigError, loadConfig } from './config.ts';
import { createLogger } from './logger.ts';
import { buildWalletOps } from './wallet-ops.ts';

/** The composition root: reads the configuration, builds the system, serves, and stops cleanly. */
async function main(): Promise<void> {
  const config = loadConfig(process.env);
  const logger = createLogger(config.LOG_LEVEL);
  const system = await buildWalletOps(config, logger);
  const server: Server = system.app.listen(config.PORT, config.HOST, () => {
    logger.info({ port: config.PORT, host: config.HOST, dataDir: config.DATA_DIR }, 'wallet-ops listening');
  });

  const shutdown = (signal: string) => {
    logger.info({ signal }, 'shutting down');
    server.close(() => void system.close().then(() => process.exit(0)));
    setTimeout(() => process.exit(1), 10_000).unref();
  };
  process.once('SIGINT', () => shutdown('SIGINT'));
  process.once('SIGTERM', () => shutdown('SIGTERM'));
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof ConfigError ? error.message : error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});

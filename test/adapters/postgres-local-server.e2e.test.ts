/**
 * The local PostgreSQL of `wallet-ops postgres` (src/adapters/postgres/local-server.ts) started in this process,
 * where coverage sees it: its settings made once and kept, its database there to use, and its refusals in one line.
 * The command around it (its output, its signals, wallet-ops serving on it) is test/cli/postgres-command.e2e.test.ts.
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import {
  LocalPostgresError,
  startLocalPostgres,
  whyNotStarted,
  type LocalPostgres,
} from '../../src/adapters/postgres/local-server.ts';
import { freePort } from '../support/processes.ts';
import { tempDir } from '../support/temp-dir.ts';

const dir = tempDir('local-pg-');
// As root the server runs as the `postgres` user, which must pass through the folders above its cluster.
chmodSync(dir.path, 0o755);
const running: LocalPostgres[] = [];
afterEach(async () => {
  for (const server of running.splice(0)) await server.stop();
});
afterAll(() => dir.cleanup());

async function query(url: string, sql: string): Promise<unknown[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(sql)).rows;
  } finally {
    await client.end();
  }
}

describe('the local PostgreSQL', () => {
  it('when started in a new folder and again, then it serves the wallet_ops database with the same settings, kept apart from the cluster', async () => {
    const folder = join(dir.path, 'data-postgres');
    const port = await freePort();

    const first = await startLocalPostgres(folder, port);
    running.push(first);

    expect(first.fresh).toBe(true);
    expect(first.url).toBe(`postgres://postgres:${new URL(first.url).password}@127.0.0.1:${port}/wallet_ops`);
    expect(Buffer.from(first.secretsKey, 'base64')).toHaveLength(32);
    expect(first.cluster).toBe(join(folder, 'cluster'));
    expect(await query(first.url, 'SELECT current_database() AS name')).toEqual([{ name: 'wallet_ops' }]);
    // The password beside the key, readable by its owner only; the folder itself open to nobody else.
    expect(readFileSync(join(first.secrets, 'postgres.password'), 'utf8').trim()).toBe(
      decodeURIComponent(new URL(first.url).password),
    );
    expect(statSync(join(first.secrets, 'postgres.password')).mode & 0o077).toBe(0);
    expect(statSync(folder).mode & 0o066).toBe(0);
    await first.stop();
    running.splice(0);

    const again = await startLocalPostgres(folder, port);
    running.push(again);

    expect(again).toMatchObject({ fresh: false, url: first.url, secretsKey: first.secretsKey });
    expect(await query(again.url, "SELECT count(*)::int AS n FROM pg_database WHERE datname = 'wallet_ops'")).toEqual([
      { n: 1 },
    ]);
  }, 120_000);

  it('when its port is taken, then it refuses in one line naming the port, before it makes the folder', async () => {
    const blocker: Server = createServer();
    const port = await freePort();
    await new Promise<void>((resolve) => blocker.listen(port, '127.0.0.1', () => resolve()));
    try {
      const failure = await startLocalPostgres(join(dir.path, 'port-taken'), port).catch((error: unknown) => error);

      expect(failure).toBeInstanceOf(LocalPostgresError);
      expect((failure as Error).message).toBe(
        `port ${port} is in use (another PostgreSQL?): choose another with --port`,
      );
      expect(existsSync(join(dir.path, 'port-taken'))).toBe(false);
    } finally {
      await new Promise<void>((resolve) => blocker.close(() => resolve()));
    }
  });

  it("when its cluster is not one PostgreSQL can start, then it refuses in one line with the server's own reason", async () => {
    const folder = join(dir.path, 'damaged');
    const cluster = join(folder, 'cluster');
    mkdirSync(cluster, { recursive: true });
    // A cluster of another major version, which this server stops at once on (as root, before that, on its owner).
    writeFileSync(join(cluster, 'PG_VERSION'), '9.6\n');
    writeFileSync(join(cluster, 'postgresql.conf'), '');

    const failure = await startLocalPostgres(folder, await freePort()).catch((error: unknown) => error);

    expect(failure).toBeInstanceOf(LocalPostgresError);
    expect((failure as Error).message).toMatch(new RegExp(`^PostgreSQL did not start in ${cluster}: .*FATAL: +\\S`));
    expect((failure as Error).message).not.toContain('\n');
  }, 60_000);
});

// The shapes of the server's output that a real cluster on this machine cannot be made to print as root.
describe('why the local PostgreSQL did not start, in one line', () => {
  it('given error lines among others, when told, then the last two error lines say why, joined on one line', () => {
    const logs = [
      '[STDERR] LOG:  starting PostgreSQL 18.4\n[STDERR] FATAL:  ',
      'database files are incompatible with server\n[STDERR] DETAIL:  The data directory was initialized by 9.6.\n',
    ];

    expect(whyNotStarted(logs, new Error('exited'))).toBe('FATAL:  database files are incompatible with server');
  });

  it('given a server that names no error, when told, then its last two lines are quoted', () => {
    const logs = [
      '[STDERR]postgres: could not access the server configuration file ',
      '"/data/cluster/postgresql.conf": No such file or directory\n',
    ];

    expect(whyNotStarted(logs, new Error('Postgres init script exited with code 2'))).toBe(
      'postgres: could not access the server configuration file "/data/cluster/postgresql.conf": ' +
        'No such file or directory',
    );
  });

  it('given a server that printed nothing, when told, then the package’s own error says why', () => {
    expect(whyNotStarted([], new Error('Postgres init script exited with code 1'))).toBe(
      'Postgres init script exited with code 1',
    );
    expect(whyNotStarted(['\n', '[STDERR] \n'], 'not an Error')).toBe('');
  });
});

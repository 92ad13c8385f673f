import { createHash } from 'node:crypto';
import pg from 'pg';

/**
 * What the PostgreSQL stores share: a bounded pool with a statement timeout on every call, the classification
 * of the server's errors into "worth retrying" and "permanent", and versioned migrations that several
 * processes may run at the same moment.
 */
export interface PostgresConnectionOptions {
  /** postgres://user:password@host:port/database?sslmode=verify-full … (never logged: it may hold the password). */
  url: string;
  /** Most connections this pool opens. */
  poolSize: number;
  /** The server cancels any statement that runs longer (ms); also the client's wait for a connection. */
  statementTimeoutMs: number;
  /** Shown in pg_stat_activity, so that an operator sees which part of the service holds a connection. */
  applicationName: string;
  /** Told of the pool and of every statement's round trip (src/metrics; this layer may not import it). */
  observer?: PoolObserver;
}

/** A pool's connections now: open (busy + idle), idle, callers waiting for one, and the most it opens. */
export interface PoolStats {
  total: number;
  idle: number;
  waiting: number;
  max: number;
}

export interface PoolObserver {
  /** A pool opened, named by its application name; `stats` is read when wanted (a scrape), `closed` once it ends. */
  opened(pool: string, stats: () => PoolStats): { closed(): void };
  /** A statement's round trip (a transaction's statements each), and whether the server or the connection failed it. */
  statement(pool: string, seconds: number, ok: boolean): void;
}

export function openPostgresPool(options: PostgresConnectionOptions): pg.Pool {
  const pool = new pg.Pool({
    connectionString: options.url,
    max: options.poolSize,
    statement_timeout: options.statementTimeoutMs,
    // The client-side bound too: a server that stops answering (a partition) is not a statement the server can cancel.
    query_timeout: options.statementTimeoutMs + 1_000,
    connectionTimeoutMillis: options.statementTimeoutMs,
    idle_in_transaction_session_timeout: options.statementTimeoutMs * 2,
    application_name: options.applicationName,
    keepAlive: true,
  });
  // An idle client's connection that breaks (a failover, a restarted server) is removed from the pool; the
  // error must not crash the process. The next query opens a new connection.
  pool.on('error', () => {});
  // The pool listens for errors only on idle connections: one that breaks while checked out (a transaction
  // between statements when the server restarts or terminates its backend) would emit 'error' to no one, an
  // uncaught exception that ends the process. Its holder learns from its next statement; release drops it.
  pool.on('connect', (client) => client.on('error', () => {}));
  const { observer } = options;
  if (observer) {
    const name = options.applicationName;
    pool.on('connect', (client) => timeStatements(client, (seconds, ok) => observer.statement(name, seconds, ok)));
    const watch = observer.opened(name, () => ({
      total: pool.totalCount,
      idle: pool.idleCount,
      waiting: pool.waitingCount,
      max: options.poolSize,
    }));
    const end = pool.end.bind(pool);
    pool.end = (() => (watch.closed(), end())) as typeof pool.end;
  }
  return pool;
}

/**
 * A statement the server parses and plans once per connection (a named prepared statement) rather than at every call:
 * for the fixed SQL of a store's hot paths, where planning cost the server more than running (the subscriptions'
 * page query: 0.25 ms to plan, 0.07 ms to run). Only for texts from a fixed set: every distinct text stays prepared
 * on each connection it ran on. (A PgBouncer in transaction mode in front needs max_prepared_statements, 1.21 on.)
 */
export function prepared(text: string, values: unknown[]): pg.QueryConfig {
  let name = STATEMENT_NAMES.get(text);
  if (name === undefined)
    STATEMENT_NAMES.set(text, (name = `wallet_ops_${createHash('sha256').update(text).digest('hex').slice(0, 32)}`));
  return { name, text, values };
}
const STATEMENT_NAMES = new Map<string, string>();

/**
 * Times every statement of a connection, whichever way it is called: with a promise (the stores' transactions) or
 * a callback (pool.query). A query submitted as an object (a Submittable such as a cursor) is left untimed.
 */
function timeStatements(client: pg.PoolClient, done: (seconds: number, ok: boolean) => void): void {
  const query = client.query.bind(client) as (...args: unknown[]) => unknown;
  client.query = ((...args: unknown[]) => {
    const started = process.hrtime.bigint();
    const finish = (ok: boolean) => done(Number(process.hrtime.bigint() - started) / 1e9, ok);
    const last = args.length - 1;
    const callback = args[last];
    if (typeof callback === 'function') {
      args[last] = (error: unknown, result: unknown) => {
        finish(!error);
        return (callback as (e: unknown, r: unknown) => unknown)(error, result);
      };
      return query(...args);
    }
    const result = query(...args);
    if (result instanceof Promise)
      result.then(
        () => finish(true),
        () => finish(false),
      );
    return result;
  }) as typeof client.query;
}

/**
 * SQLSTATE classes and codes that say nothing about the request: the connection, the server's state or a
 * conflict with another transaction. Anything else (a constraint, a syntax error, permission denied, a value too
 * long) is permanent: retrying it would loop for ever. Class 25 (invalid transaction state) is the server's state
 * too: 25006 read_only_sql_transaction is what a demoted primary, a standby or `default_transaction_read_only`
 * answers a write (our statements never misuse transactions, so the class says nothing about the request).
 */
const TRANSIENT_CLASSES = ['08', '25', '53', '57', '58', '40'];
const TRANSIENT_CODES = new Set([
  '55P03' /* lock_not_available */,
  '55006' /* object_in_use */,
  'XX000' /* internal_error, seen in failovers */,
]);
/** Node-level errors of a connection that broke or never opened. */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

export function isTransientPostgresError(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const { code, syscall } = error as { code?: unknown; syscall?: unknown };
  if (typeof code === 'string') {
    if (NETWORK_CODES.has(code) || TRANSIENT_CODES.has(code)) return true;
    // A Unix-domain socket (`?host=/run/postgresql`) whose file is not there: a server stopped cleanly removes it, and
    // one that starts makes it again. Only on connect: the same code from reading a certificate file is a mistake.
    if (code === 'ENOENT' && syscall === 'connect') return true;
    if (/^[0-9A-Z]{5}$/.test(code)) return TRANSIENT_CLASSES.includes(code.slice(0, 2));
  }
  // pg's own messages for a connection lost or never acquired (no SQLSTATE).
  return /Connection terminated|timeout exceeded when trying to connect|Query read timeout|connection timeout|Client has encountered a connection error/i.test(
    error.message,
  );
}

export interface Migration {
  version: number;
  /** Statements run in one transaction with the version's record. */
  sql: string;
}

/**
 * Applies the migrations not yet applied to `schemaName`'s history, in version order, each in its own
 * transaction. A transaction-scoped advisory lock serializes processes that start together: the second one
 * waits, then finds the versions recorded and applies nothing. `routines` (CREATE OR REPLACE FUNCTION …) run at
 * every call, after the migrations and under the same lock (two concurrent replacements of one function fail with
 * "tuple concurrently updated"): a function's body is code of this release, not history.
 */
export async function migrate(
  pool: pg.Pool,
  schemaName: string,
  migrations: Migration[],
  routines?: string,
): Promise<void> {
  const client = await pool.connect();
  try {
    // Under a lock too: two concurrent CREATE TABLE IF NOT EXISTS may both miss the table, and the second then fails
    // on the catalog (23505, or 42710 for the table's row type), not with "already exists, skipping".
    await client.query('BEGIN');
    try {
      await client.query("SELECT pg_advisory_xact_lock(hashtext('wallet-ops-migrations'))");
      await client.query(
        'CREATE TABLE IF NOT EXISTS wallet_ops_migrations (store TEXT NOT NULL, version INTEGER NOT NULL, ' +
          'applied_at TIMESTAMPTZ NOT NULL DEFAULT now(), PRIMARY KEY (store, version))',
      );
      await client.query('COMMIT');
    } catch (error) {
      await client.query('ROLLBACK').catch(() => {});
      throw error;
    }
    for (const migration of [...migrations].sort((a, b) => a.version - b.version)) {
      await client.query('BEGIN');
      try {
        await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`wallet-ops-migrations:${schemaName}`]);
        const applied = await client.query('SELECT 1 FROM wallet_ops_migrations WHERE store = $1 AND version = $2', [
          schemaName,
          migration.version,
        ]);
        if (applied.rowCount === 0) {
          await client.query(migration.sql);
          await client.query('INSERT INTO wallet_ops_migrations (store, version) VALUES ($1, $2)', [
            schemaName,
            migration.version,
          ]);
        }
        await client.query('COMMIT');
      } catch (error) {
        await client.query('ROLLBACK').catch(() => {});
        throw error;
      }
    }
    if (routines) {
      await client.query('BEGIN');
      try {
        await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`wallet-ops-migrations:${schemaName}`]);
        await client.query(routines);
        await client.query('COMMIT');
      } catch (error) {
        await client.query('ROLLBACK').catch(() => {});
        throw error;
      }
    }
  } finally {
    client.release();
  }
}

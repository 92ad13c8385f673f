/**
 * What a PostgreSQL database did over a window, for bench:system: top-level statements (pg_stat_statements, which the
 * bench's server preloads), commits (pg_stat_database.xact_commit) and WAL fsyncs of the whole server (pg_stat_io,
 * PostgreSQL 16+: the fsyncs that made commits durable). The last two are the cumulative statistics, which a backend
 * reports at most once a second while busy and ten seconds after it went idle: read them after STATS_SETTLE_MS.
 */
import pg from 'pg';
import { databaseUrl } from '../../test/support/postgres-server.ts';

/** Long enough for every idle backend's pending statistics to be reported (PGSTAT_IDLE_INTERVAL, 10 s). */
export const STATS_SETTLE_MS = 11_000;

export interface Counters {
  statements: number;
  commits: number;
  walFsyncs: number;
  byQuery: Map<string, number>;
}

export class PostgresCounters {
  private readonly client: pg.Client;
  private readonly database: string;

  private constructor(client: pg.Client, database: string) {
    this.client = client;
    this.database = database;
  }

  /** Connects to the server's `postgres` database, where pg_stat_statements is created. */
  static async open(serverUrl: string, databaseOf: string): Promise<PostgresCounters> {
    const client = new pg.Client({ connectionString: databaseUrl(serverUrl, 'postgres') });
    await client.connect();
    await client.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
    return new PostgresCounters(client, new URL(databaseOf).pathname.slice(1));
  }

  async read(): Promise<Counters> {
    await this.client.query('SELECT pg_stat_clear_snapshot()');
    const { rows } = await this.client.query<{ query: string; calls: string }>(
      'SELECT query, calls FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = $1',
      [this.database],
    );
    const byQuery = new Map<string, number>();
    for (const row of rows) byQuery.set(row.query, (byQuery.get(row.query) ?? 0) + Number(row.calls));
    const commits = await this.client.query<{ n: string }>(
      'SELECT xact_commit AS n FROM pg_stat_database WHERE datname = $1',
      [this.database],
    );
    const fsyncs = await this.client.query<{ n: string }>(
      "SELECT coalesce(sum(fsyncs), 0) AS n FROM pg_stat_io WHERE object = 'wal'",
    );
    return {
      statements: [...byQuery.values()].reduce((a, b) => a + b, 0),
      commits: Number(commits.rows[0]?.n ?? 0),
      walFsyncs: Number(fsyncs.rows[0]!.n),
      byQuery,
    };
  }

  close(): Promise<void> {
    return this.client.end();
  }
}

/** after - before, per unit of work; the statements that grew most, for the console. */
export function perUnit(
  before: Counters,
  after: Counters,
  units: number,
): { statements: number; commits: number; walFsyncs: number; top: string[] } {
  const top = [...after.byQuery]
    .map(([query, calls]) => [query, calls - (before.byQuery.get(query) ?? 0)] as const)
    .filter(([, calls]) => calls > 0)
    .sort((a, b) => b[1] - a[1])
    .slice(0, 15)
    .map(([query, calls]) => `${(calls / units).toFixed(2)}  ${query.replace(/\s+/g, ' ').slice(0, 150)}`);
  const per = (n: number) => n / Math.max(units, 1);
  return {
    statements: per(after.statements - before.statements),
    commits: per(after.commits - before.commits),
    walFsyncs: per(after.walFsyncs - before.walFsyncs),
    top,
  };
}

import { openPostgresPool, type PostgresConnectionOptions } from './postgres-pool.ts';

/** PostgreSQL's time, for the clock skew warning: one connection at most, opened when asked. */
export function openPostgresClock(options: Omit<PostgresConnectionOptions, 'poolSize' | 'applicationName'>): {
  now(): Promise<Date>;
  close(): Promise<void>;
} {
  const pool = openPostgresPool({ ...options, poolSize: 1, applicationName: 'wallet-ops clock' });
  return {
    async now() {
      const { rows } = await pool.query<{ now: Date }>('SELECT statement_timestamp() AS now');
      return rows[0]!.now;
    },
    close: () => pool.end(),
  };
}

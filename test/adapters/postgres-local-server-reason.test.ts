/**
 * Why the local PostgreSQL did not start, in one line, from what the server printed
 * (src/adapters/postgres/local-server.ts).
 * The server's own refusals are driven for real in postgres-local-server.e2e.test.ts; these are the shapes of its
 * output that a real cluster on this machine cannot be made to print as root.
 */
import { describe, expect, it } from 'vitest';
import { whyNotStarted } from '../../src/adapters/postgres/local-server.ts';

describe('why the local PostgreSQL did not start', () => {
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

import { describe, expect, it } from 'vitest';
import { StoreCorruptedError } from '../src/ports/store-corrupted.ts';
import { startFailure } from '../src/start-failure.ts';

/** The one line `npm start` prints when the start fails (src/main.ts): the operator's to act on, never a stack. */
const refusal = (message: string, code: string) => Object.assign(new Error(message), { code });

describe('what a failed start prints', () => {
  it.each([
    [
      '28P01',
      'password authentication failed for user "wallet"',
      'cannot start: PostgreSQL refused the login: password authentication failed for user "wallet" (28P01); ' +
        'check the user and password in POSTGRES_URL',
    ],
    [
      '28000',
      'no pg_hba.conf entry for host "10.0.0.7"',
      'cannot start: PostgreSQL refused the login: no pg_hba.conf entry for host "10.0.0.7" (28000); the server ' +
        'refuses this user from this address (pg_hba.conf), or the user does not exist: check POSTGRES_URL',
    ],
    [
      '3D000',
      'database "wallet" does not exist',
      'cannot start: database "wallet" does not exist (3D000); create the database, or correct its name in ' +
        'POSTGRES_URL',
    ],
    [
      'ECONNREFUSED',
      'connect ECONNREFUSED 127.0.0.1:5432',
      'cannot start: connect ECONNREFUSED 127.0.0.1:5432 (ECONNREFUSED); nothing listens there: start the server, ' +
        'or correct the address',
    ],
    [
      'ENOTFOUND',
      'getaddrinfo ENOTFOUND db.internal',
      'cannot start: getaddrinfo ENOTFOUND db.internal (ENOTFOUND); the host name does not resolve: correct the ' +
        'address',
    ],
  ])('when the store refuses with %s, then the line names it and says what to fix', (code, message, line) => {
    expect(startFailure(refusal(message, code))).toBe(line);
  });

  it('when a code has no hint (another login refusal, another errno), then the line names the code and stops', () => {
    expect(startFailure(refusal('role "wallet" is not permitted to log in', '28999'))).toBe(
      'cannot start: PostgreSQL refused the login: role "wallet" is not permitted to log in (28999)',
    );
    expect(startFailure(refusal('read-only file system', 'EROFS'))).toBe('cannot start: read-only file system (EROFS)');
  });

  it('when the store is damaged, then it refuses to start and points to the restore, not to a retry', () => {
    const line = startFailure(new StoreCorruptedError('events', 'database disk image is malformed'));

    expect(line).toMatch(/^refusing to start: .*database disk image is malformed.*\. Restore it from a backup /);
    expect(line).toContain('(docs/operations.md, "Backup and restore")');
    expect(line).not.toContain('\n');
  });

  it("when the server's message spans lines or holds control characters, then the line stays one line", () => {
    const line = startFailure(
      refusal('connection refused\n\tDETAIL:  is the server\u0000 running?\r\n', 'ECONNREFUSED'),
    );

    expect(line).toBe(
      'cannot start: connection refused DETAIL: is the server running? (ECONNREFUSED); nothing listens there: ' +
        'start the server, or correct the address',
    );
  });

  it('when something not an Error is thrown, then it is printed on one line', () => {
    expect(startFailure('the store\nfell over')).toBe('cannot start: the store fell over');
    expect(startFailure(undefined)).toBe('cannot start: undefined');
  });

  it('when an Error without a code is thrown (a fault in our own code), then its stack is printed', () => {
    const bug = new TypeError("Cannot read properties of undefined (reading 'position')");

    expect(startFailure(bug)).toBe(bug.stack);
    expect(startFailure(bug)).toContain('start-failure.test.ts');
  });
});

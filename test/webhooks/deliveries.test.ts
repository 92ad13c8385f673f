import { describe, expect, it } from 'vitest';
import { makerError } from '../../src/webhooks/deliveries.ts';

/** What the delivery log shows makers of an attempt's error: a category, never how internal hosts resolve or answer. */
describe('an attempt error as makers see it', () => {
  it.each([
    'HTTP 500',
    'redirect (302) not followed',
    'timed out',
    'connection failed',
    'TLS handshake failed',
    'host not found',
    'refused: address not allowed',
    'invalid URL',
  ])('when the error is the category "%s", then it is shown as it is', (category) =>
    expect(makerError(category)).toBe(category),
  );

  it.each([
    ['connect ECONNREFUSED 10.0.0.5:8080', 'connection failed'],
    ['socket hang up', 'connection failed'],
    ['timed out after 10000 ms', 'timed out'],
    ['hooks.corp resolves to 10.1.2.3 (private): webhooks go only to public addresses', 'refused: address not allowed'],
    ['hooks.corp does not resolve to any address', 'host not found'],
    ['DNS: getaddrinfo ENOTFOUND hooks.corp', 'host not found'],
    [
      "Hostname/IP does not match certificate's altnames: IP: 10.0.0.5 is not in the cert's list",
      'TLS handshake failed',
    ],
  ])('when an earlier version recorded "%s", then it is shown as "%s"', (recorded, shown) => {
    expect(makerError(recorded)).toBe(shown);
  });

  it('when there was no error, then there is none to show', () => expect(makerError(null)).toBeNull());
});

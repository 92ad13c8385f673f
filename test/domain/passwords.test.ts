import { randomBytes, scryptSync } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_HASH_COST, MIN_PASSWORD_LENGTH, hashPassword, needsRehash, setPasswordHashCost, verifyPassword } from '../../src/domain/passwords.ts';
import { TEST_HASH_COST } from '../support/fast-passwords.ts';

// The production cost here, whatever the rest of the suite runs with.
beforeAll(() => setPasswordHashCost(DEFAULT_HASH_COST));
afterAll(() => setPasswordHashCost(TEST_HASH_COST));

const PASSWORD = 'correct horse battery staple';

describe('passwords', () => {
  it('when a password is hashed, then the stored form is self-describing scrypt and does not contain the password', async () => {
    const stored = await hashPassword(PASSWORD);
    expect(stored).toMatch(/^scrypt\$131072\$8\$1\$[A-Za-z0-9_-]{22}\$[A-Za-z0-9_-]{86}$/);
    expect(stored).not.toContain(PASSWORD);
  });

  it('when the same password is verified against its hash, then it matches', async () => {
    const stored = await hashPassword(PASSWORD);
    await expect(verifyPassword(PASSWORD, stored)).resolves.toBe(true);
  });

  it('when a different password is verified, then it does not match', async () => {
    const stored = await hashPassword(PASSWORD);
    await expect(verifyPassword('correct horse battery stapler', stored)).resolves.toBe(false);
    await expect(verifyPassword('Correct horse battery staple', stored)).resolves.toBe(false);
    await expect(verifyPassword('', stored)).resolves.toBe(false);
  });

  it('when the same password is hashed twice, then the hashes differ (random salt) and both verify', async () => {
    const [first, second] = await Promise.all([hashPassword(PASSWORD), hashPassword(PASSWORD)]);
    expect(first).not.toBe(second);
    expect(first.split('$')[4]).not.toBe(second.split('$')[4]);
    await expect(verifyPassword(PASSWORD, first)).resolves.toBe(true);
    await expect(verifyPassword(PASSWORD, second)).resolves.toBe(true);
  });

  it('when the password is typed in another Unicode normalization form, then it still matches (NFKC)', async () => {
    const stored = await hashPassword('Caf\u00e9-password');
    await expect(verifyPassword('Cafe\u0301-password', stored)).resolves.toBe(true);
  });

  it('when the salt of a stored hash is changed, then the password no longer matches', async () => {
    const stored = await hashPassword(PASSWORD);
    const parts = stored.split('$');
    parts[4] = Buffer.alloc(16, 7).toString('base64url');
    await expect(verifyPassword(PASSWORD, parts.join('$'))).resolves.toBe(false);
  });

  it('when the stored hash is truncated, then the password does not match', async () => {
    const stored = await hashPassword(PASSWORD);
    await expect(verifyPassword(PASSWORD, stored.slice(0, -10))).resolves.toBe(false);
  });

  it.each([
    ['empty', ''],
    ['plain text', 'not a hash'],
    ['another scheme', 'bcrypt$16384$8$1$c2FsdHNhbHRzYWx0c2FsdA$aGFzaA'],
    ['missing the hash', 'scrypt$16384$8$1$c2FsdHNhbHRzYWx0c2FsdA'],
    ['missing the salt', 'scrypt$16384$8$1$$aGFzaA'],
    ['a well-formed hash of another password', 'scrypt$16384$8$1$c2FsdHNhbHRzYWx0c2FsdA$aGFzaGhhc2hoYXNo'],
  ])('when the stored hash is %s, then verification answers false', async (_label, stored) => {
    await expect(verifyPassword(PASSWORD, stored)).resolves.toBe(false);
  });

  it.each([
    ['non-numeric parameters', 'scrypt$abc$8$1$c2FsdHNhbHRzYWx0c2FsdA$aGFzaA'],
    ['a cost that is not a power of two', 'scrypt$3$8$1$c2FsdHNhbHRzYWx0c2FsdA$aGFzaA'],
  ])('when the stored hash has %s, then verification answers false rather than throwing', async (_label, stored) => {
    await expect(verifyPassword(PASSWORD, stored)).resolves.toBe(false);
  });

  describe('the cost, raised to N = 2^17', () => {
    /** A hash as wallet-ops stored it before the cost was raised (N = 2^14). */
    const legacyHash = (password: string) => {
      const salt = randomBytes(16);
      const key = scryptSync(password.normalize('NFKC'), salt, 64, { N: 16384, r: 8, p: 1 });
      return ['scrypt', 16384, 8, 1, salt.toString('base64url'), key.toString('base64url')].join('$');
    };

    it('when a password is hashed now, then it takes N = 2^17, r = 8, p = 1 (128 MiB) and needs no rehash', async () => {
      const stored = await hashPassword(PASSWORD);
      expect(stored.split('$').slice(1, 4)).toEqual(['131072', '8', '1']);
      expect(needsRehash(stored)).toBe(false);
    });

    it('when a hash was stored with the old cost, then it still verifies, and it needs a rehash', async () => {
      const old = legacyHash(PASSWORD);
      await expect(verifyPassword(PASSWORD, old)).resolves.toBe(true);
      await expect(verifyPassword('another password 1', old)).resolves.toBe(false);
      expect(needsRehash(old)).toBe(true);
    });

    it('when a stored hash asks for more memory than the bound (N = 2^20), then it verifies nothing rather than allocating a GiB', async () => {
      await expect(verifyPassword(PASSWORD, 'scrypt$1048576$8$1$c2FsdHNhbHRzYWx0c2FsdA$aGFzaA')).resolves.toBe(false);
    });

    it('when a hash is damaged or of another scheme, then it needs no rehash (there is nothing to upgrade from)', () => {
      expect(needsRehash('not a hash')).toBe(false);
      expect(needsRehash('bcrypt$16384$8$1$c2FsdA$aGFzaA')).toBe(false);
    });
  });

  it('when the minimum password length is read, then it is 10', () => {
    expect(MIN_PASSWORD_LENGTH).toBe(10);
  });
});

import { randomBytes, scryptSync } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  DEFAULT_HASH_COST,
  MIN_PASSWORD_LENGTH,
  hashPassword,
  needsRehash,
  setPasswordHashCost,
  verifyPassword,
} from '../../src/domain/passwords.ts';
import { TEST_HASH_COST } from '../support/fast-passwords.ts';

const PASSWORD = 'correct horse battery staple';

/**
 * The behaviour (matching, salts, normalisation, damaged hashes) does not depend on the cost: it is checked at the
 * suite's cost (test/support/fast-passwords.ts), each hash ~2 ms (N = 2^10). The production cost (~0.7 s a hash) is checked
 * where it is the subject: the stored form, a round trip, and the upgrade from the old cost.
 */
describe('passwords at the production cost', () => {
  beforeAll(() => setPasswordHashCost(DEFAULT_HASH_COST));
  afterAll(() => setPasswordHashCost(TEST_HASH_COST));

  it('when a password is hashed, then the stored form is self-describing scrypt at N = 2^17, r = 8, p = 1 (128 MiB), does not contain the password, verifies, and needs no rehash', async () => {
    const stored = await hashPassword(PASSWORD);
    expect(stored).toMatch(/^scrypt\$131072\$8\$1\$[A-Za-z0-9_-]{22}\$[A-Za-z0-9_-]{86}$/);
    expect(stored).not.toContain(PASSWORD);
    expect(needsRehash(stored)).toBe(false);
    await expect(verifyPassword(PASSWORD, stored)).resolves.toBe(true);
    await expect(verifyPassword('correct horse battery stapler', stored)).resolves.toBe(false);
  });
});

describe('passwords', () => {
  it("when a password is hashed at the suite's cost, then the stored form names that cost", async () => {
    const stored = await hashPassword(PASSWORD);
    expect(stored.split('$').slice(0, 4)).toEqual(['scrypt', String(2 ** TEST_HASH_COST), '8', '1']);
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
    beforeAll(() => setPasswordHashCost(DEFAULT_HASH_COST));
    afterAll(() => setPasswordHashCost(TEST_HASH_COST));

    /** A hash as wallet-ops stored it before the cost was raised (N = 2^14). */
    const legacyHash = (password: string) => {
      const salt = randomBytes(16);
      const key = scryptSync(password.normalize('NFKC'), salt, 64, { N: 16384, r: 8, p: 1 });
      return ['scrypt', 16384, 8, 1, salt.toString('base64url'), key.toString('base64url')].join('$');
    };

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

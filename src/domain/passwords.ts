import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';

// scrypt from node:crypto, parameters stored with the hash so they can be raised without a migration: a hash
// with a lower cost still verifies, and is replaced at the user's next successful login (needsRehash).
// N = 2^17, r = 8 takes 128 MiB and a few hundred milliseconds a hash: the cost OWASP names for scrypt.
export const DEFAULT_HASH_COST = 17;
let PARAMS = { N: 2 ** DEFAULT_HASH_COST, r: 8, p: 1 };

/** The lowest cost a deployment may choose (PASSWORD_HASH_COST): N = 2^14, 16 MiB. */
export const LOWEST_PRODUCTION_HASH_COST = 14;
/** The lowest cost at all, for test runs only (config.ts refuses it outside NODE_ENV=test): N = 2^10, 1 MiB. */
export const LOWEST_TEST_HASH_COST = 10;

/**
 * The cost of new hashes, as log2 of N (PASSWORD_HASH_COST). Production keeps the default; the test suite
 * lowers it (test/support/fast-passwords.ts), as hashing its ~800 test users and logins at 128 MiB each would
 * dominate its run time. Hashes record their own parameters, so any stored hash still verifies.
 */
export function setPasswordHashCost(log2N: number): void {
  if (!Number.isInteger(log2N) || log2N < LOWEST_TEST_HASH_COST || log2N > 20)
    throw new RangeError(`scrypt cost must be ${LOWEST_TEST_HASH_COST}..20 (log2 N), got ${log2N}`);
  PARAMS = { N: 2 ** log2N, r: 8, p: 1 };
}
const KEY_LENGTH = 64;
export const MIN_PASSWORD_LENGTH = 10;
// scrypt needs 128·r·(N + p + 2) bytes, just over 128 MiB for PARAMS. The bound also keeps a damaged stored
// hash with a huge N from allocating gigabytes: it fails instead, and verifies nothing.
const MAX_MEMORY = 256 * 1024 * 1024;

function derive(password: string, salt: Buffer, options: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    scrypt(password.normalize('NFKC'), salt, KEY_LENGTH, { ...options, maxmem: MAX_MEMORY }, (error, key) =>
      error ? reject(error) : resolve(key),
    ),
  );
}

/** `scrypt$N$r$p$salt$hash`, base64url parts. */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await derive(password, salt, PARAMS);
  return ['scrypt', PARAMS.N, PARAMS.r, PARAMS.p, salt.toString('base64url'), key.toString('base64url')].join('$');
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, n, r, p, salt, hash] = stored.split('$');
  if (scheme !== 'scrypt' || !n || !r || !p || !salt || !hash) return false;
  const expected = Buffer.from(hash, 'base64url');
  try {
    const actual = await derive(password, Buffer.from(salt, 'base64url'), { N: Number(n), r: Number(r), p: Number(p) });
    return actual.length === expected.length && timingSafeEqual(actual, expected);
  } catch {
    return false; // a damaged stored hash (impossible parameters) verifies nothing
  }
}

/** Whether a stored scrypt hash was made with a lower cost than today's: then the next login replaces it. */
export function needsRehash(stored: string): boolean {
  const [scheme, n, r, p] = stored.split('$');
  if (scheme !== 'scrypt' || !/^\d+$/.test(n ?? '') || !/^\d+$/.test(r ?? '') || !/^\d+$/.test(p ?? '')) return false;
  return Number(n) < PARAMS.N || Number(r) < PARAMS.r || Number(p) < PARAMS.p;
}

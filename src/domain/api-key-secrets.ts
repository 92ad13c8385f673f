import { hash, randomBytes } from 'node:crypto';

/**
 * An API key as a client sends it: `wo_<live|test>_<keyID>.<secret>` (or, issued before the prefix,
 * `<keyID>.<secret>`). The keyID is public and finds the key in O(1); the secret is 256 random bits, shown once and
 * stored only as its SHA-256. A slow hash (scrypt) protects guessable passwords; a 256-bit random secret cannot be
 * guessed, so a fast hash keeps every request cheap without weakening anything.
 */
const KEY_ID_PATTERN = /^key_[A-Za-z0-9_-]{16}$/;

/**
 * Which deployment issued a key: a fixed prefix on every key issued since issue 44, `wo_live_` or `wo_test_`, so that
 * people tell a production key from a sandbox's at a glance and secret scanners can match a leaked one
 * (`wo_(live|test)_key_[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]{43}`). The prefix is a label, not a credential: the secret is
 * what is checked, a key is only known to the deployment that issued it, and keys issued before it (bare
 * `key_….secret`) keep working.
 */
export const API_KEY_ENVIRONMENTS = ['live', 'test'] as const;
export type ApiKeyEnvironment = (typeof API_KEY_ENVIRONMENTS)[number];
export const apiKeyPrefix = (environment: ApiKeyEnvironment) => `wo_${environment}_`;
/** What a secret scanner can match: an issued key, whole. */
export const API_KEY_PATTERN = /wo_(live|test)_key_[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]{43}/;
const SECRET_PATTERN = /^[A-Za-z0-9_-]{43}$/;

export function newKeyID(): string {
  return `key_${randomBytes(12).toString('base64url')}`;
}

export function isKeyID(value: string): boolean {
  return KEY_ID_PATTERN.test(value);
}

export function newSecret(): string {
  return randomBytes(32).toString('base64url');
}

export function hashSecret(secret: string): string {
  // One-shot, to a hex string: no Hash object and no Buffer per request.
  return hash('sha256', secret, 'hex');
}

/** The key as shown once to its maker: `wo_<environment>_<keyID>.<secret>`. */
export function formatApiKey(keyID: string, secret: string, environment: ApiKeyEnvironment = 'live'): string {
  return `${apiKeyPrefix(environment)}${keyID}.${secret}`;
}

/**
 * Splits a presented key, with or without its prefix; null when it cannot be one of ours (no lookup is made for those).
 */
export function parseApiKey(presented: string): { keyID: string; secret: string } | null {
  // Both prefixes are 8 characters; no pattern is run on the way of every request.
  const bare = presented.startsWith('wo_live_') || presented.startsWith('wo_test_') ? presented.slice(8) : presented;
  const dot = bare.indexOf('.');
  if (dot < 0) return null;
  const keyID = bare.slice(0, dot);
  const secret = bare.slice(dot + 1);
  return KEY_ID_PATTERN.test(keyID) && SECRET_PATTERN.test(secret) ? { keyID, secret } : null;
}

/** Constant-time comparison of a presented secret with the stored hash. */
export function secretMatches(secret: string, storedHashHex: string): boolean {
  return secretMatchesAny(secret, [storedHashHex]);
}

/**
 * Whether the presented secret is the one of any of the stored hashes (a rotation accepts two): hashed once, and
 * compared with every hash, each in constant time, so the answer's timing tells neither which one nor how much matched.
 */
export function secretMatchesAny(secret: string, storedHashesHex: readonly string[]): boolean {
  return matchingSecretIndex(secret, storedHashesHex) >= 0;
}

/** Which of the stored hashes the presented secret is (-1: none), compared as `secretMatchesAny` compares. */
export function matchingSecretIndex(secret: string, storedHashesHex: readonly string[]): number {
  const presented = hashSecret(secret);
  let matched = -1;
  for (let i = 0; i < storedHashesHex.length; i++) {
    const equal = constantTimeEqual(presented, storedHashesHex[i]!.toLowerCase());
    matched = equal && matched < 0 ? i : matched;
  }
  return matched;
}

/**
 * Equal strings, compared in time that depends only on their length (a digest's, which is public): every
 * character is looked at, without a branch on what it holds. Cheaper than two Buffers and timingSafeEqual per request.
 */
function constantTimeEqual(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let difference = 0;
  for (let i = 0; i < a.length; i++) difference |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return difference === 0;
}

import { createHmac, randomInt, timingSafeEqual } from 'node:crypto';
import { invalidInput } from './errors.ts';

/**
 * The individual's one-time cash-out codes (CASH_OUT_CONSENT=individual-code): 8 random digits, which the
 * individual gets in their wallet app and reads out to the agent. An 8-digit code is guessable offline from a
 * plain hash, so it is kept only as an HMAC-SHA256 under the secrets key (SECRETS_KEY, or the embedded
 * key file), bound to the individual's phone: neither the event store nor its backups reveal a live code.
 * Online guessing is bounded by a count of wrong codes per individual (as events on their consent stream, so
 * every process agrees): the MAX_WRONG_CASH_OUT_CODES-th wrong code voids every live code, so a guesser gets at
 * most 5 tries at at most 3 codes of 10^8 before the individual must ask for new ones (a chance of 1.5 in 10^7).
 */
export const CASH_OUT_CODE_DIGITS = 8;
export const CASH_OUT_CODE_TTL_MS = 10 * 60_000;
/** Live (unused, unexpired) codes one individual may hold at once. */
export const MAX_LIVE_CASH_OUT_CODES = 3;
/** Wrong codes presented against an individual's live codes before all of them are void. */
export const MAX_WRONG_CASH_OUT_CODES = 5;

const CODE_PATTERN = /^\d{8}$/;

export function newCashOutCode(): string {
  return String(randomInt(0, 10 ** CASH_OUT_CODE_DIGITS)).padStart(CASH_OUT_CODE_DIGITS, '0');
}

/** A presented code: exactly 8 digits (spaces, which people add when they read it out, are dropped). */
export function cashOutCode(field: string, value: unknown): string {
  const code = typeof value === 'string' ? value.replaceAll(' ', '') : value;
  if (typeof code !== 'string' || !CODE_PATTERN.test(code))
    throw invalidInput(field, `${field} must be the individual's ${CASH_OUT_CODE_DIGITS}-digit cash-out code`);
  return code;
}

export function hashCashOutCode(secretsKey: Buffer, phone: string, code: string): string {
  return createHmac('sha256', secretsKey)
    .update(`wallet-ops cash-out code\u0000${phone}\u0000${code}`, 'utf8')
    .digest('hex');
}

/** Constant-time equality of two hashes (hex); anything malformed is never equal. */
export function sameCodeHash(a: string, b: string): boolean {
  const left = Buffer.from(a, 'hex');
  const right = Buffer.from(b, 'hex');
  return left.length === 32 && right.length === 32 && timingSafeEqual(left, right);
}

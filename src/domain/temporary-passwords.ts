import { randomInt } from 'node:crypto';

/**
 * A one-time temporary password, made when an administrator's approval adds a user or resets a password:
 * 16 characters from an alphabet without look-alikes (no 0/o, 1/l/i), in groups of four so that it can be
 * read out over the phone. About 79 bits of randomness; it works until the user chooses their own password.
 */
const ALPHABET = '23456789abcdefghjkmnpqrstuvwxyz';

export function newTemporaryPassword(): string {
  const chars = Array.from({ length: 16 }, () => ALPHABET[randomInt(ALPHABET.length)]!);
  return [0, 4, 8, 12].map((i) => chars.slice(i, i + 4).join('')).join('-');
}

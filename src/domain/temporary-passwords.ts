import { randomInt } from 'node:crypto';

/**
 * A one-time temporary password, made when an administrator's approval adds a user or resets a password,
 * in split knowledge: it is made of two halves, and no one person ever sees both. The requesting
 * administrator gets the first half, the approving one the second, and each hands theirs to the user, so
 * that logging in as the user takes both administrators (the same two people the four-eyes rule already
 * requires to collude). Each half is 8 characters from an alphabet without look-alikes (no 0/o, 1/l/i), in
 * groups of four so that it can be read out over the phone: about 39.6 bits a half, 79 in all. The password
 * is the first half, a hyphen, the second; it works until the user chooses their own at the first login.
 */
const ALPHABET = '23456789abcdefghjkmnpqrstuvwxyz';

function half(): string {
  const chars = Array.from({ length: 8 }, () => ALPHABET[randomInt(ALPHABET.length)]!);
  return `${chars.slice(0, 4).join('')}-${chars.slice(4).join('')}`;
}

export interface TemporaryPassword {
  first: string;
  second: string;
  /** What the user types: `${first}-${second}`. */
  password: string;
}

export function newTemporaryPassword(): TemporaryPassword {
  const first = half();
  const second = half();
  return { first, second, password: `${first}-${second}` };
}

import { invalidInput } from './errors.ts';

// Control characters (C0, DEL, C1), line and paragraph separators and unpaired surrogates never belong in
// one-line names, labels, memos or reasons.
const FORBIDDEN = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

// Format characters (Cf) change how text shows without showing themselves: bidi embeddings, overrides,
// isolates and marks (U+202A-202E, U+2066-2069, U+200E-200F, U+061C) make "invoice \u202Efdp.exe" read
// "invoice exe.pdf" in the console and in CSV exports; zero-width spaces, word joiners, the BOM, soft
// hyphens, invisible operators and tag characters hide content. Kept: ZWNJ and ZWJ (U+200C, U+200D), which
// Persian, Indic scripts and emoji sequences need, and the prepended concatenation marks (the Arabic number
// sign U+0600 and its kin), which show. Hangul fillers are letters that show as nothing.
const INVISIBLE =
  /(?![\u200c\u200d\u0600-\u0605\u06dd\u070f\u0890\u0891\u08e2\u{110bd}\u{110cd}])\p{Cf}|[\u3164\uffa0]/u;

const codePointOf = (character: string) => `U+${character.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`;

/** A required one-line text: trimmed, NFC-normalized, 1..maxLength characters, none of them a control, invisible or direction-changing one. */
export function requiredText(field: string, input: unknown, maxLength: number): string {
  if (input === undefined || input === null) throw invalidInput(field, `${field} is required`);
  if (typeof input !== 'string') throw invalidInput(field, `${field} must be a string`);
  const value = input.trim().normalize('NFC');
  if (value.length === 0) throw invalidInput(field, `${field} must not be empty`);
  if (value.length > maxLength) throw invalidInput(field, `${field} must be at most ${maxLength} characters`);
  if (FORBIDDEN.test(value)) throw invalidInput(field, `${field} must not contain control characters`);
  const invisible = INVISIBLE.exec(value);
  if (invisible) {
    throw invalidInput(field, `${field} must not contain invisible or direction-changing characters (${codePointOf(invisible[0])} at character ${[...value.slice(0, invisible.index)].length + 1})`);
  }
  return value;
}

/** Short codes are positive integers of up to 9 digits, so they fit the contract's integer fields exactly. */
export function shortCode(field: string, input: unknown): string {
  const value = typeof input === 'number' && Number.isSafeInteger(input) ? String(input) : input;
  if (typeof value !== 'string' || !/^[1-9][0-9]{0,8}$/.test(value)) {
    throw invalidInput(field, `${field} must be a number of 1 to 9 digits, not starting with 0`);
  }
  return value;
}

/** Emails are compared case-insensitively: stored lower-cased. A light syntax check; delivery proves the rest. */
export function email(field: string, input: unknown): string {
  const value = requiredText(field, input, 254).toLowerCase();
  if (!/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(value)) throw invalidInput(field, `${field} is not an email address`);
  return value;
}

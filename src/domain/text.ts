import { invalidInput } from './errors.ts';

// Control characters (C0, DEL, C1) and unpaired surrogates never belong in names, labels or reasons.
const FORBIDDEN = /[\u0000-\u001f\u007f-\u009f]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** A required one-line text: trimmed, NFC-normalized, 1..maxLength characters. */
export function requiredText(field: string, input: unknown, maxLength: number): string {
  if (input === undefined || input === null) throw invalidInput(field, `${field} is required`);
  if (typeof input !== 'string') throw invalidInput(field, `${field} must be a string`);
  const value = input.trim().normalize('NFC');
  if (value.length === 0) throw invalidInput(field, `${field} must not be empty`);
  if (value.length > maxLength) throw invalidInput(field, `${field} must be at most ${maxLength} characters`);
  if (FORBIDDEN.test(value)) throw invalidInput(field, `${field} must not contain control characters`);
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

import { parsePhoneNumberFromString } from 'libphonenumber-js/max';
import { invalidInput } from './errors.ts';

/**
 * Phones are accepted in international format, with or without spaces ("+234 8123456781") and stored in
 * E.164 ("+2348123456781"). libphonenumber's full metadata checks the number is valid for its country.
 */
export function normalizePhone(field: string, input: unknown): string {
  if (typeof input !== 'string' || input.length > 40) throw invalidInput(field, `${field} must be a phone number in international format, such as "+2348123456781"`);
  const trimmed = input.trim();
  if (!trimmed.startsWith('+')) throw invalidInput(field, `${field} must be in international format, starting with + and the country code`);
  // Only digits and the usual separators: the library would otherwise pull a number out of longer text.
  if (!/^\+[0-9][0-9 ()\-.]*$/.test(trimmed)) throw invalidInput(field, `${field} may contain only digits, spaces, dots, dashes and parentheses after the +`);
  const parsed = parsePhoneNumberFromString(trimmed);
  if (!parsed || !parsed.isValid()) throw invalidInput(field, `${field} is not a valid phone number`);
  return parsed.number;
}

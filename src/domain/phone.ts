import { parsePhoneNumberFromString } from 'libphonenumber-js/max';
import { invalidInput } from './errors.ts';
import { refuseControlCharacters } from './text.ts';

/**
 * Phones are accepted in international format, with or without spaces ("+234 8123456781") and stored in
 * E.164 ("+2348123456781"). libphonenumber's full metadata checks the number is valid for its country.
 */
export function normalizePhone(field: string, input: unknown): string {
  const known = typeof input === 'string' ? recentlyValid.get(input) : undefined;
  if (known !== undefined) return known;
  if (typeof input !== 'string' || input.length > 40)
    throw invalidInput(field, `${field} must be a phone number in international format, such as "+2348123456781"`);
  // A tab or a line break at the ends is trimmed as whitespace; no other control passes (trim() would drop \v and \f).
  const trimmed = refuseControlCharacters(field, input, 'trimmed').trim();
  if (!trimmed.startsWith('+'))
    throw invalidInput(field, `${field} must be in international format, starting with + and the country code`);
  // Only digits and the usual separators: the library would otherwise pull a number out of longer text.
  if (!/^\+[0-9][0-9 ()\-.]*$/.test(trimmed))
    throw invalidInput(field, `${field} may contain only digits, spaces, dots, dashes and parentheses after the +`);
  const parsed = parsePhoneNumberFromString(trimmed);
  if (!parsed || !parsed.isValid()) throw invalidInput(field, `${field} is not a valid phone number`);
  remember(input, parsed.number);
  return parsed.number;
}

/**
 * Inputs found valid lately, with their E.164 form. Parsing with the full metadata is one of the larger costs
 * of a create (bench:profile), and a distributor pays the same few thousand customers over and over. Only valid
 * numbers are kept, at most RECENT of them, the oldest leaving first.
 */
const RECENT = 10_000;
const recentlyValid = new Map<string, string>();

function remember(input: string, e164: string): void {
  if (recentlyValid.size >= RECENT) recentlyValid.delete(recentlyValid.keys().next().value as string);
  recentlyValid.set(input, e164);
}

import type { z } from 'zod';
import { invalidInput } from './errors.ts';

/**
 * The text rules, in one place: what a one-line text (a name, label, memo, reason) and what a search, filter or any
 * other query value may hold. Every entry point applies them before anything reaches a store: the API's schemas, the
 * console's forms and filters (src/console/input-guard.ts), the CLI's arguments (src/cli/program.ts).
 */

// Control characters: C0 (U+0000-001F), DEL and C1 (U+0080-009F). C1 too: no keyboard types them; they arrive in
// text mis-decoded as Latin-1, and U+009B opens a terminal escape sequence as ESC [ does. PostgreSQL cannot store
// U+0000 at all (SQLite can): refusing them all is what makes every store answer alike.
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
// Tab, line feed and carriage return are what a pasted line carries at its ends: there they are whitespace, which a
// text's rule trims; inside a value, and every other control anywhere (trim() would also take \v and \f), refused.
const CONTROL_BUT_WHITESPACE = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]/;

// Line and paragraph separators and unpaired surrogates never belong in one-line names, labels, memos or reasons.
const FORBIDDEN = /[\u2028\u2029]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

// Characters that change how text shows without showing themselves. The format characters (Cf): bidi embeddings,
// overrides, isolates and marks (U+202A-202E, U+2066-2069, U+200E-200F, U+061C) make "invoice \u202Efdp.exe" read
// "invoice exe.pdf" in the console and in CSV exports; zero-width spaces, word joiners, the BOM, soft hyphens,
// invisible operators and tag characters hide content. And Unicode's default-ignorable code points (\p{DI}), which
// a renderer shows as nothing: the Hangul fillers (U+115F, U+1160, U+3164, U+FFA0), the combining grapheme joiner
// (U+034F), the Khmer inherent vowels, the variation selectors (U+FE00-FE0F, U+E0100-E01EF: runs of them after one
// letter can carry a whole hidden message). Plus the braille blank (U+2800), a symbol that shows as a space.
// Kept, because scripts need them and they show: ZWNJ and ZWJ (U+200C, U+200D: Persian, Indic scripts, emoji
// sequences); the prepended concatenation marks (the Arabic number sign U+0600 and its kin); a Mongolian free
// variation selector right after a Mongolian letter; and one emoji or text presentation selector (U+FE0F, U+FE0E)
// right after a pictograph ("\u2764\uFE0F") or in a keycap ("1\uFE0F\u20E3").
const INVISIBLE = new RegExp(
  // eslint-disable-next-line no-misleading-character-class -- each joiner and selector is listed alone, on purpose
  [
    '(?![\\u200c\\u200d\\u0600-\\u0605\\u06dd\\u070f\\u0890\\u0891\\u08e2\\u{110bd}\\u{110cd}' +
      '\\u180b-\\u180d\\u180f\\ufe0e\\ufe0f])[\\p{Cf}\\p{DI}]',
    '\\u2800',
    '(?<![\\u1820-\\u1878\\u1880-\\u18aa])[\\u180b-\\u180d\\u180f]',
    '(?<!\\p{Extended_Pictographic})(?<![0-9#*])[\\ufe0e\\ufe0f]',
    '(?<=[0-9#*])(?:\\ufe0e|\\ufe0f(?!\\u20e3))',
  ].join('|'),
  'u',
);

/** Where a refused character is: its code point and its position, counted in characters from 1. */
const located = (text: string, character: string, index: number) =>
  `${codePointOf(character)} at character ${[...text.slice(0, index)].length + 1}`;

const codePointOf = (character: string) => `U+${character.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`;

/**
 * Where a text's control characters may be: nowhere (`refused`: a query value, an address), or only tab, line feed
 * and carriage return among the whitespace at its ends (`trimmed`: a text field, whose rule trims them).
 */
export type ControlRule = 'refused' | 'trimmed';

/** The first control character of a text (C0, DEL, C1) that its rule refuses, as "U+0000 at character 3", or null. */
export function controlCharacterIn(text: string, rule: ControlRule = 'refused'): string | null {
  if (rule === 'refused') {
    const match = CONTROL.exec(text);
    return match ? located(text, match[0], match.index) : null;
  }
  const anywhere = CONTROL_BUT_WHITESPACE.exec(text);
  if (anywhere) return located(text, anywhere[0], anywhere.index);
  const start = text.length - text.trimStart().length;
  const inside = CONTROL.exec(text.trim());
  return inside ? located(text, inside[0], start + inside.index) : null;
}

/** Refuses a value that holds a control character its rule refuses, naming the field, the character and where. */
export function refuseControlCharacters(field: string, text: string, rule: ControlRule = 'refused'): string {
  const found = controlCharacterIn(text, rule);
  if (found) throw invalidInput(field, `${field} must not contain control characters (${found})`);
  return text;
}

/** JSON Schema's pattern of a value without control characters, for the OpenAPI document. */
export const NO_CONTROL_CHARACTERS_PATTERN = '^[^\\u0000-\\u001f\\u007f-\\u009f]*$';

/** The same rule as a zod refinement, for a schema's string: one issue naming the field and the character. */
export const withoutControlCharacters = (field: string) => (value: string, ctx: z.RefinementCtx) => {
  const found = controlCharacterIn(value);
  if (found) ctx.addIssue({ code: 'custom', message: `${field} must not contain control characters (${found})` });
};

/**
 * A required one-line text: trimmed, NFC-normalized, 1..maxLength characters, none of them a control, invisible or
 * direction-changing one.
 */
export function requiredText(field: string, input: unknown, maxLength: number): string {
  if (input === undefined || input === null) throw invalidInput(field, `${field} is required`);
  if (typeof input !== 'string') throw invalidInput(field, `${field} must be a string`);
  refuseControlCharacters(field, input, 'trimmed');
  const value = input.trim().normalize('NFC');
  if (value.length === 0) throw invalidInput(field, `${field} must not be empty`);
  if (value.length > maxLength) throw invalidInput(field, `${field} must be at most ${maxLength} characters`);
  if (FORBIDDEN.test(value)) throw invalidInput(field, `${field} must not contain control characters`);
  const invisible = INVISIBLE.exec(value);
  if (invisible)
    throw invalidInput(
      field,
      `${field} must not contain invisible or direction-changing characters ` +
        `(${located(value, invisible[0], invisible.index)})`,
    );
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

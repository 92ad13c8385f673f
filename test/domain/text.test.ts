import { describe, expect, it } from 'vitest';
import { controlCharacterIn, email, refuseControlCharacters, requiredText, shortCode } from '../../src/domain/text.ts';

const refusedNaming = (field: string) => expect.objectContaining({ name: 'DomainError', code: 'INVALID_INPUT', field });

describe('requiredText', () => {
  it('says "is required" only for an absent value, and "must be a string" for another type (issue 18)', () => {
    expect(() => requiredText('label', undefined, 10)).toThrow('label is required');
    expect(() => requiredText('label', null, 10)).toThrow('label is required');
    for (const value of [5, true, {}, []])
      expect(() => requiredText('label', value, 10)).toThrow('label must be a string');
  });

  it('when the text has surrounding whitespace, then it is trimmed', () => {
    expect(requiredText('name', '  Acme Distribution \n', 100)).toBe('Acme Distribution');
  });

  it('when the text is in decomposed form, then it is NFC-normalized', () => {
    const decomposed = 'Cafe\u0301';
    const result = requiredText('name', decomposed, 100);
    expect(result).toBe('Caf\u00e9');
    expect(result).toHaveLength(4);
  });

  it('when the text is exactly the maximum length, then it is accepted', () => {
    expect(requiredText('label', 'a'.repeat(100), 100)).toBe('a'.repeat(100));
  });

  it('when the text is one character over the maximum length, then it is refused naming the field', () => {
    expect(() => requiredText('label', 'a'.repeat(101), 100)).toThrow(refusedNaming('label'));
  });

  it('when the text is over the maximum only because of surrounding spaces, then it is accepted', () => {
    expect(requiredText('label', `  ${'a'.repeat(10)}  `, 10)).toBe('a'.repeat(10));
  });

  it('when the text is over the maximum only in decomposed form, then it is measured after NFC and accepted', () => {
    expect(requiredText('label', 'e\u0301e\u0301', 2)).toBe('\u00e9\u00e9');
  });

  it('when the text contains a valid surrogate pair (an emoji), then it is accepted', () => {
    expect(requiredText('name', 'Shop \u{1F600}', 100)).toBe('Shop \u{1F600}');
  });

  it('when the text contains non-Latin letters, then it is accepted unchanged', () => {
    expect(requiredText('name', 'Ọjà Ìbàdàn 商店', 100)).toBe('Ọjà Ìbàdàn 商店');
  });

  it.each([
    ['empty', ''],
    ['only spaces', '   '],
    ['only whitespace of several kinds', ' \t\n\r '],
  ])('when the text is %s, then it is refused naming the field', (_label, input) => {
    expect(() => requiredText('name', input, 100)).toThrow(refusedNaming('name'));
  });

  it.each([
    ['a NUL', 'a\u0000b'],
    ['a tab inside', 'a\tb'],
    ['a newline inside', 'line one\nline two'],
    ['a carriage return inside', 'a\rb'],
    ['an escape', 'a\u001b[31mb'],
    ['a DEL', 'a\u007fb'],
    ['a C1 control', 'a\u0085b'],
    ['a trailing C1 control (not trimmed)', 'ab\u009f'],
    ['a lone high surrogate', 'a\ud800b'],
    ['a lone high surrogate at the end', 'ab\ud83d'],
    ['a lone low surrogate', 'a\udc00b'],
    ['a lone low surrogate at the start', '\ude00ab'],
    ['two high surrogates', '\ud83d\ud83d'],
  ])('when the text contains %s, then it is refused naming the field', (_label, input) => {
    expect(() => requiredText('reason', input, 100)).toThrow(refusedNaming('reason'));
  });

  it.each([
    ['a line separator U+2028', 'line one\u2028line two'],
    ['a paragraph separator U+2029', 'a\u2029b'],
  ])('when the text contains %s (a line break), then it is refused naming the field', (_label, input) => {
    expect(() => requiredText('memo', input, 100)).toThrow(refusedNaming('memo'));
  });
});

/**
 * Text that displays other than it holds: a memo "invoice \u202Efdp.exe" shows as "invoice exe.pdf" in the console and
 * in CSV exports; zero-width and tag characters hide content. Refused in every memo, label, name and reason;
 * the joiners that scripts need (ZWNJ in Persian, ZWJ in emoji and Indic scripts) are kept.
 */
describe('requiredText: invisible and direction-changing characters', () => {
  it.each([
    ['a right-to-left override U+202E', 'invoice \u202Efdp.exe', 'U+202E'],
    ['a left-to-right embedding U+202A', '\u202Aabc', 'U+202A'],
    ['a right-to-left embedding U+202B', 'a\u202Bb', 'U+202B'],
    ['a pop directional formatting U+202C', 'a\u202Cb', 'U+202C'],
    ['a left-to-right override U+202D', 'a\u202Db', 'U+202D'],
    ['a left-to-right isolate U+2066', 'a\u2066b', 'U+2066'],
    ['a right-to-left isolate U+2067', 'a\u2067b', 'U+2067'],
    ['a first-strong isolate U+2068', 'a\u2068b', 'U+2068'],
    ['a pop directional isolate U+2069', 'a\u2069b', 'U+2069'],
    ['a left-to-right mark U+200E', 'a\u200Eb', 'U+200E'],
    ['a right-to-left mark U+200F', 'a\u200Fb', 'U+200F'],
    ['an Arabic letter mark U+061C', 'a\u061Cb', 'U+061C'],
    ['a zero-width space U+200B', 'Ac\u200Bme', 'U+200B'],
    ['a word joiner U+2060', 'a\u2060b', 'U+2060'],
    ['an invisible times U+2062', 'a\u2062b', 'U+2062'],
    ['a function application U+2061', 'a\u2061b', 'U+2061'],
    ['an invisible plus U+2064', 'a\u2064b', 'U+2064'],
    ['a byte order mark inside U+FEFF', 'a\uFEFFb', 'U+FEFF'],
    ['a soft hyphen U+00AD', 'pay\u00ADpal', 'U+00AD'],
    ['a Mongolian vowel separator U+180E', 'a\u180Eb', 'U+180E'],
    ['a tag character U+E0041', 'ok\u{E0041}\u{E0042}', 'U+E0041'],
    ['the language tag U+E0001', 'ok\u{E0001}', 'U+E0001'],
    ['an interlinear annotation anchor U+FFF9', 'a\uFFF9b', 'U+FFF9'],
    ['a Hangul filler U+3164 (shows as nothing)', '\u3164', 'U+3164'],
  ])('when the text contains %s, then it is refused naming the field and the character', (_label, input, codePoint) => {
    expect(() => requiredText('memo', input, 100)).toThrow(refusedNaming('memo'));
    expect(() => requiredText('memo', input, 100)).toThrow(
      `memo must not contain invisible or direction-changing characters (${codePoint}`,
    );
  });

  it('when a Persian name holds a zero-width non-joiner (U+200C), then it is accepted unchanged', () => {
    expect(requiredText('name', 'فروشگاه می\u200Cخواهم', 100)).toBe('فروشگاه می\u200Cخواهم');
  });

  it('when the text holds a zero-width joiner (U+200D) in an emoji sequence or in Devanagari, then it is accepted unchanged', () => {
    expect(requiredText('name', 'Family shop \u{1F468}\u200D\u{1F469}\u200D\u{1F467}', 100)).toBe(
      'Family shop \u{1F468}\u200D\u{1F469}\u200D\u{1F467}',
    );
    expect(requiredText('name', 'क्\u200Dष', 100)).toBe('क्\u200Dष');
  });

  it('when the text holds an emoji with a variation selector, Arabic or Hebrew letters, then it is accepted (right-to-left scripts need no control characters)', () => {
    expect(requiredText('memo', 'thanks \u2764\uFE0F', 100)).toBe('thanks \u2764\uFE0F');
    expect(requiredText('name', 'متجر النور', 100)).toBe('متجر النور');
    expect(requiredText('name', 'חנות', 100)).toBe('חנות');
  });

  it('when the text holds an Arabic number sign (U+0600, a visible mark), then it is accepted', () => {
    expect(requiredText('memo', 'invoice \u0600\u0661\u0662', 100)).toBe('invoice \u0600\u0661\u0662');
  });
});

/** Every C0 control, DEL and every C1 control, by code point. */
const C0 = Array.from({ length: 0x20 }, (_, i) => i);
const C1 = Array.from({ length: 0x20 }, (_, i) => 0x80 + i);
const CONTROLS = [...C0, 0x7f, ...C1];
const hex = (codePoint: number) => `U+${codePoint.toString(16).toUpperCase().padStart(4, '0')}`;
const WHITESPACE = new Set([0x09, 0x0a, 0x0d]);

describe('requiredText: control characters (issue 40)', () => {
  it.each(CONTROLS.map((c) => [hex(c), c]))(
    'when the text holds %s inside, then it is refused naming the field, the character and where',
    (name, c) => {
      expect(() => requiredText('memo', `ab${String.fromCodePoint(c as number)}cd`, 100)).toThrow(
        refusedNaming('memo'),
      );
      expect(() => requiredText('memo', `ab${String.fromCodePoint(c as number)}cd`, 100)).toThrow(
        `memo must not contain control characters (${name} at character 3)`,
      );
    },
  );

  it.each(CONTROLS.filter((c) => !WHITESPACE.has(c)).map((c) => [hex(c), c]))(
    'when the text starts or ends with %s (not a tab or a line break), then it is refused, not trimmed',
    (_name, c) => {
      const control = String.fromCodePoint(c as number);
      expect(() => requiredText('reason', `${control}abc`, 100)).toThrow(refusedNaming('reason'));
      expect(() => requiredText('reason', `abc${control}`, 100)).toThrow(refusedNaming('reason'));
    },
  );

  it('when a pasted text starts or ends with tabs and line breaks, then they are trimmed as whitespace', () => {
    expect(requiredText('reason', '\t Wrong amount\r\n', 100)).toBe('Wrong amount');
  });

  it('when the text is only a NUL, then it is refused as a control character, not as empty', () => {
    expect(() => requiredText('label', '\u0000', 100)).toThrow(
      'label must not contain control characters (U+0000 at character 1)',
    );
  });
});

describe('controlCharacterIn and refuseControlCharacters: query values and form fields (issue 40)', () => {
  it.each(CONTROLS.map((c) => [hex(c), c]))(
    'when a search holds %s, then it is refused naming the field and the character',
    (name, c) => {
      expect(controlCharacterIn(`x${String.fromCodePoint(c as number)}`)).toBe(`${name} at character 2`);
      expect(() => refuseControlCharacters('search', `x${String.fromCodePoint(c as number)}`)).toThrow(
        refusedNaming('search'),
      );
      expect(() => refuseControlCharacters('q', `${String.fromCodePoint(c as number)}`)).toThrow(
        `q must not contain control characters (${name} at character 1)`,
      );
    },
  );

  it.each([
    ['a phone fragment', '+234 812'],
    ['letters and spaces', 'school fees '],
    ['an emoji and Yoruba', 'ọjà \u{1F600}'],
    ['a zero-width space (not a control: a search finds nothing with it)', 'a\u200Bb'],
    ['the first character after the C1 controls (NBSP)', 'a\u00A0b'],
    ['empty', ''],
  ])('when a search is %s, then it is accepted unchanged', (_label, input) => {
    expect(refuseControlCharacters('search', input)).toBe(input);
    expect(controlCharacterIn(input)).toBeNull();
  });

  it('when a form value is trimmed, then tabs and line breaks pass at its ends only, and every other control is found anywhere', () => {
    expect(controlCharacterIn(' \t line one \r\n', 'trimmed')).toBeNull();
    expect(controlCharacterIn('\tline one\r\nline two\n', 'trimmed')).toBe('U+000D at character 10');
    expect(controlCharacterIn('\tline one\r\n')).toBe('U+0009 at character 1');
    for (const c of CONTROLS.filter((c) => !WHITESPACE.has(c))) {
      expect(controlCharacterIn(`ab${String.fromCodePoint(c)}`, 'trimmed')).toBe(`${hex(c)} at character 3`);
      expect(controlCharacterIn(`${String.fromCodePoint(c)} ab`, 'trimmed')).toBe(`${hex(c)} at character 1`);
    }
  });

  it('when the control follows an emoji, then its position is counted in characters, not UTF-16 units', () => {
    expect(() => refuseControlCharacters('name', '\u{1F600}\u{1F600}\u0007')).toThrow(
      'name must not contain control characters (U+0007 at character 3)',
    );
  });
});

/**
 * Characters that show as nothing (issue 40): Hangul fillers, the combining grapheme joiner, the braille blank,
 * variation selectors outside an emoji. A name "Acme\uFE0F" looks exactly like "Acme"; a run of variation
 * selectors after one letter can carry a hidden message.
 */
describe('requiredText: characters that show as nothing', () => {
  it.each([
    ['a Hangul choseong filler U+115F', 'Ac\u115Fme', 'U+115F'],
    ['a Hangul jungseong filler U+1160', 'Acme\u1160', 'U+1160'],
    ['a Hangul filler U+3164', 'Ac\u3164me', 'U+3164'],
    ['a halfwidth Hangul filler U+FFA0', '\uFFA0Acme', 'U+FFA0'],
    ['a braille blank U+2800', 'Acme\u2800Ltd', 'U+2800'],
    ['a braille blank alone', '\u2800', 'U+2800'],
    ['a combining grapheme joiner U+034F', 'Ac\u034Fme', 'U+034F'],
    ['an emoji presentation selector U+FE0F after a letter', 'Acme\uFE0F', 'U+FE0F'],
    ['an emoji presentation selector alone', '\uFE0F', 'U+FE0F'],
    ['a text presentation selector U+FE0E after a letter', 'Acme\uFE0E', 'U+FE0E'],
    ['two presentation selectors after an emoji', 'thanks \u2764\uFE0F\uFE0F', 'U+FE0F'],
    ['a presentation selector after a digit, outside a keycap', 'room 1\uFE0F', 'U+FE0F'],
    ['a variation selector U+FE00', 'a\uFE00b', 'U+FE00'],
    ['a variation selector U+FE0D after an emoji', '\u2764\uFE0D', 'U+FE0D'],
    ['an ideographic variation selector U+E0100', '\u845B\u{E0100}', 'U+E0100'],
    ['the last variation selector U+E01EF', 'a\u{E01EF}', 'U+E01EF'],
    ['a hidden message in variation selectors after an emoji', '\u{1F600}\u{E0148}\u{E0149}', 'U+E0148'],
    ['a Khmer inherent vowel U+17B4', 'a\u17B4b', 'U+17B4'],
    ['a Mongolian free variation selector after a Latin letter', 'a\u180Bb', 'U+180B'],
  ])('when the text contains %s, then it is refused naming the field and the character', (_label, input, codePoint) => {
    expect(() => requiredText('name', input, 100)).toThrow(refusedNaming('name'));
    expect(() => requiredText('name', input, 100)).toThrow(
      `name must not contain invisible or direction-changing characters (${codePoint} at character`,
    );
  });

  it.each([
    ['a heart with its emoji presentation selector', 'thanks \u2764\uFE0F'],
    ['a copyright sign with its text presentation selector', '\u00A9\uFE0E 2026'],
    ['a keycap digit', 'press 1\uFE0F\u20E3'],
    ['a keycap hash', '#\uFE0F\u20E3'],
    ['a rainbow flag (a selector inside a ZWJ sequence)', '\u{1F3F3}\uFE0F\u200D\u{1F308}'],
    ['a Mongolian letter with its free variation selector', '\u1820\u180B'],
    ['Korean syllables (no fillers)', '\uD55C\uAD6D \uC0C1\uC810'],
    ['braille letters (not the blank)', '\u2801\u2803'],
  ])('when the text holds %s, then it is accepted unchanged', (_label, input) => {
    expect(requiredText('name', input, 100)).toBe(input.normalize('NFC'));
  });
});

describe('requiredText: other inputs', () => {
  it.each([
    ['a number', 42],
    ['null', null],
    ['undefined', undefined],
    ['an array', ['a']],
  ])('when the input is %s rather than a string, then it is refused naming the field', (_label, input) => {
    expect(() => requiredText('name', input, 100)).toThrow(refusedNaming('name'));
  });
});

describe('shortCode', () => {
  it.each([
    ['1', '1'],
    ['123456789', '123456789'],
    ['900100', '900100'],
  ])('when the short code is "%s", then it is accepted as "%s"', (input, expected) => {
    expect(shortCode('shortCode', input)).toBe(expected);
  });

  it('when the short code is the number 42, then it is accepted as the string "42"', () => {
    expect(shortCode('shortCode', 42)).toBe('42');
  });

  it('when the short code is the largest 9-digit number, then it is accepted', () => {
    expect(shortCode('shortCode', 999_999_999)).toBe('999999999');
  });

  it.each([
    ['with a leading zero', '0123'],
    ['zero', '0'],
    ['ten digits', '1234567890'],
    ['with a letter', '12a'],
    ['empty', ''],
    ['with spaces', ' 123'],
    ['negative', '-1'],
    ['signed positive', '+1'],
    ['with a decimal point', '12.0'],
    ['in exponent notation', '1e5'],
    ['in Arabic-Indic digits', '١٢٣'],
  ])('when the short code is %s, then it is refused naming the field', (_label, input) => {
    expect(() => shortCode('shortCode', input)).toThrow(refusedNaming('shortCode'));
  });

  it.each([
    ['a negative number', -1],
    ['zero', 0],
    ['a ten-digit number', 1_234_567_890],
    ['a fraction', 1.5],
    ['NaN', Number.NaN],
    ['Infinity', Number.POSITIVE_INFINITY],
    ['an unsafe integer', 2 ** 60],
    ['null', null],
    ['undefined', undefined],
    ['a boolean', true],
  ])('when the short code is %s, then it is refused naming the field', (_label, input) => {
    expect(() => shortCode('shortCode', input)).toThrow(refusedNaming('shortCode'));
  });
});

describe('email', () => {
  it('when the email has upper-case letters and surrounding spaces, then it is stored trimmed and lower-cased', () => {
    expect(email('email', '  Ada.Lovelace@Example.COM ')).toBe('ada.lovelace@example.com');
  });

  it('when the email has a plus tag and subdomains, then it is accepted', () => {
    expect(email('email', 'ops+alerts@mail.wallet.example.ng')).toBe('ops+alerts@mail.wallet.example.ng');
  });

  it.each([
    ['no at sign', 'ada.example.com'],
    ['no domain dot', 'ada@example'],
    ['nothing before the at sign', '@example.com'],
    ['two at signs', 'ada@@example.com'],
    ['a space inside', 'ada lovelace@example.com'],
    ['a trailing dot only', 'ada@example.'],
    ['empty', ''],
    ['a newline inside', 'ada@exa\nmple.com'],
    ['more than 254 characters', `${'a'.repeat(250)}@example.com`],
  ])('when the email has %s, then it is refused naming the field', (_label, input) => {
    expect(() => email('email', input)).toThrow(refusedNaming('email'));
  });

  it('when the email is not a string, then it is refused naming the field', () => {
    expect(() => email('email', 42)).toThrow(refusedNaming('email'));
    expect(() => email('email', null)).toThrow(refusedNaming('email'));
  });
});

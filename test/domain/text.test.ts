import { describe, expect, it } from 'vitest';
import { email, requiredText, shortCode } from '../../src/domain/text.ts';

const refusedNaming = (field: string) => expect.objectContaining({ name: 'DomainError', code: 'INVALID_INPUT', field });

describe('requiredText', () => {
  it('says "is required" only for an absent value, and "must be a string" for another type (issue 18)', () => {
    expect(() => requiredText('label', undefined, 10)).toThrow('label is required');
    expect(() => requiredText('label', null, 10)).toThrow('label is required');
    for (const value of [5, true, {}, []]) expect(() => requiredText('label', value, 10)).toThrow('label must be a string');
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

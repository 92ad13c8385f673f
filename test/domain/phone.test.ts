import { describe, expect, it } from 'vitest';
import { normalizePhone } from '../../src/domain/phone.ts';

const refusedNaming = (field: string) => expect.objectContaining({ name: 'DomainError', code: 'INVALID_INPUT', field });

describe('normalizePhone', () => {
  it.each([
    ['+234 8123456781', '+2348123456781'],
    ['+2348123456781', '+2348123456781'],
    ['+234 812 345 6781', '+2348123456781'],
    ['+234-812-345-6781', '+2348123456781'],
    ['  +2348123456781  ', '+2348123456781'],
  ])('when a Nigerian mobile is given as "%s", then it is stored in E.164 as "%s"', (input, expected) => {
    expect(normalizePhone('phone', input)).toBe(expected);
  });

  it('when a US number is given with spaces, then it is stored in E.164', () => {
    expect(normalizePhone('phone', '+1 650 253 0000')).toBe('+16502530000');
  });

  it('when a UK number is given with spaces, then it is stored in E.164', () => {
    expect(normalizePhone('phone', '+44 20 7946 0958')).toBe('+442079460958');
  });

  it('when the same number is written two ways, then both normalize to the same value', () => {
    expect(normalizePhone('phone', '+234 8123456781')).toBe(normalizePhone('phone', '+2348123456781'));
  });

  it.each([
    ['without the leading +', '2348123456781'],
    ['in national format', '08123456781'],
    ['with 00 instead of +', '002348123456781'],
    ['with a letter in place of a digit', '+234 812345678a'],
    ['with trailing letters', '+2348123456781abc'],
    ['with a trailing extension', '+2348123456781 ext 5'],
    ['as a vanity number', '+1 800 FLOWERS'],
    ['too short for its country', '+234 81'],
    ['too long for its country', '+234812345678123'],
    ['with an unknown country code', '+999 8123456781'],
    ['longer than 40 characters', `+2348123456781${' '.repeat(27)}`],
    ['longer than 40 characters of digits', `+${'1'.repeat(40)}`],
    ['empty', ''],
    ['just a plus sign', '+'],
  ])('when the phone is %s, then it is refused naming the field', (_label, input) => {
    expect(() => normalizePhone('contactPhone', input)).toThrow(refusedNaming('contactPhone'));
  });

  it.each([
    ['a NUL at the end', '+2348123456781\u0000', 'U+0000 at character 15'],
    ['a vertical tab at the start (which trim() would drop)', '\u000b+2348123456781', 'U+000B at character 1'],
    ['a form feed at the end', '+2348123456781\u000c', 'U+000C at character 15'],
    ['an escape inside', '+234\u001b8123456781', 'U+001B at character 5'],
    ['a C1 control at the end', '+2348123456781\u0085', 'U+0085 at character 15'],
  ])('when the phone holds %s, then it is refused as a control character (issue 40)', (_label, input, where) => {
    expect(() => normalizePhone('phoneTo', input)).toThrow(refusedNaming('phoneTo'));
    expect(() => normalizePhone('phoneTo', input)).toThrow(`phoneTo must not contain control characters (${where})`);
  });

  it('when a pasted phone ends with a line break or starts with a tab, then it is trimmed as whitespace', () => {
    expect(normalizePhone('phoneTo', '\t+2348123456781\r\n')).toBe('+2348123456781');
  });

  it.each([
    ['a number', 2348123456781],
    ['null', null],
    ['undefined', undefined],
    ['an array', ['+2348123456781']],
  ])('when the phone is %s rather than a string, then it is refused naming the field', (_label, input) => {
    expect(() => normalizePhone('phone', input)).toThrow(refusedNaming('phone'));
  });

  it('given numbers normalized before (remembered), when they come again, then the answers are the same, and a refused one is still refused', () => {
    const inputs = ['+234 812 345 6781', '+2348123456781', '+1 (415) 555-2671', '+44 20 7946 0958'];
    const first = inputs.map((input) => normalizePhone('phoneTo', input));
    for (let i = 0; i < 3; i++) expect(inputs.map((input) => normalizePhone('phoneTo', input))).toEqual(first);
    expect(first).toEqual(['+2348123456781', '+2348123456781', '+14155552671', '+442079460958']);
    for (let i = 0; i < 2; i++) expect(() => normalizePhone('phoneTo', '+234 81')).toThrow(refusedNaming('phoneTo'));
  });
});

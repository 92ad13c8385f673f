import { describe, expect, it } from 'vitest';
import { DomainError } from '../../src/domain/errors.ts';
import { addAmounts, DEFAULT_ASSET_SCALE, Decimal, formatAmount, parsePositiveAmount } from '../../src/domain/money.ts';

const refusedNaming = (field: string) => expect.objectContaining({ name: 'DomainError', code: 'INVALID_INPUT', field });

describe('parsePositiveAmount', () => {
  it('when the scale is not given, then it is the default asset scale of 2', () => {
    expect(DEFAULT_ASSET_SCALE).toBe(2);
    expect(parsePositiveAmount('amount', '7')).toBe('7.00');
  });

  it.each([
    ['1', '1.00'],
    ['1.5', '1.50'],
    ['0.01', '0.01'],
    ['100.00', '100.00'],
    ['0.10', '0.10'],
    ['007', '7.00'],
    ['999999999999999999', '999999999999999999.00'],
    ['999999999999999999.99', '999999999999999999.99'],
    ['123456789012345678.01', '123456789012345678.01'],
  ])('when the amount is "%s", then it is accepted and formatted at the scale as "%s"', (input, expected) => {
    expect(parsePositiveAmount('amount', input, 2)).toBe(expected);
  });

  it('when the amount has 18 integer digits after leading zeros, then it is accepted (zeros do not count)', () => {
    expect(parsePositiveAmount('amount', `000${'9'.repeat(18)}`, 2)).toBe(`${'9'.repeat(18)}.00`);
  });

  it('when the amount is accepted, then no float precision is lost', () => {
    // 2^53 + 1 cannot be represented as a JavaScript number.
    expect(parsePositiveAmount('amount', '9007199254740993.01', 2)).toBe('9007199254740993.01');
  });

  it.each([
    ['zero', '0'],
    ['zero with decimals', '0.00'],
    ['negative', '-1'],
    ['signed positive', '+1'],
    ['in exponent notation', '1e3'],
    ['with a leading space', ' 1'],
    ['with a trailing space', '1 '],
    ['with a thousands separator', '1,000'],
    ['with a comma as decimal mark', '1,50'],
    ['with three decimals at scale 2', '1.005'],
    ['without an integer part', '.5'],
    ['with a dangling decimal point', '5.'],
    ['empty', ''],
    ['NaN', 'NaN'],
    ['Infinity', 'Infinity'],
    ['in hexadecimal', '0x10'],
    ['in Arabic-Indic digits', '١٢٣'],
    ['in full-width digits', '１２３'],
    ['with 19 integer digits', '1'.repeat(19)],
    ['with 19 integer digits and a fraction', `${'9'.repeat(19)}.99`],
  ])('when the amount is %s, then it is refused naming the field', (_label, input) => {
    expect(() => parsePositiveAmount('maxDailyVolume', input, 2)).toThrow(refusedNaming('maxDailyVolume'));
  });

  it.each([
    ['a number', 5],
    ['null', null],
    ['undefined', undefined],
    ['an object', { amount: '5' }],
    ['a Decimal', new Decimal(5)],
    ['a bigint', 5n],
  ])('when the amount is %s rather than a string, then it is refused naming the field', (_label, input) => {
    expect(() => parsePositiveAmount('amount', input, 2)).toThrow(refusedNaming('amount'));
  });

  it('when the amount is refused, then the error is a DomainError whose message names the field', () => {
    let caught: unknown;
    try {
      parsePositiveAmount('transferAmount', '1.005', 2);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(DomainError);
    expect((caught as DomainError).message).toMatch(/transferAmount/);
    expect((caught as DomainError).message).toMatch(/2 decimal places/);
  });

  it('when the scale is 0, then whole amounts are accepted without a decimal point', () => {
    expect(parsePositiveAmount('amount', '15', 0)).toBe('15');
  });

  it('when the scale is 0 and the amount is "1.0", then it is refused for having a decimal place', () => {
    expect(() => parsePositiveAmount('amount', '1.0', 0)).toThrow(refusedNaming('amount'));
  });

  it('when the scale is 3, then three decimals are accepted and fewer are padded', () => {
    expect(parsePositiveAmount('amount', '1.005', 3)).toBe('1.005');
    expect(parsePositiveAmount('amount', '1.5', 3)).toBe('1.500');
  });

  it('when the scale is 3 and the amount has four decimals, then it is refused', () => {
    expect(() => parsePositiveAmount('amount', '1.0005', 3)).toThrow(refusedNaming('amount'));
  });

  it('when the smallest unit at the scale is given, then it is accepted', () => {
    expect(parsePositiveAmount('amount', '0.001', 3)).toBe('0.001');
  });
});

describe('formatAmount', () => {
  it.each([
    ['5', 2, '5.00'],
    ['5.1', 2, '5.10'],
    ['0', 2, '0.00'],
    ['1234.4', 0, '1234'],
    ['7', 3, '7.000'],
    ['999999999999999999.99', 2, '999999999999999999.99'],
  ])('when the amount is "%s" at scale %i, then it is written as "%s"', (input, scale, expected) => {
    expect(formatAmount(input, scale)).toBe(expected);
  });

  it('when no scale is given, then it formats at the default scale of 2', () => {
    expect(formatAmount('3')).toBe('3.00');
  });

  it('when given a Decimal, then it formats it at the scale', () => {
    expect(formatAmount(new Decimal('10').div(4))).toBe('2.50');
  });

  it("when the amount has more decimals than the scale, then it rounds half to even (banker's rounding)", () => {
    expect(formatAmount('1.005')).toBe('1.00');
    expect(formatAmount('1.015')).toBe('1.02');
    expect(formatAmount('2.5', 0)).toBe('2');
    expect(formatAmount('3.5', 0)).toBe('4');
  });

  it('when the amount is negative, then it keeps its sign', () => {
    expect(formatAmount('-1.5')).toBe('-1.50');
  });

  it('when a string is padded without parsing a Decimal, then the result is exactly what Decimal toFixed gives', () => {
    const inputs = [
      '0',
      '-0',
      '-0.0',
      '0.0',
      '5.',
      '-5.5',
      '12.345',
      '1e21',
      '007',
      '.5',
      '-0.001',
      '100.10',
      '123456789012345678.99',
      '1234567890123456789012345678901234.5',
    ];
    for (const scale of [0, 1, 2, 3, 6]) {
      for (const input of inputs)
        expect(formatAmount(input, scale), `${input} at ${scale}`).toBe(new Decimal(input).toFixed(scale));
    }
  });

  it('when a sum of decimal amounts is formatted, then it has no float error', () => {
    expect(formatAmount(new Decimal('0.1').plus('0.2'))).toBe('0.30');
    expect(new Decimal('0.1').plus('0.2').eq('0.3')).toBe(true);
  });
});

describe('addAmounts', () => {
  it('when amounts are added or subtracted, then the result is exactly what Decimal gives, in its form', () => {
    const inputs = [
      '0',
      '-0',
      '0.0',
      '1.10',
      '5.',
      '.5',
      '1e3',
      '007',
      '100.50',
      '-250.75',
      '0.000001',
      '-0.000001',
      '0.0000001',
      '99999999999999999999',
      '99999999999999999999.999999',
      '123456789012345678901.5',
    ];
    for (const a of inputs) {
      for (const b of inputs) {
        expect(addAmounts(a, b), `${a} + ${b}`).toBe(new Decimal(a).plus(b).toString());
        expect(addAmounts(a, b, -1), `${a} - ${b}`).toBe(new Decimal(a).minus(b).toString());
      }
    }
  });

  it('when many sums of amounts at the scale are folded, then the result matches Decimal at every step', () => {
    let seed = 7;
    const next = () => (seed = (seed * 1103515245 + 12345) % 2147483648);
    let fast = '0';
    let exact = new Decimal(0);
    for (let i = 0; i < 5000; i++) {
      const amount = `${next() % 100000}.${String(next() % 100).padStart(2, '0')}`;
      const sign = next() % 3 === 0 ? -1 : 1;
      fast = addAmounts(fast, amount, sign);
      exact = sign === 1 ? exact.plus(amount) : exact.minus(amount);
      expect(fast).toBe(exact.toString());
    }
  });
});

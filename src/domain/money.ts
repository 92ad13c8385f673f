import { Decimal } from 'decimal.js';
import { invalidInput } from './errors.ts';

// Amounts are decimal strings on the wire and decimals in memory; a float never touches money.
// Precision is ample for any realistic amount (the largest accepted has 18 integer digits).
Decimal.set({ precision: 40, rounding: Decimal.ROUND_HALF_EVEN });

export { Decimal };

export const DEFAULT_ASSET_SCALE = 2;
const MAX_INTEGER_DIGITS = 18;

/**
 * Parses a positive amount written as plain digits with an optional fraction: no sign, no exponent, no
 * spaces, no more decimal places than the asset's scale. Returns it formatted at the scale ("5" -> "5.00").
 */
export function parsePositiveAmount(field: string, input: unknown, scale = DEFAULT_ASSET_SCALE): string {
  if (typeof input !== 'string') throw invalidInput(field, `${field} must be a decimal string such as "100.00"`);
  const match = /^(\d+)(?:\.(\d+))?$/.exec(input);
  if (!match)
    throw invalidInput(
      field,
      `${field} must be a decimal string of digits with an optional fraction, such as "100.00"`,
    );
  const [, integerPart = '', fraction = ''] = match;
  if (fraction.length > scale) throw invalidInput(field, `${field} has more than ${scale} decimal places`);
  if (integerPart.replace(/^0+/, '').length > MAX_INTEGER_DIGITS) throw invalidInput(field, `${field} is too large`);
  const amount = new Decimal(input);
  if (amount.lte(0)) throw invalidInput(field, `${field} must be greater than 0`);
  return amount.toFixed(scale);
}

/**
 * The strings parsePositiveAmount accepts at a scale, as one regular expression (ECMA-262, for the OpenAPI
 * document): digits with at most `scale` decimals, at most MAX_INTEGER_DIGITS significant integer digits,
 * greater than 0.
 */
export function positiveAmountPattern(scale = DEFAULT_ASSET_SCALE): string {
  const integer = `0*(0|[1-9][0-9]{0,${MAX_INTEGER_DIGITS - 1}})`;
  return scale > 0 ? `^(?!0*(\\.0*)?$)${integer}(\\.[0-9]{1,${scale}})?$` : `^(?!0+$)${integer}$`;
}

/** A plain decimal string short enough to be exact as it is: no exponent, no leading zero. */
const PLAIN_AMOUNT = /^-?(?:0|[1-9]\d{0,29})(?:\.(\d{0,20}))?$/;
const NEGATIVE_ZERO = /^-0(?:\.0*)?$/;

/** Formats a decimal amount at the asset's scale, the one form amounts take on the wire and in events. */
export function formatAmount(amount: Decimal.Value, scale = DEFAULT_ASSET_SCALE): string {
  // A plain string with no more decimals than the scale is padded with zeros, which is what toFixed gives,
  // without parsing a Decimal (most of what a projection's replay costs); anything else goes through Decimal.
  if (typeof amount === 'string') {
    const plain = PLAIN_AMOUNT.exec(amount);
    const fraction = plain?.[1] ?? '';
    if (plain && fraction.length <= scale && !NEGATIVE_ZERO.test(amount)) {
      const integer = plain[1] === undefined ? amount : amount.slice(0, amount.length - fraction.length - 1);
      return scale === 0 ? integer : `${integer}.${fraction.padEnd(scale, '0')}`;
    }
  }
  return new Decimal(amount).toFixed(scale);
}

/**
 * A plain decimal with at most 20 integer digits and 6 decimals: its sums are exact in a BigInt of its smallest units.
 */
const SMALL_PLAIN = /^(-?)(0|[1-9]\d{0,19})(?:\.(\d{1,6}))?$/;

/**
 * `new Decimal(a).plus(b).toString()` (or minus with `sign` -1), exactly, for the strings balances and holds are
 * (a Decimal is parsed twice otherwise, which is most of what replaying a wallet costs); anything else is left
 * to Decimal.
 */
export function addAmounts(a: string, b: string, sign: 1 | -1 = 1): string {
  const x = SMALL_PLAIN.exec(a);
  const y = x && SMALL_PLAIN.exec(b);
  if (!x || !y) return sign === 1 ? new Decimal(a).plus(b).toString() : new Decimal(a).minus(b).toString();
  const scale = Math.max(x[3]?.length ?? 0, y[3]?.length ?? 0);
  const units = (m: RegExpExecArray) => {
    const value = BigInt(`${m[2]}${(m[3] ?? '').padEnd(scale, '0')}`);
    return m[1] === '-' ? -value : value;
  };
  const sum = units(x) + (sign === 1 ? units(y) : -units(y));
  const digits = (sum < 0n ? -sum : sum).toString().padStart(scale + 1, '0');
  const integer = digits.slice(0, digits.length - scale);
  const fraction = digits.slice(digits.length - scale).replace(/0+$/, '');
  const text = fraction === '' ? integer : `${integer}.${fraction}`;
  return sum < 0n ? `-${text}` : text;
}

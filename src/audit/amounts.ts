/**
 * Money as bigint units at a fixed internal scale, for folds over millions of events: exact, and an order
 * of magnitude faster than Decimal. Amounts in events are decimal strings at the asset scale (<= 8).
 */
const SCALE = 18;
const ONE = 10n ** BigInt(SCALE);
const AMOUNT = /^-?\d+(\.\d+)?$/;

/** Amounts repeat a lot in a history: parsed ones are remembered (a bounded number of them). */
const parsed = new Map<string, bigint>();

export function toUnits(amount: string): bigint {
  const known = parsed.get(amount);
  if (known !== undefined) return known;
  const units = parse(amount);
  if (parsed.size < 100_000) parsed.set(amount, units);
  return units;
}

function parse(amount: string): bigint {
  if (!AMOUNT.test(amount)) throw new Error(`not a decimal amount: ${JSON.stringify(amount).slice(0, 40)}`);
  const dot = amount.indexOf('.');
  if (dot === -1) return BigInt(amount) * ONE;
  const fraction = amount.slice(dot + 1);
  if (fraction.length > SCALE) throw new Error(`more than ${SCALE} decimal places: ${amount}`);
  return BigInt(amount.slice(0, dot) + fraction.padEnd(SCALE, '0'));
}

/** Units as a decimal string at a scale (rounding toward zero past it; amounts in events never go past it). */
export function fromUnits(units: bigint, scale: number): string {
  const negative = units < 0n;
  const digits = (negative ? -units : units).toString().padStart(SCALE + 1, '0');
  const integer = digits.slice(0, digits.length - SCALE);
  const fraction = digits.slice(digits.length - SCALE, digits.length - SCALE + scale);
  const text = scale > 0 ? `${integer}.${fraction}` : integer;
  return negative && /[1-9]/.test(text) ? `-${text}` : text;
}

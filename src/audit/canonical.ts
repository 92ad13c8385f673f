/**
 * Canonical JSON: what a value looks like once stored and read back (JSON semantics: `toJSON` applied,
 * `undefined`, functions and symbols dropped from objects and written as null in arrays, non-finite
 * numbers as null), with the keys of every object sorted (by UTF-16 code units, as Array#sort does) and
 * no whitespace. Two values that read back equal from any store serialize to the same string, whatever
 * order their keys were written in, so a hash over this string survives every adapter's round trip.
 *
 * Written for speed (audit verify recomputes it for every event): strings without anything to escape are
 * quoted directly, keys are quoted once and remembered, and keys already in order are not sorted again.
 */
export function canonicalJson(value: unknown): string {
  const out = write(value, true);
  if (out === undefined) throw new Error('a value that JSON cannot represent has no canonical form');
  return out;
}

/** The canonical JSON of an object without one of its keys (as if it were absent), without copying it. */
export function canonicalJsonWithout(record: Record<string, unknown>, omitted: string): string {
  return writeObject(record, omitted);
}

/** Nothing JSON.stringify would escape: no quote, backslash, control character or (lone) surrogate. */
const PLAIN = /^[^"\\\u0000-\u001f\ud800-\udfff]*$/;
const quotedKeys = new Map<string, string>();
const MAX_QUOTED_KEYS = 10_000;

function keyPrefix(key: string): string {
  let quoted = quotedKeys.get(key);
  if (quoted === undefined) {
    quoted = `${JSON.stringify(key)}:`;
    if (quotedKeys.size < MAX_QUOTED_KEYS) quotedKeys.set(key, quoted);
  }
  return quoted;
}

function write(value: unknown, inArray: boolean): string | undefined {
  switch (typeof value) {
    case 'string':
      return PLAIN.test(value) ? `"${value}"` : JSON.stringify(value);
    case 'number':
      // Number#toString is what JSON uses for finite numbers (-0 included: "0").
      return Number.isFinite(value) ? `${value}` : 'null';
    case 'boolean':
      return value ? 'true' : 'false';
    case 'object':
      break;
    case 'bigint':
      throw new TypeError('a bigint has no JSON form');
    default:
      return inArray ? 'null' : undefined;
  }
  if (value === null) return 'null';
  const object = value as { toJSON?: () => unknown };
  if (typeof object.toJSON === 'function') return write(object.toJSON(), inArray);
  if (Array.isArray(value)) {
    let out = '[';
    for (let i = 0; i < value.length; i++) {
      if (i > 0) out += ',';
      out += write(value[i], true);
    }
    return `${out}]`;
  }
  return writeObject(value as Record<string, unknown>, undefined);
}

function writeObject(record: Record<string, unknown>, omitted: string | undefined): string {
  const keys = Object.keys(record);
  for (let i = 1; i < keys.length; i++) {
    if (keys[i - 1]! > keys[i]!) {
      keys.sort();
      break;
    }
  }
  let out = '{';
  for (const key of keys) {
    if (key === omitted) continue;
    const item = write(record[key], false);
    if (item === undefined) continue;
    if (out.length > 1) out += ',';
    out += keyPrefix(key) + item;
  }
  return `${out}}`;
}

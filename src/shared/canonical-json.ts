/**
 * Canonical JSON: what a value looks like once stored and read back (JSON semantics: `toJSON` applied,
 * `undefined`, functions and symbols dropped from objects and written as null in arrays, non-finite
 * numbers as null), with the keys of every object sorted (by UTF-16 code units, as Array#sort does) and
 * no whitespace. Two values that read back equal from any store serialize to the same string, whatever
 * order their keys were written in, so a hash over this string survives every adapter's round trip.
 *
 * Written for speed (every append hashes it, audit verify recomputes it for every event): strings without
 * anything to escape are quoted directly, and an object's keys are sorted and quoted once per key list (the
 * objects of one event type share theirs), then found again by comparing Object.keys with the list.
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

/**
 * A key list as Object.keys gave it, its sorted order (indexes into it) and the sorted keys quoted with their colon.
 */
interface Layout {
  keys: string[];
  order: number[];
  prefixes: string[];
}

/**
 * Layouts by their first key; a few lists per first key, and a bounded number of first keys (past them: sorted each
 * time).
 */
const layouts = new Map<string, Layout[]>();
const MAX_FIRST_KEYS = 2000;
const MAX_LAYOUTS_PER_KEY = 8;

function layoutOf(keys: string[]): Layout {
  const known = layouts.get(keys[0]!);
  if (known) {
    // Keys from Object.keys are internalized strings: comparing them is comparing pointers.
    next: for (const layout of known) {
      const listed = layout.keys;
      if (listed.length !== keys.length) continue;
      for (let i = 1; i < keys.length; i++) if (listed[i] !== keys[i]) continue next;
      return layout;
    }
  }
  // By UTF-16 code units, as Array#sort orders strings.
  const order = keys.map((_, i) => i).sort((a, b) => (keys[a]! < keys[b]! ? -1 : keys[a]! > keys[b]! ? 1 : 0));
  const layout: Layout = { keys, order, prefixes: order.map((i) => `${JSON.stringify(keys[i])}:`) };
  if (known) {
    if (known.length < MAX_LAYOUTS_PER_KEY) known.push(layout);
  } else if (layouts.size < MAX_FIRST_KEYS) {
    layouts.set(keys[0]!, [layout]);
  }
  return layout;
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
  if (keys.length === 0) return '{}';
  const { order, prefixes } = layoutOf(keys);
  let out = '{';
  for (let i = 0; i < order.length; i++) {
    const key = keys[order[i]!]!;
    if (key === omitted) continue;
    const item = write(record[key], false);
    if (item === undefined) continue;
    if (out.length > 1) out += ',';
    out += prefixes[i]! + item;
  }
  return `${out}}`;
}

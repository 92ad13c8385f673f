/**
 * canonical.ts as it was before its key lists were cached (2026-11), kept as the reference the current
 * implementation must match byte for byte: hashes of stored events are computed over this form.
 */
export function referenceCanonicalJson(value: unknown): string {
  const out = write(value, true);
  if (out === undefined) throw new Error('a value that JSON cannot represent has no canonical form');
  return out;
}

export function referenceCanonicalJsonWithout(record: Record<string, unknown>, omitted: string): string {
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

import { describe, expect, it } from 'vitest';
import {
  API_KEY_PATTERN,
  formatApiKey,
  hashSecret,
  isKeyID,
  matchingSecretIndex,
  newKeyID,
  newSecret,
  parseApiKey,
  secretMatches,
  secretMatchesAny,
} from '../../src/domain/api-key-secrets.ts';

const KEY_ID = 'key_AbCdEfGh12_-34Xy';
const SECRET = 'A'.repeat(20) + '-_' + 'z9'.repeat(10) + 'q';

describe('api key ids and secrets', () => {
  it('when the fixtures are checked, then they have the documented shapes', () => {
    expect(KEY_ID).toHaveLength(20);
    expect(SECRET).toHaveLength(43);
  });

  it('when a key id is generated, then it is key_ and 16 url-safe characters, and ids differ', () => {
    const first = newKeyID();
    expect(first).toMatch(/^key_[A-Za-z0-9_-]{16}$/);
    expect(isKeyID(first)).toBe(true);
    expect(newKeyID()).not.toBe(first);
  });

  it('when a secret is generated, then it is 43 url-safe characters (256 bits), and secrets differ', () => {
    const first = newSecret();
    expect(first).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(first, 'base64url')).toHaveLength(32);
    expect(newSecret()).not.toBe(first);
  });

  it.each([
    'key_short',
    'KEY_AbCdEfGh12_-34Xy',
    'kex_AbCdEfGh12_-34Xy',
    'key_AbCdEfGh12_-34X!',
    'key_AbCdEfGh12_-34XyZ',
    '',
  ])('when "%s" is checked, then it is not a key id', (value) => {
    expect(isKeyID(value)).toBe(false);
  });

  it('when a secret is hashed, then it is the hex SHA-256 of the secret', () => {
    expect(hashSecret('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });
});

describe('formatApiKey and parseApiKey', () => {
  it('when a key is formatted, then it is the prefix of its environment (live by default), the key id, a dot and the secret', () => {
    expect(formatApiKey(KEY_ID, SECRET)).toBe(`wo_live_${KEY_ID}.${SECRET}`);
    expect(formatApiKey(KEY_ID, SECRET, 'live')).toBe(`wo_live_${KEY_ID}.${SECRET}`);
    expect(formatApiKey(KEY_ID, SECRET, 'test')).toBe(`wo_test_${KEY_ID}.${SECRET}`);
  });

  it('when a formatted key is parsed, then the key id and the secret come back', () => {
    expect(parseApiKey(formatApiKey(KEY_ID, SECRET))).toEqual({ keyID: KEY_ID, secret: SECRET });
    expect(parseApiKey(formatApiKey(KEY_ID, SECRET, 'test'))).toEqual({ keyID: KEY_ID, secret: SECRET });
  });

  it('when a key issued before the prefix (bare keyID.secret) is parsed, then it still parses', () => {
    expect(parseApiKey(`${KEY_ID}.${SECRET}`)).toEqual({ keyID: KEY_ID, secret: SECRET });
  });

  it('when a text holds an issued key among other words, then the documented scanner pattern finds exactly the key', () => {
    const key = formatApiKey(newKeyID(), newSecret(), 'test');
    expect(`export WALLET_KEY="${key}" # do not commit`.match(API_KEY_PATTERN)?.[0]).toBe(key);
    expect(formatApiKey(newKeyID(), newSecret())).toMatch(new RegExp(`^${API_KEY_PATTERN.source}$`));
    expect(`${KEY_ID}.${SECRET}`).not.toMatch(API_KEY_PATTERN);
  });

  it('when a freshly generated key is formatted and parsed, then it round-trips', () => {
    const keyID = newKeyID();
    const secret = newSecret();
    expect(parseApiKey(formatApiKey(keyID, secret))).toEqual({ keyID, secret });
  });

  it.each([
    ['has no dot', `${KEY_ID}${SECRET}`],
    ['is empty', ''],
    ['has a bad key id prefix', `kex_AbCdEfGh12_-34Xy.${SECRET}`],
    ['has a key id that is too short', `key_AbCdEfGh12.${SECRET}`],
    ['has a key id that is too long', `${KEY_ID}Z.${SECRET}`],
    ['has a secret that is too short', `${KEY_ID}.${SECRET.slice(1)}`],
    ['has a secret that is too long', `${KEY_ID}.${SECRET}A`],
    ['has a second dot in the secret', `${KEY_ID}.${SECRET.slice(0, 20)}.${SECRET.slice(21)}`],
    ['has a character outside base64url in the secret', `${KEY_ID}.${SECRET.slice(1)}+`],
    ['has padding', `${KEY_ID}.${SECRET.slice(1)}=`],
    ['has a trailing newline', `${KEY_ID}.${SECRET}\n`],
    ['has a leading space', ` ${KEY_ID}.${SECRET}`],
    ['is a bearer header value', `Bearer ${KEY_ID}.${SECRET}`],
    ['has the parts swapped', `${SECRET}.${KEY_ID}`],
    ['has an unknown environment prefix', `wo_prod_${KEY_ID}.${SECRET}`],
    ['has the prefix twice', `wo_live_wo_live_${KEY_ID}.${SECRET}`],
    ['has an upper-case prefix', `WO_LIVE_${KEY_ID}.${SECRET}`],
  ])('when the presented key %s, then it is not parsed', (_label, presented) => {
    expect(parseApiKey(presented)).toBeNull();
  });
});

describe('secretMatches', () => {
  it('when the secret is the one whose hash is stored, then it matches', () => {
    expect(secretMatches(SECRET, hashSecret(SECRET))).toBe(true);
  });

  it('when the secret differs by one character, then it does not match', () => {
    expect(secretMatches(`${SECRET.slice(0, -1)}r`, hashSecret(SECRET))).toBe(false);
  });

  it('when the stored hash has the wrong length, then it does not match (and does not throw)', () => {
    const stored = hashSecret(SECRET);
    expect(secretMatches(SECRET, stored.slice(0, -2))).toBe(false);
    expect(secretMatches(SECRET, `${stored}00`)).toBe(false);
    expect(secretMatches(SECRET, '')).toBe(false);
  });

  it('when the stored hash is not hex, then it does not match', () => {
    expect(secretMatches(SECRET, 'z'.repeat(64))).toBe(false);
  });
});

describe("secretMatchesAny (a rotation's current and previous hashes)", () => {
  const OTHER = 'O'.repeat(43);
  it('when the secret is the one of either stored hash, then it matches; of neither, or with none, then it does not', () => {
    expect(secretMatchesAny(SECRET, [hashSecret(OTHER), hashSecret(SECRET)])).toBe(true);
    expect(secretMatchesAny(SECRET, [hashSecret(SECRET), hashSecret(OTHER)])).toBe(true);
    expect(secretMatchesAny(SECRET, [hashSecret(OTHER)])).toBe(false);
    expect(secretMatchesAny(SECRET, [])).toBe(false);
  });

  it('when a stored hash is written in upper-case hex, then it still matches (hex is read as hex)', () => {
    expect(secretMatchesAny(SECRET, [hashSecret(SECRET).toUpperCase()])).toBe(true);
    expect(secretMatches(SECRET, hashSecret(SECRET).toUpperCase())).toBe(true);
  });

  it('when the secret matches, then matchingSecretIndex says which hash (the current 0, the previous 1), and -1 for none', () => {
    expect(matchingSecretIndex(SECRET, [hashSecret(SECRET), hashSecret(OTHER)])).toBe(0);
    expect(matchingSecretIndex(SECRET, [hashSecret(OTHER), hashSecret(SECRET)])).toBe(1);
    expect(matchingSecretIndex(SECRET, [hashSecret(OTHER)])).toBe(-1);
  });
});

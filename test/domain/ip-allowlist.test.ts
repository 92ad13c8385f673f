import { describe, expect, it } from 'vitest';
import { DomainError } from '../../src/domain/errors.ts';
import { compileAllowList, parseAllowedIps } from '../../src/domain/ip-allowlist.ts';

const refusedNaming = (field: string) => expect.objectContaining({ name: 'DomainError', code: 'INVALID_INPUT', field });

describe('parseAllowedIps', () => {
  it('when given a comma-separated string, then each entry is trimmed and empty entries are dropped', () => {
    expect(parseAllowedIps('allowedIPs', ' 10.0.0.1 ,192.168.1.0/24,, ,2001:db8::/32 ')).toEqual([
      '10.0.0.1',
      '192.168.1.0/24',
      '2001:db8::/32',
    ]);
  });

  it('when given an array, then each entry is trimmed and empty entries are dropped', () => {
    expect(parseAllowedIps('allowedIPs', ['  10.0.0.1', '', '   ', '192.168.1.0/24 '])).toEqual([
      '10.0.0.1',
      '192.168.1.0/24',
    ]);
  });

  it('when given an empty string or an empty array, then the list is empty', () => {
    expect(parseAllowedIps('allowedIPs', '')).toEqual([]);
    expect(parseAllowedIps('allowedIPs', [])).toEqual([]);
  });

  it('when an IPv4-mapped IPv6 address is given, then it is folded to IPv4', () => {
    expect(parseAllowedIps('allowedIPs', '::ffff:10.0.0.1')).toEqual(['10.0.0.1']);
  });

  it('when an IPv4-mapped IPv6 range is given, then it is folded to the IPv4 range', () => {
    expect(parseAllowedIps('allowedIPs', '::ffff:10.0.0.0/104')).toEqual(['10.0.0.0/8']);
  });

  it('when a single address is written as a full-length CIDR, then the prefix is dropped', () => {
    expect(parseAllowedIps('allowedIPs', ['10.0.0.1/32', '2001:db8::1/128'])).toEqual(['10.0.0.1', '2001:db8::1']);
  });

  it('when an IPv6 address is written in upper case or long form, then it is written in its short lower-case form', () => {
    expect(parseAllowedIps('allowedIPs', ['2001:DB8::1', '2001:0db8:0000:0000:0000:0000:0000:0001'])).toEqual([
      '2001:db8::1',
      '2001:db8::1',
    ]);
  });

  it('when a CIDR range has host bits set, then it is normalized to its network address', () => {
    expect(parseAllowedIps('allowedIPs', ['10.1.2.3/8', '2001:db8::1/32'])).toEqual(['10.0.0.0/8', '2001:db8::/32']);
  });

  it.each([
    ['a word', 'localhost'],
    ['an octet above 255', '10.0.0.256'],
    ['a prefix above 32 on IPv4', '10.0.0.0/33'],
    ['a prefix above 128 on IPv6', '2001:db8::/129'],
    ['a space inside a CIDR', '10.0.0.0/ 8'],
    ['a non-numeric prefix', '10.0.0.0/abc'],
    ['a hostname with a dot', 'example.com'],
    ['an IPv4 address with five parts', '10.0.0.0.1'],
  ])('when an entry is %s, then it is refused naming the field and quoting the entry', (_label, entry) => {
    let caught: unknown;
    try {
      parseAllowedIps('allowedIPs', ['10.0.0.1', entry]);
    } catch (error) {
      caught = error;
    }
    expect(caught, `"${entry}" was accepted`).toBeInstanceOf(DomainError);
    expect(caught).toEqual(refusedNaming('allowedIPs'));
    expect((caught as DomainError).message).toContain(`"${entry}"`);
  });

  it.each([
    ['a bare 32-bit number', '12345'],
    ['an octet with a leading zero (read as octal: 8.0.0.1)', '010.0.0.1'],
    ['a hexadecimal octet', '0x7f.0.0.1'],
    ['a two-part shorthand (read as 10.0.0.1)', '10.1'],
    ['a three-part shorthand', '10.0.1'],
    ['a hexadecimal number', '0x0a010203'],
    ['an IPv4-mapped address with an octet with a leading zero', '::ffff:010.0.0.1'],
    ['an IPv4-mapped address with a hexadecimal octet', '::ffff:0x0a.0.0.1'],
    ['an IPv6 address with a zone', 'fe80::1%eth0'],
  ])(
    'when an entry is %s rather than a dotted quad, then it is refused instead of being silently reinterpreted',
    (_label, entry) => {
      expect(() => parseAllowedIps('allowedIPs', entry)).toThrow(refusedNaming('allowedIPs'));
    },
  );

  it('when a refused entry is very long, then the message quotes only its first 60 characters', () => {
    const entry = 'x'.repeat(500);
    expect(() => parseAllowedIps('allowedIPs', entry)).toThrow(`"${'x'.repeat(60)}"`);
  });

  it('when there are exactly 100 entries, then they are accepted', () => {
    const entries = Array.from({ length: 100 }, (_, i) => `10.0.${Math.floor(i / 256)}.${i % 256}`);
    expect(parseAllowedIps('allowedIPs', entries)).toHaveLength(100);
  });

  it('when there are more than 100 entries, then the list is refused naming the field', () => {
    const entries = Array.from({ length: 101 }, (_, i) => `10.0.${Math.floor(i / 256)}.${i % 256}`);
    expect(() => parseAllowedIps('allowedIPs', entries)).toThrow(refusedNaming('allowedIPs'));
    expect(() => parseAllowedIps('allowedIPs', entries.join(','))).toThrow(refusedNaming('allowedIPs'));
  });

  it('when empty entries pad a list to more than 100, then only the real entries count', () => {
    const entries = [...Array.from({ length: 100 }, (_, i) => `10.1.0.${i}`), '', ' '];
    expect(parseAllowedIps('allowedIPs', entries)).toHaveLength(100);
  });

  it.each([
    ['an IPv4 mapped range narrower than IPv4', '::ffff:10.0.0.0/104'],
    ['an IPv4 mapped range covering all of IPv4', '::ffff:0.0.0.0/96'],
    ['an IPv4 mapped range wider than IPv4', '::ffff:10.0.0.0/64'],
    ['an IPv6 range', '2001:db8::/32'],
    ['an IPv4 range', '192.168.0.0/16'],
  ])('when %s is accepted, then its normalized form can be compiled', (_label, entry) => {
    let normalized: string[];
    try {
      normalized = parseAllowedIps('allowedIPs', entry);
    } catch (error) {
      // Refusing the entry is an acceptable outcome; accepting one that cannot be compiled is not.
      expect(error).toEqual(refusedNaming('allowedIPs'));
      return;
    }
    expect(() => compileAllowList(normalized)).not.toThrow();
  });
});

describe('compileAllowList', () => {
  it('when the list is empty, then every address is allowed, even an invalid one', () => {
    const allows = compileAllowList([]);
    expect(allows('203.0.113.7')).toBe(true);
    expect(allows('2001:db8::1')).toBe(true);
    expect(allows('not an ip')).toBe(true);
  });

  it('when the list has an exact IPv4 address, then only that address is allowed', () => {
    const allows = compileAllowList(['203.0.113.7']);
    expect(allows('203.0.113.7')).toBe(true);
    expect(allows('203.0.113.8')).toBe(false);
  });

  it('when the list has an exact IPv6 address, then only that address is allowed, in any spelling', () => {
    const allows = compileAllowList(['2001:db8::1']);
    expect(allows('2001:db8::1')).toBe(true);
    expect(allows('2001:0DB8:0:0:0:0:0:1')).toBe(true);
    expect(allows('2001:db8::2')).toBe(false);
  });

  it('when the list has an IPv4 CIDR range, then addresses inside it are allowed and those outside are not', () => {
    const allows = compileAllowList(['192.168.1.0/24']);
    expect(allows('192.168.1.0')).toBe(true);
    expect(allows('192.168.1.255')).toBe(true);
    expect(allows('192.168.2.0')).toBe(false);
    expect(allows('192.168.0.255')).toBe(false);
  });

  it('when the list has an IPv6 CIDR range, then addresses inside it are allowed and those outside are not', () => {
    const allows = compileAllowList(['2001:db8::/32']);
    expect(allows('2001:db8::1')).toBe(true);
    expect(allows('2001:db8:ffff:ffff:ffff:ffff:ffff:ffff')).toBe(true);
    expect(allows('2001:db9::1')).toBe(false);
  });

  it('when the list has several entries, then an address matching any of them is allowed', () => {
    const allows = compileAllowList(['203.0.113.7', '10.0.0.0/8']);
    expect(allows('203.0.113.7')).toBe(true);
    expect(allows('10.200.0.1')).toBe(true);
    expect(allows('11.0.0.1')).toBe(false);
  });

  it('when the client address is IPv4-mapped IPv6, then it matches an IPv4 range', () => {
    const allows = compileAllowList(['10.0.0.0/8']);
    expect(allows('::ffff:10.1.2.3')).toBe(true);
    expect(allows('::ffff:11.1.2.3')).toBe(false);
  });

  it('when the client address is IPv4-mapped IPv6, then it matches an exact IPv4 entry', () => {
    expect(compileAllowList(['10.1.2.3'])('::ffff:10.1.2.3')).toBe(true);
  });

  it('when an entry is written as an IPv4-mapped IPv6 range, then it matches plain IPv4 addresses in that range', () => {
    const allows = compileAllowList(['::ffff:10.0.0.0/104']);
    expect(allows('10.9.9.9')).toBe(true);
    expect(allows('::ffff:10.9.9.9')).toBe(true);
    expect(allows('11.9.9.9')).toBe(false);
  });

  it('when an entry is an IPv4-mapped IPv6 address, then it matches the plain IPv4 address', () => {
    expect(compileAllowList(['::ffff:10.0.0.1'])('10.0.0.1')).toBe(true);
  });

  it('when a CIDR entry has host bits set, then it still matches the whole range', () => {
    const allows = compileAllowList(['10.1.2.3/8']);
    expect(allows('10.200.0.1')).toBe(true);
    expect(allows('11.0.0.1')).toBe(false);
  });

  it.each(['not an ip', '', '10.0.0.256', '10.0.0.0/8', 'fe80::zz'])(
    'when the client address "%s" is not a valid address, then it is refused',
    (ip) => {
      expect(compileAllowList(['0.0.0.0/0', '::/0'])(ip)).toBe(false);
    },
  );

  it.each([
    ['a two-part shorthand (10.0.0.1 to ipaddr.js)', '10.1'],
    ['a three-part shorthand', '10.1.3'],
    ['a bare 32-bit number (10.1.2.3)', '167837955'],
    ['a hexadecimal number (10.1.2.3)', '0x0a010203'],
    ['a hexadecimal octet', '0x0a.1.2.3'],
    ['an octet with a leading zero', '010.1.2.3'],
    ['an IPv4-mapped address with an octet with a leading zero', '::ffff:010.1.2.3'],
    ['an IPv6 address with a zone', '2001:db8::1%eth0'],
  ])('when the client address is %s, not a canonical spelling, then it matches no entry', (_label, ip) => {
    expect(compileAllowList(['10.0.0.0/8', '0.0.0.0/0', '::/0', '2001:db8::1'])(ip)).toBe(false);
  });

  it('when the client address is IPv6 with an embedded dotted quad, then it is the IPv4 address it carries', () => {
    expect(compileAllowList(['10.0.0.0/8'])('::ffff:10.1.2.3')).toBe(true);
    expect(compileAllowList(['10.0.0.0/8'])('::FFFF:a01:203')).toBe(true);
  });

  it('when the client address is IPv6, then it does not match an IPv4 range, even the whole IPv4 space', () => {
    const allows = compileAllowList(['0.0.0.0/0']);
    expect(allows('2001:db8::1')).toBe(false);
    expect(allows('::1')).toBe(false);
    expect(allows('203.0.113.7')).toBe(true);
  });

  it('when the client address is IPv4, then it does not match an IPv6 range, even the whole IPv6 space', () => {
    const allows = compileAllowList(['::/0']);
    expect(allows('203.0.113.7')).toBe(false);
    expect(allows('2001:db8::1')).toBe(true);
  });

  it('when the list is the output of parseAllowedIps, then it allows what the input described', () => {
    const allows = compileAllowList(parseAllowedIps('allowedIPs', ' ::ffff:10.0.0.0/104, 2001:DB8::/32 ,203.0.113.7'));
    expect(allows('10.5.5.5')).toBe(true);
    expect(allows('2001:db8::42')).toBe(true);
    expect(allows('203.0.113.7')).toBe(true);
    expect(allows('203.0.113.8')).toBe(false);
  });
});

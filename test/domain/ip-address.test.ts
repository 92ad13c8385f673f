import { describe, expect, it } from 'vitest';
import { addressBucket, clientAddress, parseIpAddress } from '../../src/domain/ip-address.ts';

describe('parseIpAddress', () => {
  it.each([
    ['10.1.2.3', '10.1.2.3'],
    ['0.0.0.0', '0.0.0.0'],
    ['255.255.255.255', '255.255.255.255'],
    ['2001:db8::1', '2001:db8::1'],
    ['2001:0DB8:0:0:0:0:0:1', '2001:db8::1'],
    ['::1', '::1'],
    ['::ffff:10.1.2.3', '::ffff:a01:203'],
  ])('when the text is %s, then it is the address %s', (text, address) => {
    expect(parseIpAddress(text)?.toString()).toBe(address);
  });

  it.each([
    ['a two-part shorthand (10.0.0.1 to ipaddr.js)', '10.1'],
    ['a three-part shorthand', '10.0.1'],
    ['a bare 32-bit number (10.1.2.3 to ipaddr.js)', '167837955'],
    ['a hexadecimal number', '0x0a010203'],
    ['a hexadecimal octet', '0x0a.1.2.3'],
    ['an octet with a leading zero (octal to ipaddr.js)', '010.1.2.3'],
    ['a last octet with a leading zero', '10.1.2.03'],
    ['an octet above 255', '10.1.2.256'],
    ['five parts', '10.1.2.3.4'],
    ['surrounding space', ' 10.1.2.3'],
    ['a port', '10.1.2.3:443'],
    ['an IPv6 address with a lenient IPv4 part', '::ffff:010.1.2.3'],
    ['an IPv6 address with a hexadecimal IPv4 part', '::ffff:0x0a.1.2.3'],
    ['an IPv6 address with a zone', 'fe80::1%eth0'],
    ['an IPv6 address in brackets', '[::1]'],
    ['nine groups', '1:2:3:4:5:6:7:8:9'],
    ['a word', 'unknown'],
    ['nothing', ''],
  ])('when the text is %s, then it is not an address', (_label, text) => {
    expect(parseIpAddress(text)).toBeNull();
  });
});

describe('clientAddress', () => {
  it('when the address is IPv4-mapped IPv6, then it is the IPv4 address it carries', () => {
    expect(clientAddress('::ffff:10.1.2.3')?.toString()).toBe('10.1.2.3');
    expect(clientAddress('::FFFF:a01:203')?.toString()).toBe('10.1.2.3');
  });

  it('when the text is a lenient IPv4 spelling, then it is no client address', () => {
    expect(clientAddress('10.1')).toBeNull();
    expect(clientAddress('167837955')).toBeNull();
  });
});

describe('addressBucket', () => {
  it.each([
    ['10.1.2.3', '10.1.2.3'],
    ['::ffff:10.1.2.3', '10.1.2.3'],
    ['2001:db8:1:2:3:4:5:6', '2001:db8:1:2::/64'],
    ['2001:db8:1:2::9', '2001:db8:1:2::/64'],
    ['::1', '::/64'],
  ])('when the address is %s, then its bucket is %s', (address, bucket) => {
    expect(addressBucket(address)).toBe(bucket);
  });

  it('when texts are not addresses, then they share one bucket, so that made-up spellings do not each get a fresh count', () => {
    expect(addressBucket('not an address')).toBe(addressBucket('10.1'));
    expect(addressBucket('')).toBe(addressBucket('167837955'));
    expect(addressBucket('10.1')).not.toBe(addressBucket('10.0.0.1'));
  });
});

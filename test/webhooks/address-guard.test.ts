import { describe, expect, it } from 'vitest';
import {
  addressRange,
  isAllowedAddress,
  RefusedAddressError,
  resolveAllowedAddress,
  type Resolver,
} from '../../src/webhooks/address-guard.ts';

const strict = { allowLoopback: false };
const dev = { allowLoopback: true };
const resolver =
  (table: Record<string, string[]>): Resolver =>
  async (hostname) =>
    (table[hostname] ?? []).map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));

describe('webhook address guard', () => {
  it('when an address is public unicast, then it is allowed', () => {
    for (const address of ['8.8.8.8', '93.184.216.34', '2001:4860:4860::8888'])
      expect(isAllowedAddress(address, strict)).toBe(true);
  });

  it('when an address is private, link-local, unique-local, multicast, unspecified, CGNAT or reserved, then it is refused', () => {
    const cases: Record<string, string> = {
      '10.1.2.3': 'private',
      '172.16.0.1': 'private',
      '192.168.1.1': 'private',
      '169.254.169.254': 'linkLocal',
      'fe80::1': 'linkLocal',
      'fd00::1': 'uniqueLocal',
      '224.0.0.1': 'multicast',
      'ff02::1': 'multicast',
      '0.0.0.0': 'unspecified',
      '::': 'unspecified',
      '100.64.0.1': 'carrierGradeNat',
      '240.0.0.1': 'reserved',
      '::ffff:10.0.0.1': 'private',
    };
    for (const [address, range] of Object.entries(cases)) {
      expect(addressRange(address), address).toBe(range);
      expect(isAllowedAddress(address, dev), address).toBe(false);
    }
  });

  it('when an address is loopback (also IPv4-mapped), then it is allowed only with the localhost allowance', () => {
    for (const address of ['127.0.0.1', '127.8.9.10', '::1', '::ffff:127.0.0.1']) {
      expect(isAllowedAddress(address, strict), address).toBe(false);
      expect(isAllowedAddress(address, dev), address).toBe(true);
    }
  });

  it('when an IPv6 address embeds a non-public IPv4 (IPv4-compatible ::/96, mapped, NAT64, 6to4), then it is refused, judged by the IPv4 it carries', () => {
    const cases: Record<string, string> = {
      // IPv4-compatible (deprecated, RFC 4291): refused whatever it carries, [::7f00:1] was tried as 127.0.0.1.
      '::7f00:1': 'ipv4Compatible',
      '::a00:1': 'ipv4Compatible',
      '::808:808': 'ipv4Compatible',
      '::127.0.0.1': 'ipv4Compatible',
      '::ffff:a9fe:a9fe': 'linkLocal',
      '64:ff9b::a00:1': 'rfc6052/private',
      '64:ff9b::127.0.0.1': 'rfc6052/loopback',
      '64:ff9b::169.254.169.254': 'rfc6052/linkLocal',
      '2002:a00:1::1': '6to4/private',
      '2002:7f00:1::': '6to4/loopback',
      '2002:c0a8:101::1': '6to4/private',
      // NAT64 local-use prefixes, Teredo, IPv4-translated, discard, documentation and what lies outside 2000::/3 are never public.
      '64:ff9b:1::808:808': 'rfc6052',
      '2001:0:4136:e378:8000:63bf:3fff:fdd2': 'teredo',
      '::ffff:0:808:808': 'rfc6145',
      '100::1': 'discard',
      '2001:db8::1': 'reserved',
      '::1:0:0:1': 'reserved',
      '4000::1': 'reserved',
      'fec0::1': 'deprecatedSiteLocal',
    };
    for (const [address, range] of Object.entries(cases)) {
      expect(addressRange(address), address).toBe(range);
      expect(isAllowedAddress(address, dev), address).toBe(false);
    }
  });

  it('when a NAT64 or 6to4 address embeds a public IPv4, then it is allowed (an IPv6-only network reaches IPv4 receivers so)', () => {
    for (const address of ['64:ff9b::808:808', '64:ff9b::93.184.216.34', '2002:5db8:d822::1']) {
      expect(addressRange(address), address).toBe('unicast');
      expect(isAllowedAddress(address, strict), address).toBe(true);
    }
  });

  it('when the host is the bracketed literal [::7f00:1], then it is refused before connecting', async () => {
    await expect(resolveAllowedAddress('[::7f00:1]', dev, resolver({}))).rejects.toThrow(/::7f00:1 \(ipv4Compatible\)/);
  });

  it('when a name resolves to a private address, then it is refused naming the address and its range', async () => {
    await expect(
      resolveAllowedAddress('hooks.internal.test', strict, resolver({ 'hooks.internal.test': ['10.0.0.5'] })),
    ).rejects.toThrow(/10\.0\.0\.5 \(private\)/);
  });

  it('when a name resolves to public and private addresses, then it is refused (any of them could be used)', async () => {
    await expect(
      resolveAllowedAddress('mixed.test', strict, resolver({ 'mixed.test': ['93.184.216.34', '192.168.0.9'] })),
    ).rejects.toBeInstanceOf(RefusedAddressError);
  });

  it('when a name resolves to public addresses only, then the first is the one to connect to', async () => {
    await expect(
      resolveAllowedAddress('shop.test', strict, resolver({ 'shop.test': ['2001:4860:4860::8888', '8.8.8.8'] })),
    ).resolves.toEqual({ address: '2001:4860:4860::8888', family: 6 });
  });

  it('when the host is an IP literal, then it is judged without resolving; a name resolving to nothing is refused', async () => {
    await expect(resolveAllowedAddress('[::1]', dev, resolver({}))).resolves.toEqual({ address: '::1', family: 6 });
    await expect(resolveAllowedAddress('127.0.0.1', strict, resolver({}))).rejects.toThrow(/loopback/);
    await expect(resolveAllowedAddress('nowhere.test', dev, resolver({}))).rejects.toThrow(/does not resolve/);
  });
});

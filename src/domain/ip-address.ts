import { isIPv4, isIPv6 } from 'node:net';
import ipaddr from 'ipaddr.js';

/**
 * IP addresses, read strictly: IPv4 only as four decimal parts 0-255 without leading zeros, IPv6 only as
 * RFC 4291 text (its embedded IPv4 part as strict) without a zone. ipaddr.js alone also reads `10.1`,
 * `167837955`, `0x0a010203` and `010.1.2.3` (octal): spellings of other addresses that no proxy writes and
 * that must never pass an allow-list or dodge a per-address limit. Shared by the allow-lists and by every
 * per-address limit (the API's failed authentications, the console's logins).
 */
export type IpAddress = ipaddr.IPv4 | ipaddr.IPv6;

/** The address as written (IPv4-mapped IPv6 stays IPv6); null when it is not strictly an address. */
export function parseIpAddress(text: string): IpAddress | null {
  if (isIPv4(text)) return ipaddr.IPv4.parse(text);
  // Node's isIPv6 admits a zone (fe80::1%eth0): a zone names an interface of one host, never a client.
  if (isIPv6(text) && !text.includes('%')) return ipaddr.IPv6.parse(text);
  return null;
}

/** IPv4-mapped IPv6 (::ffff:10.1.2.3) as the IPv4 address it carries: one address, one form. */
export function unmapped(address: IpAddress): IpAddress {
  return address.kind() === 'ipv6' && (address as ipaddr.IPv6).isIPv4MappedAddress()
    ? (address as ipaddr.IPv6).toIPv4Address()
    : address;
}

/** A client's address (req.ip), strictly read and unmapped; null when it is not an address. */
export function clientAddress(text: string): IpAddress | null {
  const parsed = parseIpAddress(text);
  return parsed ? unmapped(parsed) : null;
}

/** What every text that is not an address counts as: one bucket, so that made-up spellings share a count. */
const NOT_AN_ADDRESS = 'not-an-address';

/**
 * The key a per-address limit counts a client by: IPv4 (also written IPv4-mapped) as is, IPv6 by its /64,
 * the block one subscriber usually gets: counting each of its 2^64 addresses apart would be no limit at all.
 */
export function addressBucket(text: string): string {
  const address = clientAddress(text);
  if (!address) return NOT_AN_ADDRESS;
  if (address.kind() === 'ipv4') return address.toString();
  return `${ipaddr.IPv6.networkAddressFromCIDR(`${address.toString()}/64`).toString()}/64`;
}

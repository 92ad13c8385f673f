import { lookup } from 'node:dns/promises';
import ipaddr from 'ipaddr.js';

/**
 * SSRF protection for webhook deliveries: a delivery goes only to public unicast addresses. Every address the
 * host resolves to is checked (a name with one private address among public ones is refused: a resolver may
 * hand out any of them), and the request then connects to the address that was checked, never resolving the
 * name again (no DNS rebinding between the check and the connection).
 *
 * ipaddr.js names the range of an address; only `unicast` (public) passes, and `loopback` when the
 * deployment allows insecure localhost (development and tests). Everything else is refused: private,
 * link-local (cloud metadata at 169.254.169.254), unique-local, multicast, unspecified, carrier-grade NAT,
 * reserved, and the IPv6 forms that embed a non-public IPv4 address (see addressRange).
 */
export interface AddressRules {
  allowLoopback: boolean;
  /** WEBHOOK_ALLOWED_PRIVATE_RANGES: addresses allowed whatever their range (a partner over a VPN). */
  allowAddress?: (address: string) => boolean;
}

export class RefusedAddressError extends Error {
  /** True when the name resolved to no address at all (nothing was refused). */
  readonly noAddress: boolean;
  readonly code = 'WEBHOOK_ADDRESS_REFUSED';
  constructor(message: string, noAddress = false) {
    super(message);
    this.noAddress = noAddress;
    this.name = 'RefusedAddressError';
  }
}

const GLOBAL_UNICAST = ipaddr.parseCIDR('2000::/3');
const IPV4_COMPATIBLE = ipaddr.parseCIDR('::/96');
/**
 * Prefixes whose addresses carry an IPv4 address, and where: NAT64's well-known prefix (RFC 6052) in the last 32 bits,
 * 6to4 (RFC 3056) in bits 16-47.
 */
const EMBEDDING: Array<{ range: string; prefix: [ipaddr.IPv6, number]; ipv4: (parts: number[]) => number[] }> = [
  {
    range: 'rfc6052',
    prefix: ipaddr.IPv6.parseCIDR('64:ff9b::/96'),
    ipv4: (parts) => [parts[6]! >> 8, parts[6]! & 0xff, parts[7]! >> 8, parts[7]! & 0xff],
  },
  {
    range: '6to4',
    prefix: ipaddr.IPv6.parseCIDR('2002::/16'),
    ipv4: (parts) => [parts[1]! >> 8, parts[1]! & 0xff, parts[2]! >> 8, parts[2]! & 0xff],
  },
];

/**
 * IPv6 text as the connection reads it (WHATWG URL's serialization): ipaddr.js reads `::127.0.0.1` as the
 * IPv4-mapped ::ffff:7f00:1, where it is the IPv4-compatible ::7f00:1. Null when it is not an address.
 */
function canonical(address: string): string | null {
  if (!address.includes(':')) return address;
  try {
    return new URL(`http://[${address}]/`).hostname.slice(1, -1);
  } catch {
    return null;
  }
}

/**
 * The range of an address as the guard judges it: ipaddr.js's name, with the IPv6 forms that carry an IPv4
 * address judged by that address. IPv4-mapped ones are the IPv4 they carry; NAT64 and 6to4 ones are
 * `unicast` when the IPv4 is, else `<form>/<its range>` (`6to4/private`), never loopback. IPv4-compatible
 * addresses (::/96, deprecated by RFC 4291; `[::7f00:1]` is 127.0.0.1 to some stacks) are `ipv4Compatible`,
 * and any other IPv6 address outside global unicast 2000::/3 is `reserved`. `invalid` when it does not parse.
 */
export function addressRange(address: string): string {
  const text = canonical(address);
  if (text === null || !ipaddr.isValid(text)) return 'invalid';
  const parsed = ipaddr.process(text);
  const range = parsed.range();
  if (parsed.kind() === 'ipv4') return range;
  const ipv6 = parsed as ipaddr.IPv6;
  const embedding = EMBEDDING.find((form) => ipv6.match(form.prefix));
  if (embedding) {
    const carried = new ipaddr.IPv4(embedding.ipv4(ipv6.parts)).range();
    return carried === 'unicast' ? 'unicast' : `${embedding.range}/${carried}`;
  }
  if (range !== 'unicast') return range;
  if (ipv6.match(IPV4_COMPATIBLE)) return 'ipv4Compatible';
  return ipv6.match(GLOBAL_UNICAST) ? 'unicast' : 'reserved';
}

export function isAllowedAddress(address: string, rules: AddressRules): boolean {
  const range = addressRange(address);
  if (range === 'invalid') return false;
  return (
    range === 'unicast' || (range === 'loopback' && rules.allowLoopback) || (rules.allowAddress?.(address) ?? false)
  );
}

export type Resolver = (hostname: string) => Promise<Array<{ address: string; family: number }>>;

const systemResolver: Resolver = (hostname) => lookup(hostname, { all: true, verbatim: true });

/** The address to connect to for `hostname` (an IP literal or a name), or RefusedAddressError. */
export async function resolveAllowedAddress(
  hostname: string,
  rules: AddressRules,
  resolve: Resolver = systemResolver,
): Promise<{ address: string; family: 4 | 6 }> {
  const bare = hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
  const addresses = ipaddr.isValid(bare)
    ? [{ address: bare, family: bare.includes(':') ? 6 : 4 }]
    : await resolve(bare);
  if (addresses.length === 0) throw new RefusedAddressError(`${bare} does not resolve to any address`, true);
  const refused = addresses.filter(({ address }) => !isAllowedAddress(address, rules));
  if (refused.length > 0) {
    throw new RefusedAddressError(
      `${bare} resolves to ${refused.map(({ address }) => `${address} (${addressRange(address)})`).join(', ')}: ` +
        'webhooks go only to public addresses',
    );
  }
  const first = addresses[0]!;
  return { address: first.address, family: first.family === 6 ? 6 : 4 };
}

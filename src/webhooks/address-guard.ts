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
 * reserved, and the IPv6 forms that embed an IPv4 address (mapped ones are judged as the IPv4 they carry).
 */
export interface AddressRules {
  allowLoopback: boolean;
  /** WEBHOOK_ALLOWED_PRIVATE_RANGES: addresses allowed whatever their range (a partner over a VPN). */
  allowAddress?: (address: string) => boolean;
}

export class RefusedAddressError extends Error {
  readonly code = 'WEBHOOK_ADDRESS_REFUSED';
  constructor(message: string) {
    super(message);
    this.name = 'RefusedAddressError';
  }
}

/** The ipaddr.js range of an address, IPv4-mapped IPv6 folded to IPv4; `invalid` when it does not parse. */
export function addressRange(address: string): string {
  if (!ipaddr.isValid(address)) return 'invalid';
  return ipaddr.process(address).range();
}

export function isAllowedAddress(address: string, rules: AddressRules): boolean {
  const range = addressRange(address);
  if (range === 'invalid') return false;
  return range === 'unicast' || (range === 'loopback' && rules.allowLoopback) || (rules.allowAddress?.(address) ?? false);
}

export type Resolver = (hostname: string) => Promise<Array<{ address: string; family: number }>>;

const systemResolver: Resolver = (hostname) => lookup(hostname, { all: true, verbatim: true });

/** The address to connect to for `hostname` (an IP literal or a name), or RefusedAddressError. */
export async function resolveAllowedAddress(hostname: string, rules: AddressRules, resolve: Resolver = systemResolver): Promise<{ address: string; family: 4 | 6 }> {
  const bare = hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
  const addresses = ipaddr.isValid(bare) ? [{ address: bare, family: bare.includes(':') ? 6 : 4 }] : await resolve(bare);
  if (addresses.length === 0) throw new RefusedAddressError(`${bare} does not resolve to any address`);
  const refused = addresses.filter(({ address }) => !isAllowedAddress(address, rules));
  if (refused.length > 0) {
    throw new RefusedAddressError(`${bare} resolves to ${refused.map(({ address }) => `${address} (${addressRange(address)})`).join(', ')}: webhooks go only to public addresses`);
  }
  const first = addresses[0]!;
  return { address: first.address, family: first.family === 6 ? 6 : 4 };
}

import ipaddr from 'ipaddr.js';
import { clientAddress, parseIpAddress, unmapped, type IpAddress } from './ip-address.ts';
import { invalidInput } from './errors.ts';

/**
 * An allow-list entry is an IPv4 or IPv6 address or CIDR range. IPv4-mapped IPv6 forms (::ffff:10.0.0.1)
 * are folded to IPv4 both here and when matching, so one entry covers both spellings of an address.
 * Entries and client addresses alike are read strictly (src/domain/ip-address.ts): an allow-list must never
 * mean another address than the one its maker wrote, and `10.1` or `167837955` from a proxy is no client.
 */
type Range = [IpAddress, number];

function parseAddress(text: string): IpAddress {
  const address = parseIpAddress(text);
  if (!address) throw new Error(`not an IP address: ${text}`);
  return address;
}

function parseEntry(entry: string): Range {
  const [addressText = '', bitsText, ...rest] = entry.split('/');
  const address = parseAddress(addressText);
  const full = address.kind() === 'ipv4' ? 32 : 128;
  if (rest.length > 0 || (bitsText !== undefined && !/^\d{1,3}$/.test(bitsText)))
    throw new Error(`bad prefix: ${entry}`);
  const bits = bitsText === undefined ? full : Number(bitsText);
  if (bits > full) throw new Error(`prefix too long: ${entry}`);
  const canonical = unmapped(address);
  // ::ffff:10.0.0.0/104 is 10.0.0.0/8 once folded; a mapped range wider than the IPv4 space is refused.
  const prefix = canonical.kind() !== address.kind() ? bits - 96 : bits;
  if (prefix < 0) throw new Error(`mapped range wider than IPv4: ${entry}`);
  return [canonical, prefix];
}

function networkAddress([address, prefix]: Range): string {
  return address.kind() === 'ipv4'
    ? ipaddr.IPv4.networkAddressFromCIDR(`${address.toString()}/${prefix}`).toString()
    : ipaddr.IPv6.networkAddressFromCIDR(`${address.toString()}/${prefix}`).toString();
}

/** Normalizes an allow-list given as an array or a comma-separated string; refuses any bad entry by name. */
export function parseAllowedIps(field: string, input: string | string[]): string[] {
  const entries = (Array.isArray(input) ? input : input.split(','))
    .map((entry) => entry.trim())
    .filter((entry) => entry.length > 0);
  if (entries.length > 100) throw invalidInput(field, `${field} may list at most 100 entries`);
  return entries.map((entry) => {
    try {
      const range = parseEntry(entry);
      const full = range[0].kind() === 'ipv4' ? 32 : 128;
      // A range is stored by its network address, so that one range has one spelling.
      return range[1] === full ? range[0].toString() : `${networkAddress(range)}/${range[1]}`;
    } catch {
      throw invalidInput(
        field,
        `${field}: "${entry.slice(0, 60)}" is not an IP address or CIDR range (IPv4 as four decimal numbers ` +
          '0-255 such as 10.0.0.0/8, IPv6 such as 2001:db8::/32)',
      );
    }
  });
}

/** A compiled allow-list: an empty list allows every address; a client address not strictly an address, none. */
export function compileAllowList(entries: string[]): (ip: string) => boolean {
  if (entries.length === 0) return () => true;
  // An entry stored before entries were read strictly and no longer readable allows nothing (fails closed).
  const ranges = entries.flatMap((entry) => {
    try {
      return [parseEntry(entry)];
    } catch {
      return [];
    }
  });
  return (ip) => {
    const address = clientAddress(ip);
    return (
      address !== null && ranges.some(([range, bits]) => range.kind() === address.kind() && address.match(range, bits))
    );
  };
}

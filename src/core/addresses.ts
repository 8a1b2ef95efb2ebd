// Client addresses: which one a request counts against, in one canonical spelling, and grouped.
// ipaddr.js parses them; `node:net`'s `isIP` runs first to reject forms that ipaddr.js accepts
// but no socket or proxy writes (`010.1.1.1`, `1.2.3`, `0x7f.1`).
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

/**
 * IPv6 clients are counted by their /56 unless `--ipv6-prefix` says otherwise (as
 * express-rate-limit does).
 */
export const DEFAULT_IPV6_PREFIX = 56;

type Address = ipaddr.IPv4 | ipaddr.IPv6;

/**
 * Returns a canonical dotted quad (`203.0.113.5`: four parts of 0-255, no leading zeros) as an
 * unsigned 32-bit number, or -1 for anything else, which then goes through ipaddr.js. Most peers
 * and forwarded hops are written this way, and this parse does not allocate
 * (bench/README.md#measured-costs-behind-the-codes-choices).
 */
function canonicalQuad(text: string): number {
  if (text.length > 15) return -1;
  let value = 0;
  let part = 0;
  let digits = 0;
  let dots = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 46) {
      if (digits === 0 || dots === 3) return -1;
      value = value * 256 + part;
      part = 0;
      digits = 0;
      dots++;
    } else if (c >= 48 && c <= 57) {
      if (digits > 0 && part === 0) return -1;
      part = part * 10 + (c - 48);
      digits++;
      if (part > 255) return -1;
    } else {
      return -1;
    }
  }
  return dots === 3 && digits > 0 ? value * 256 + part : -1;
}

/** Parses an address, IPv4-mapped IPv6 as IPv4 and without a zone id; undefined if it is none. */
function parse(text: string): Address | undefined {
  if (isIP(text) === 0) return undefined;
  const address = ipaddr.process(text);
  return address.kind() === 'ipv6' ? new ipaddr.IPv6((address as ipaddr.IPv6).parts) : address;
}

/**
 * Returns an address's canonical spelling: IPv4-mapped IPv6 as IPv4, IPv6 in RFC 5952 form (lower
 * case, zeros compressed) without a zone id. Anything that is not an address is returned as is.
 *
 * @example
 * canonicalAddress('2001:DB8:0:0::5%eth0') // '2001:db8::5'
 * canonicalAddress('::ffff:203.0.113.5') // '203.0.113.5'
 */
export function canonicalAddress(text: string): string {
  if (canonicalQuad(text) >= 0) return text;
  const address = parse(text);
  if (!address) return text;
  return address.kind() === 'ipv6' ? (address as ipaddr.IPv6).toRFC5952String() : address.toString();
}

/**
 * Returns the client a canonical address counts as: an IPv4 address by itself, an IPv6 address
 * by its first `ipv6Prefix` bits (`2001:db8:0:100::/56`); a prefix of 128 counts each IPv6 address
 * by itself.
 *
 * @example
 * addressGroup('2001:db8:0:1ff::9', 56) // '2001:db8:0:100::/56'
 * addressGroup('203.0.113.5', 56) // '203.0.113.5'
 */
export function addressGroup(canonical: string, ipv6Prefix: number = DEFAULT_IPV6_PREFIX): string {
  if (ipv6Prefix >= 128 || !canonical.includes(':')) return canonical;
  const address = parse(canonical);
  if (address?.kind() !== 'ipv6') return canonical;
  const bytes = address.toByteArray();
  for (let bit = ipv6Prefix; bit < 128; bit++) {
    const i = bit >> 3;
    bytes[i] = (bytes[i] as number) & ~(0x80 >> (bit & 7));
  }
  return `${(ipaddr.fromByteArray(bytes) as ipaddr.IPv6).toRFC5952String()}/${ipv6Prefix}`;
}

/**
 * Decides which address a request counts against, in canonical form: the socket peer, or, when
 * the peer is a trusted proxy, the rightmost X-Forwarded-For entry that is not itself a trusted
 * proxy (the peer if an entry on the way is not an address; the leftmost if all are trusted). A
 * block and an address match however either is written (`::ffff:127.0.0.1/128` trusts the peer
 * `127.0.0.1` and the other way round).
 *
 * @example
 * const trust = new TrustedProxies(['10.0.0.0/8'])
 * trust.clientAddress('10.1.2.3', '203.0.113.9, 10.0.0.7') // '203.0.113.9'
 */
export class TrustedProxies {
  readonly #blocks: readonly [Address, number][];
  /** The IPv4 blocks as unsigned 32-bit [network, mask] pairs, for the dotted-quad fast path. */
  readonly #quads: readonly [number, number][];

  /** Throws `TypeError` naming the entry when a CIDR is malformed. */
  constructor(cidrs: readonly string[]) {
    this.#blocks = cidrs.map(parseCidr);
    this.#quads = this.#blocks.flatMap(([base, bits]) => {
      if (base.kind() !== 'ipv4') return [];
      const mask = bits === 0 ? 0 : (0xffffffff << (32 - bits)) >>> 0;
      const network = base.toByteArray().reduce((n, byte) => n * 256 + byte, 0);
      return [[(network & mask) >>> 0, mask] as [number, number]];
    });
  }

  get size(): number {
    return this.#blocks.length;
  }

  trusts(address: string): boolean {
    const quad = canonicalQuad(address);
    if (quad >= 0) return this.#quads.some(([network, mask]) => (quad & mask) >>> 0 === network);
    const parsed = parse(address);
    if (!parsed) return false;
    return this.#blocks.some(([base, bits]) => base.kind() === parsed.kind() && parsed.match(base, bits));
  }

  clientAddress(peer: string, forwardedFor: string | undefined): string {
    const client = canonicalAddress(peer);
    if (!forwardedFor || !this.trusts(peer)) return client;
    const hops = forwardedFor.split(',').map((h) => h.trim());
    for (let i = hops.length - 1; i >= 0; i--) {
      const hop = hops[i] as string;
      if (isIP(hop) === 0) return client;
      if (!this.trusts(hop)) return canonicalAddress(hop);
    }
    return canonicalAddress(hops[0] || peer);
  }
}

/** Parses a block into an address and a prefix length; an IPv4-mapped IPv6 block becomes IPv4. */
function parseCidr(cidr: string): [Address, number] {
  const [text = '', bitsText] = cidr.split('/');
  const address = isIP(text) === 0 ? undefined : ipaddr.parse(text);
  const width = address?.kind() === 'ipv4' ? 32 : 128;
  const bits = bitsText === undefined ? width : Number(bitsText);
  // A "/" must be followed by a prefix length: "10.0.0.0/" is a typo, not /0 (trust everyone).
  if (!address || (bitsText !== undefined && !/^[0-9]{1,3}$/.test(bitsText)) || bits < 0 || bits > width) {
    throw new TypeError(`--trust-proxy: "${cidr}" is not an IPv4 or IPv6 CIDR block`);
  }
  if (address.kind() === 'ipv6') {
    const v6 = new ipaddr.IPv6((address as ipaddr.IPv6).parts);
    if (v6.isIPv4MappedAddress() && bits >= 96) return [v6.toIPv4Address(), bits - 96];
    return [v6, bits];
  }
  return [address, bits];
}

import { isIP } from 'node:net';

/** One CIDR block, as two bigints, so IPv4 and IPv6 share one comparison. */
interface Block {
  readonly version: 4 | 6;
  readonly base: bigint;
  readonly mask: bigint;
}

/**
 * Decides which address a request counts against: the socket peer, or, when the peer is a
 * trusted proxy, the rightmost X-Forwarded-For entry that is not itself a trusted proxy.
 *
 * @example
 * const trust = new TrustedProxies(['10.0.0.0/8'])
 * trust.clientAddress('10.1.2.3', '203.0.113.9, 10.0.0.7') // '203.0.113.9'
 */
export class TrustedProxies {
  #blocks: Block[];

  /** Throws `TypeError` naming the entry when a CIDR is malformed. */
  constructor(cidrs: readonly string[]) {
    this.#blocks = cidrs.map(parseCidr);
  }

  get size(): number {
    return this.#blocks.length;
  }

  trusts(address: string): boolean {
    const parsed = toBigInt(address);
    if (!parsed) return false;
    return this.#blocks.some((b) => b.version === parsed.version && (parsed.value & b.mask) === b.base);
  }

  clientAddress(peer: string, forwardedFor: string | undefined): string {
    if (!forwardedFor || !this.trusts(peer)) return peer;
    const hops = forwardedFor.split(',').map((h) => h.trim());
    for (let i = hops.length - 1; i >= 0; i--) {
      const hop = hops[i] as string;
      if (isIP(hop) === 0) return peer;
      if (!this.trusts(hop)) return hop;
    }
    return hops[0] || peer;
  }
}

function parseCidr(cidr: string): Block {
  const [addr = '', bitsText] = cidr.split('/');
  const parsed = toBigInt(addr);
  const width = parsed?.version === 4 ? 32 : 128;
  const bits = bitsText === undefined ? width : Number(bitsText);
  // A "/" must be followed by a prefix length: "10.0.0.0/" is a typo, not /0 (trust everyone).
  if (!parsed || (bitsText !== undefined && !/^[0-9]{1,3}$/.test(bitsText)) || bits < 0 || bits > width) {
    throw new TypeError(`--trust-proxy: "${cidr}" is not an IPv4 or IPv6 CIDR block`);
  }
  const all = (1n << BigInt(width)) - 1n;
  const mask = all ^ ((1n << BigInt(width - bits)) - 1n);
  return { version: parsed.version, base: parsed.value & mask, mask };
}

function toBigInt(address: string): { version: 4 | 6; value: bigint } | undefined {
  const plain = address.startsWith('::ffff:') && isIP(address.slice(7)) === 4 ? address.slice(7) : address;
  const version = isIP(plain);
  if (version === 4) {
    return { version: 4, value: plain.split('.').reduce((acc, part) => (acc << 8n) | BigInt(Number(part)), 0n) };
  }
  // Other IPv4-embedded forms are not compared: they are never a proxy's socket address.
  if (version !== 6 || plain.includes('.')) return undefined;
  const [head = '', tail] = plain.split('::');
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const words = [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right];
  return { version: 6, value: words.reduce((acc, w) => (acc << 16n) | BigInt(Number.parseInt(w || '0', 16)), 0n) };
}

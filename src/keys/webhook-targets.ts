// Where a webhook may be sent: a public address over `https://`, or loopback over `http://` for
// testing. The URL is checked when configured, and each address its host resolves to is checked
// again at every connection. So a name that resolves inside the network, even after a first good
// answer (DNS rebinding), reaches nothing there. `--webhook-allow-cidr` allows named private
// ranges; SECURITY.md says why.
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

/** Longest webhook URL accepted, in characters. */
const WEBHOOK_URL_MAX = 2048;

/**
 * Characters a URL never needs and a reader can be misled by: C0 and C1 controls, bidirectional
 * marks, embeddings and isolates (U+202E turns text around), line and paragraph separators
 * (a line-based reader splits records at U+2028), zero-width and other invisible characters.
 */
const UNSEEN =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: refusing control characters is the point
  /[\u0000-\u001f\u007f-\u009f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\ufeff]/u;

/** The host names that mean this machine: a receiver on loopback, for testing. */
const LOOPBACK_NAMES = new Set(['localhost']);

type Address = ipaddr.IPv4 | ipaddr.IPv6;

/** ipaddr.js's range names as the words that describe a non-public address in a message. */
const RANGE_WORDS: Readonly<Record<string, string>> = {
  unspecified: 'an unspecified',
  broadcast: 'a broadcast',
  multicast: 'a multicast',
  linkLocal: 'a link-local',
  loopback: 'a loopback',
  carrierGradeNat: 'a carrier-grade NAT',
  private: 'a private',
  uniqueLocal: 'a unique-local',
  ipv4Mapped: 'an IPv4-mapped',
  reserved: 'a reserved',
};

/**
 * Why `text` may not be configured as a webhook URL, in the keys file's words (`must …`), or
 * undefined when it may. Host names are checked where they resolve, at send time.
 *
 * @example
 * webhookUrlProblem('https://hooks.example/q') // undefined
 * webhookUrlProblem('https://169.254.169.254/latest/meta-data/') // 'must not point at a link-local address (169.254.169.254): …'
 */
export function webhookUrlProblem(text: string): string | undefined {
  if (text.length > WEBHOOK_URL_MAX) return `must be at most ${WEBHOOK_URL_MAX} characters`;
  if (UNSEEN.test(text)) return 'must not hold control, bidirectional or invisible characters';
  const authority = /^https?:\/\/([^/?#]*)/i.exec(text)?.[1];
  if (authority === undefined || !URL.canParse(text)) {
    return 'must be an https:// URL, or http:// to a loopback address (127.0.0.1, [::1], localhost)';
  }
  if (authority === '' || authority.includes('@') || text.includes('\\')) {
    return 'must name a host after "//", with no user name, password or backslash';
  }
  const url = new URL(text);
  const host = url.hostname;
  const literal = literalOf(host);
  if (literal === undefined) {
    if (LOOPBACK_NAMES.has(host) || url.protocol === 'https:') return undefined;
    return 'must be an https:// URL, or http:// to a loopback address (127.0.0.1, [::1], localhost)';
  }
  // A URL parser reads `https://2852039166/` as 169.254.169.254, which a person reading it would
  // not: an IPv4 address must be written as four decimal numbers.
  if (literal.kind() === 'ipv4' && authority.replace(/:\d*$/, '').toLowerCase() !== host) {
    return `must write an IPv4 address as four decimal numbers (${host}), not as one number, octal or hex`;
  }
  const range = literal.range();
  if (range === 'loopback') return undefined;
  if (range !== 'unicast') return `must not point at ${describeRange(range)} address (${host}): ${PUBLIC_ONLY}`;
  return url.protocol === 'https:' ? undefined : 'must be https:// to an address other than loopback';
}

const PUBLIC_ONLY = 'webhooks go to public addresses, or http:// to loopback';

/**
 * The URL as it is kept and sent: WHATWG-normalised (a punycode host, percent-encoded path).
 * Only for a URL `webhookUrlProblem` accepts.
 *
 * @example
 * normalWebhookUrl('https://BÜCHER.example/q') // 'https://xn--bcher-kva.example/q'
 */
export function normalWebhookUrl(text: string): string {
  return new URL(text).href;
}

/**
 * CIDR blocks of private addresses an operator lets webhooks reach (`--webhook-allow-cidr`).
 * Throws `TypeError` naming a block that is not one.
 *
 * @example
 * const allowed = new AllowedRanges(['10.20.0.0/16'])
 * allowed.has('10.20.1.2') // true
 */
export class AllowedRanges {
  readonly #blocks: readonly [Address, number][];

  constructor(cidrs: readonly string[]) {
    this.#blocks = cidrs.map((cidr) => {
      if (!isCidrBlock(cidr)) {
        throw new TypeError(`--webhook-allow-cidr: "${cidr}" is not an IPv4 or IPv6 CIDR block such as 10.20.0.0/16`);
      }
      return ipaddr.parseCIDR(cidr);
    });
  }

  has(address: string): boolean {
    const parsed = addressOf(address);
    return (
      parsed !== undefined &&
      this.#blocks.some(([base, bits]) => base.kind() === parsed.kind() && parsed.match(base, bits))
    );
  }
}

/**
 * Why an attempt for `host` may not connect to `address` (one its name resolved to), or
 * undefined when it may: a public address, one in an allowed range, or loopback for a host
 * written as loopback (`localhost`, `127.0.0.1`, `[::1]`).
 *
 * @example
 * targetProblem('hooks.example', '10.0.0.7', new AllowedRanges([])) // 'hooks.example resolves to 10.0.0.7, a private address; …'
 */
export function targetProblem(host: string, address: string, allowed: AllowedRanges): string | undefined {
  const parsed = addressOf(address);
  if (!parsed) return `${host} resolves to ${address}, which is not an IP address`;
  const range = parsed.range();
  if (range === 'unicast' || allowed.has(address)) return undefined;
  if (range === 'loopback' && (LOOPBACK_NAMES.has(host) || literalOf(host)?.range() === 'loopback')) return undefined;
  return `${host} resolves to ${parsed.toString()}, ${describeRange(range)} address; ${PUBLIC_ONLY} (allow a private range with --webhook-allow-cidr)`;
}

/**
 * True for an IPv4 or IPv6 CIDR block written out (`10.20.0.0/16`, `fd12::/48`).
 *
 * @example
 * isCidrBlock('10.20.0.0/16') // true
 * isCidrBlock('10.20.0.0') // false
 */
export function isCidrBlock(text: string): boolean {
  return /^[0-9a-fA-F.:]+\/[0-9]{1,3}$/.test(text) && ipaddr.isValidCIDR(text) && isIP(text.split('/')[0] ?? '') !== 0;
}

/** `host` (a URL's hostname, IPv6 in brackets) as an address, or undefined for a name. */
function literalOf(host: string): Address | undefined {
  const bare = host.startsWith('[') ? host.slice(1, -1) : host;
  return isIP(bare) === 0 ? undefined : ipaddr.parse(bare);
}

/** Parses an address as a resolver gives it; an IPv4-mapped IPv6 address becomes its IPv4 one. */
function addressOf(text: string): Address | undefined {
  return isIP(text) === 0 ? undefined : ipaddr.process(text);
}

function describeRange(range: string): string {
  return RANGE_WORDS[range] ?? `a ${range}`;
}

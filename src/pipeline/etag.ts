// The weak entity tags of bodies, and the `If-None-Match` test that answers 304.

/**
 * Returns a weak entity tag of a body and its other parts: the first 64 bits of MurmurHash3 x86_128
 * (seed 0) of the parts, each followed by a newline, as hex. It is weak because the same JSON is
 * sent plain, gzip or br. The hash is implemented here rather than taken from a runtime, so Bun,
 * Deno, Node and every instance give a body the same tag (`etag.test.ts` checks it).
 *
 * @example
 * weakEtagOf('[{"id":1}]') // 'W/"…"' (16 hex digits)
 * weakEtagOf(page, '<pets?cursor=k>; rel="next"') // the Link is part of the page
 */
export function weakEtagOf(...parts: string[]): string {
  return `W/"${murmur3x86_64(`${parts.join('\n')}\n`)}"`;
}

const encoder = new TextEncoder();
/** Reused by every hash; grows to fit the largest body seen, at 3 bytes per UTF-16 unit. */
let scratch = new Uint8Array(16_384);
/** The same bytes as 32-bit words, read in one load each where the platform is little-endian. */
let words = new Int32Array(scratch.buffer);
const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;

const C1 = 0x239b961b;
const C2 = 0xab0e9789;
const C3 = 0x38b34ae5;
const C4 = 0xa1e38b93;

const rotl = (x: number, r: number) => (x << r) | (x >>> (32 - r));

function fmix(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return h ^ (h >>> 16);
}

/** Returns the little-endian 32-bit word of `b` at `i`. */
const word = (b: Uint8Array, i: number) =>
  (b[i] as number) | ((b[i + 1] as number) << 8) | ((b[i + 2] as number) << 16) | ((b[i + 3] as number) << 24) | 0;

/** Returns the 32-bit value `h` as 8 hex digits of its little-endian bytes. */
function hexLE(h: number): string {
  const be = ((h & 0xff) << 24) | (((h >>> 8) & 0xff) << 16) | (((h >>> 16) & 0xff) << 8) | ((h >>> 24) & 0xff);
  return (be >>> 0).toString(16).padStart(8, '0');
}

/**
 * Returns MurmurHash3 x86_128 of `text`'s UTF-8 (seed 0): its first two 32-bit words (h1, h2), as
 * the hex of their 8 bytes.
 *
 * @example
 * murmur3x86_64('') // '0000000000000000'
 */
export function murmur3x86_64(text: string): string {
  if (scratch.length < text.length * 3) {
    scratch = new Uint8Array((text.length * 3 + 15) & ~15);
    words = new Int32Array(scratch.buffer);
  }
  const b = scratch;
  const w = words;
  const len = encoder.encodeInto(text, b).written;
  let h1 = 0;
  let h2 = 0;
  let h3 = 0;
  let h4 = 0;
  const blocks = len - (len & 15);
  for (let i = 0; i < blocks; i += 16) {
    const at = i >> 2;
    let k1 = LITTLE_ENDIAN ? (w[at] as number) : word(b, i);
    let k2 = LITTLE_ENDIAN ? (w[at + 1] as number) : word(b, i + 4);
    let k3 = LITTLE_ENDIAN ? (w[at + 2] as number) : word(b, i + 8);
    let k4 = LITTLE_ENDIAN ? (w[at + 3] as number) : word(b, i + 12);
    k1 = Math.imul(rotl(Math.imul(k1, C1), 15), C2);
    h1 ^= k1;
    h1 = (Math.imul(rotl(h1, 19) + h2, 5) + 0x561ccd1b) | 0;
    k2 = Math.imul(rotl(Math.imul(k2, C2), 16), C3);
    h2 ^= k2;
    h2 = (Math.imul(rotl(h2, 17) + h3, 5) + 0x0bcaa747) | 0;
    k3 = Math.imul(rotl(Math.imul(k3, C3), 17), C4);
    h3 ^= k3;
    h3 = (Math.imul(rotl(h3, 15) + h4, 5) + 0x96cd1c35) | 0;
    k4 = Math.imul(rotl(Math.imul(k4, C4), 18), C1);
    h4 ^= k4;
    h4 = (Math.imul(rotl(h4, 13) + h1, 5) + 0x32ac3b17) | 0;
  }
  // The tail: up to 15 bytes, into k4..k1 from the highest byte down (MurmurHash3's switch).
  const rest = len & 15;
  let k1 = 0;
  let k2 = 0;
  let k3 = 0;
  let k4 = 0;
  for (let j = rest - 1; j >= 0; j--) {
    const byte = (b[blocks + j] as number) << ((j & 3) * 8);
    if (j >= 12) k4 ^= byte;
    else if (j >= 8) k3 ^= byte;
    else if (j >= 4) k2 ^= byte;
    else k1 ^= byte;
  }
  if (rest > 12) h4 ^= Math.imul(rotl(Math.imul(k4, C4), 18), C1);
  if (rest > 8) h3 ^= Math.imul(rotl(Math.imul(k3, C3), 17), C4);
  if (rest > 4) h2 ^= Math.imul(rotl(Math.imul(k2, C2), 16), C3);
  if (rest > 0) h1 ^= Math.imul(rotl(Math.imul(k1, C1), 15), C2);

  h1 ^= len;
  h2 ^= len;
  h3 ^= len;
  h4 ^= len;
  h1 = (h1 + h2 + h3 + h4) | 0;
  h2 = (h2 + h1) | 0;
  h3 = (h3 + h1) | 0;
  h4 = (h4 + h1) | 0;
  h1 = fmix(h1);
  h2 = fmix(h2);
  h3 = fmix(h3);
  h4 = fmix(h4);
  h1 = (h1 + h2 + h3 + h4) | 0;
  h2 = (h2 + h1) | 0;
  return hexLE(h1) + hexLE(h2);
}

/**
 * Returns whether an `If-None-Match` value matches `etag` by weak comparison (RFC 9110 section
 * 13.1.2): `*`, or any listed tag with the same opaque part, `W/` or not.
 *
 * @example
 * notModified('W/"a", "b"', '"b"') // true
 * notModified(undefined, '"b"') // false
 */
export function notModified(ifNoneMatch: string | undefined, etag: string): boolean {
  if (!ifNoneMatch) return false;
  if (ifNoneMatch.trim() === '*') return true;
  const opaque = etag.startsWith('W/') ? etag.slice(2) : etag;
  for (const raw of ifNoneMatch.split(',')) {
    const tag = raw.trim();
    if ((tag.startsWith('W/') ? tag.slice(2) : tag) === opaque) return true;
  }
  return false;
}

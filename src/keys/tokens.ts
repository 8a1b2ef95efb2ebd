// API tokens: `newToken()` makes one (`psk_`, random base62 characters, a CRC32 checksum), and
// `plausibleToken()` refuses a mistyped one by its checksum before any hash or look-up.
// `newKeyEntry()` pairs a fresh token with the keys-file entry that holds its hash.
import { randomBytes } from 'node:crypto';
import type { PlanName } from './plans.ts';
import { hashToken } from './records.ts';

/** Every token starts with this, so a leaked one is recognisable in code, logs and scanners. */
export const TOKEN_PREFIX = 'psk_';

/** The base62 digits, in order of value. */
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
/** Random base62 characters after the prefix: 32 × log2(62) ≈ 190 bits. */
const RANDOM_CHARS = 32;
/** Base62 digits of the CRC32 checksum: 62^6 > 2^32, so every checksum fits. */
const CHECK_CHARS = 6;
/** Largest byte value that maps onto base62 without bias (4 × 62 = 248). */
const UNBIASED_BELOW = 248;

/**
 * The shape of a token made by `newToken`: what a secret scanner looks for, and what the
 * gateway checks (by its checksum) before hashing or looking anything up.
 */
export const CHECKED_TOKEN = /^psk_[0-9A-Za-z]{38}$/;
const CHECKED_LENGTH = TOKEN_PREFIX.length + RANDOM_CHARS + CHECK_CHARS;

export type RandomSource = (size: number) => Uint8Array;

/** The CRC32 table of IEEE 802.3 (reflected polynomial 0xEDB88320), as zlib computes it. */
const CRC_TABLE = Uint32Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

/**
 * CRC32 of an ASCII string, equal to zlib's `crc32` of its bytes (node:zlib lacks it before
 * Node 20.15, so it is computed here).
 *
 * @example
 * crc32('123456789') // 0xcbf43926
 */
export function crc32(ascii: string, length = ascii.length): number {
  let crc = 0xffffffff;
  for (let i = 0; i < length; i++) crc = (CRC_TABLE[(crc ^ ascii.charCodeAt(i)) & 0xff] as number) ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

/** CRC32's running state after `psk_`: the check of every checksummed token starts from it. */
const PREFIX_CRC_STATE = (crc32(TOKEN_PREFIX) ^ 0xffffffff) >>> 0;

/** The value of each base62 digit by its character code; -1 for any other character. */
const DIGIT_VALUE = Int8Array.from({ length: 128 }, (_, code) => BASE62.indexOf(String.fromCharCode(code)));

/**
 * The checksum a token carries after its random part: CRC32 of everything before it in base62,
 * most significant digit first, left-padded with `0` to 6 digits.
 *
 * @example
 * checksum('psk_') // '1mD87s'
 */
export function checksum(text: string): string {
  let n = crc32(text);
  let digits = '';
  for (let i = 0; i < CHECK_CHARS; i++) {
    digits = BASE62[n % 62] + digits;
    n = Math.floor(n / 62);
  }
  return digits;
}

/**
 * Whether a presented token could be a key. A token of `newToken`'s shape must carry a valid
 * checksum, so a typo or a made-up token is refused without hashing. Any other shape (older tokens
 * without a checksum: `psk_` and 43 base64url characters) is left to the lookup.
 *
 * @example
 * plausibleToken(newToken()) // true
 * plausibleToken('psk_' + 'A'.repeat(38)) // false
 */
export function plausibleToken(token: string): boolean {
  // Runs on every presented token: one pass, no regular expression, no new strings.
  if (token.length !== CHECKED_LENGTH || !token.startsWith(TOKEN_PREFIX)) return true;
  let crc = PREFIX_CRC_STATE;
  for (let i = TOKEN_PREFIX.length; i < CHECKED_LENGTH - CHECK_CHARS; i++) {
    const code = token.charCodeAt(i);
    if (!((DIGIT_VALUE[code] ?? -1) >= 0)) return true; // another shape: left to the lookup
    crc = (CRC_TABLE[(crc ^ code) & 0xff] as number) ^ (crc >>> 8);
  }
  let written = 0;
  for (let i = CHECKED_LENGTH - CHECK_CHARS; i < CHECKED_LENGTH; i++) {
    const digit = DIGIT_VALUE[token.charCodeAt(i)] ?? -1;
    if (digit < 0) return true;
    written = written * 62 + digit;
  }
  return written === (crc ^ 0xffffffff) >>> 0;
}

/**
 * A new API token: the prefix, 32 base62 characters from the CSPRNG (bytes of 248 and above are
 * drawn again, so every character is equally likely) and the 6-character checksum.
 *
 * @example
 * newToken() // 'psk_7Qe2…' (42 characters)
 */
export function newToken(random: RandomSource = randomBytes): string {
  let body = TOKEN_PREFIX;
  while (body.length < TOKEN_PREFIX.length + RANDOM_CHARS) {
    for (const byte of random(RANDOM_CHARS)) {
      if (byte >= UNBIASED_BELOW) continue;
      body += BASE62[byte % 62];
      if (body.length === TOKEN_PREFIX.length + RANDOM_CHARS) break;
    }
  }
  return body + checksum(body);
}

/** A fresh token and the keys-file entry that admits it (which holds only the hash). */
export function newKeyEntry(name: string, plan: PlanName, random: RandomSource = randomBytes) {
  const token = newToken(random);
  return { token, entry: { name, sha256: hashToken(token).toString('hex'), plan } };
}

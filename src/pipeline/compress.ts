// Step 8's compression: the coding an `Accept-Encoding` admits (`preferredCoding()`), whether an
// answer may be compressed (`compressible()`), and its brotli or gzip bytes (`compressed()`).
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';
import type { Coding } from '../core/reply.ts';

/** JSON answers from this size on are compressed; smaller ones gain too little to pay for it. */
export const MIN_COMPRESSED_BYTES = 1024;

/**
 * Brotli quality 2 and gzip level 6: a higher Brotli quality makes a page barely smaller and costs
 * several times the rest of the request (bench/README.md#measured-costs-behind-the-codes-choices).
 * Synchronous, because the bodies are small (100 pets at most) and already complete.
 */
const BROTLI = { params: { [constants.BROTLI_PARAM_QUALITY]: 2 } };
const GZIP_LEVEL = 6;

/**
 * Returns whether an `Accept-Encoding` value admits `coding` (RFC 9110 section 12.5.3): named with
 * a non-zero weight, or not named and `*` has one; x-gzip is gzip.
 *
 * @example
 * accepts('br;q=0, *', 'gzip') // true
 * accepts('br', 'gzip') // false
 */
export function accepts(header: string | undefined, coding: Coding): boolean {
  if (!header) return false;
  const weights = new Map<string, number>();
  for (const part of header.split(',')) {
    const [name = '', ...params] = part.split(';').map((s) => s.trim().toLowerCase());
    const q = params.find((p) => p.startsWith('q='));
    const weight = q === undefined ? 1 : Number(q.slice(2));
    weights.set(name === 'x-gzip' ? 'gzip' : name, Number.isFinite(weight) ? weight : 0);
  }
  return (weights.get(coding) ?? weights.get('*') ?? 0) > 0;
}

/**
 * Returns the coding to send for an `Accept-Encoding` value: br when it is admitted, else gzip,
 * else none (`accepts`).
 *
 * @example
 * preferredCoding('gzip, deflate, br') // 'br'
 * preferredCoding('br;q=0, *') // 'gzip'
 */
export function preferredCoding(header: string | undefined): Coding | undefined {
  if (accepts(header, 'br')) return 'br';
  if (accepts(header, 'gzip')) return 'gzip';
  return undefined;
}

/**
 * Returns `bytes` encoded in `coding`; `compressed()` calls it.
 *
 * @example
 * encode(new TextEncoder().encode('{"a":1}'), 'gzip')
 */
function encode(bytes: Uint8Array, coding: Coding): Uint8Array<ArrayBuffer> {
  if (coding === 'gzip') return new Uint8Array(gzipSync(bytes, { level: GZIP_LEVEL }));
  const params = { ...BROTLI.params, [constants.BROTLI_PARAM_SIZE_HINT]: bytes.length };
  return new Uint8Array(brotliCompressSync(bytes, { params }));
}

/**
 * Returns whether an answer may be sent compressed, and so varies by `Accept-Encoding`: only a
 * successful JSON answer. Errors stay uncompressed so that any log can read them.
 *
 * @example
 * compressible(200, 'application/json') // true
 */
export function compressible(status: number, contentType: string | null | undefined): boolean {
  return status >= 200 && status < 300 && contentType?.startsWith('application/json') === true;
}

/**
 * Returns `bytes` encoded in `coding` when there is a coding and they are `MIN_COMPRESSED_BYTES` or
 * more, else undefined (sent as they are).
 *
 * @example
 * compressed(bytes, preferredCoding(acceptEncoding)) ?? bytes
 */
export function compressed(bytes: Uint8Array, coding: Coding | undefined): Uint8Array<ArrayBuffer> | undefined {
  return coding && bytes.length >= MIN_COMPRESSED_BYTES ? encode(bytes, coding) : undefined;
}

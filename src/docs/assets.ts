import { createHash } from 'node:crypto';
import { gunzipSync } from 'node:zlib';
import type { Context } from 'hono';

/** Cache lifetime of a content-addressed asset: a year, never revalidated (RFC 8246). */
export const IMMUTABLE = 'public, max-age=31536000, immutable';

/** Where the page's assets live; each name carries a content hash, so a new build gets new URLs. */
export const ASSETS_PATH = '/docs/assets';

/**
 * Whether an `Accept-Encoding` value admits gzip (RFC 9110 §12.5.3): `gzip` or `x-gzip` with a
 * non-zero weight, or `*` with a non-zero weight when gzip is not listed itself.
 *
 * @example
 * acceptsGzip('gzip, deflate, br') // true
 * acceptsGzip('gzip;q=0, *') // false
 */
export function acceptsGzip(header: string | undefined): boolean {
  if (!header) return false;
  let wildcard = false;
  for (const part of header.split(',')) {
    const [coding = '', ...params] = part.split(';').map((s) => s.trim().toLowerCase());
    const q = params.find((p) => p.startsWith('q='));
    const weight = q === undefined ? 1 : Number(q.slice(2));
    const admitted = Number.isFinite(weight) && weight > 0;
    if (coding === 'gzip' || coding === 'x-gzip') return admitted;
    if (coding === '*') wildcard = admitted;
  }
  return wildcard;
}

/** First 16 hex digits of the SHA-256 of `body`: short enough for a URL, long enough not to collide. */
export function contentHash(body: string | Uint8Array): string {
  return createHash('sha256').update(body).digest('hex').slice(0, 16);
}

/**
 * An asset held gzipped in the binary, exactly once: gzip-accepting clients get those bytes as
 * they are, the others get them gunzipped on the fly (rare: every browser accepts gzip).
 */
export class GzipAsset {
  /** URL path, ending in the content hash. */
  readonly path: string;
  readonly contentType: string;
  readonly #base64: string;
  /** Decoded on first use, so start-up does not pay for a page nobody opened. */
  #gzip: Uint8Array<ArrayBuffer> | undefined;

  constructor({
    name,
    ext,
    hash,
    contentType,
    gzipBase64,
  }: { name: string; ext: string; hash: string; contentType: string; gzipBase64: string }) {
    this.path = `${ASSETS_PATH}/${name}.${hash.slice(0, 16)}.${ext}`;
    this.contentType = contentType;
    this.#base64 = gzipBase64;
  }

  #plain: Uint8Array<ArrayBuffer> | undefined;

  get gzip(): Uint8Array<ArrayBuffer> {
    this.#gzip ??= new Uint8Array(Buffer.from(this.#base64, 'base64'));
    return this.#gzip;
  }

  /** Answers the request with the gzip bytes or, when the client does not accept gzip, the plain ones. */
  respond(c: Context): Response {
    const headers: Record<string, string> = {
      'Content-Type': this.contentType,
      'Cache-Control': IMMUTABLE,
      Vary: 'Accept-Encoding',
      'X-Content-Type-Options': 'nosniff',
    };
    if (acceptsGzip(c.req.header('accept-encoding'))) {
      return c.body(this.gzip, 200, { ...headers, 'Content-Encoding': 'gzip' });
    }
    // Inflated once, on the first client without gzip: inflating 3.5 MB per request would let
    // anyone without a key stall the event loop for every API caller.
    this.#plain ??= new Uint8Array(gunzipSync(this.gzip));
    return c.body(this.#plain, 200, headers);
  }
}

/** A small text asset (the page's start-up script, its icon) under a content-hashed path. */
export class TextAsset {
  readonly path: string;
  readonly #body: string;
  readonly #contentType: string;

  constructor({ name, ext, contentType, body }: { name: string; ext: string; contentType: string; body: string }) {
    this.path = `${ASSETS_PATH}/${name}.${contentHash(body)}.${ext}`;
    this.#body = body;
    this.#contentType = contentType;
  }

  respond(c: Context): Response {
    return c.body(this.#body, 200, {
      'Content-Type': this.#contentType,
      'Cache-Control': IMMUTABLE,
      'X-Content-Type-Options': 'nosniff',
    });
  }
}

import { createHash } from 'node:crypto';
import { gunzipSync } from 'node:zlib';
import type { Context } from 'hono';
import { preferredCoding } from '../http/compress.ts';
import { notModified } from '../http/etag.ts';

/** Cache lifetime of a content-addressed asset: a year, never revalidated (RFC 8246). */
export const IMMUTABLE = 'public, max-age=31536000, immutable';

/** Where the page's assets live; each name carries a content hash, so a new build gets new URLs. */
export const ASSETS_PATH = '/docs/assets';

/** Headers of every asset: cached for good, loadable by any page or tool (public, no credentials). */
const ASSET_HEADERS = {
  'Cache-Control': IMMUTABLE,
  'Access-Control-Allow-Origin': '*',
  'X-Content-Type-Options': 'nosniff',
} as const;

/**
 * Answers an asset under a strong `etag`: 304 with the same validators when `If-None-Match`
 * has it (a browser revalidating despite `immutable`, or a CDN), else 200 with `body`.
 */
function respondAsset(
  c: Context,
  body: string | Uint8Array<ArrayBuffer>,
  etag: string,
  headers: Record<string, string>,
) {
  if (notModified(c.req.header('if-none-match'), etag)) {
    // A 304 repeats the validators and caching headers, not the representation's own.
    return c.body(null, 304, { ...ASSET_HEADERS, ...(headers.Vary ? { Vary: headers.Vary } : {}), ETag: etag });
  }
  return c.body(body, 200, { ...ASSET_HEADERS, ...headers, ETag: etag });
}

/** First 16 hex digits of the SHA-256 of `body`: short enough for a URL, long enough not to collide. */
export function contentHash(body: string | Uint8Array): string {
  return createHash('sha256').update(body).digest('hex').slice(0, 16);
}

/**
 * An asset held in the binary gzipped and brotli-compressed: clients that take br or gzip get
 * those bytes as they are, the others get them gunzipped once (rare: every browser takes gzip).
 * Each encoding has its own strong ETag, the content hash with the coding added.
 */
export class CompressedAsset {
  /** URL path, ending in the content hash. */
  readonly path: string;
  readonly contentType: string;
  readonly #hash: string;
  readonly #loadGzip: () => Uint8Array<ArrayBuffer>;
  readonly #loadBrotli: () => Uint8Array<ArrayBuffer>;
  /** Decoded on first use, so start-up does not pay for a page nobody opened. */
  #gzip: Uint8Array<ArrayBuffer> | undefined;
  #brotli: Uint8Array<ArrayBuffer> | undefined;
  #plain: Uint8Array<ArrayBuffer> | undefined;

  constructor({
    name,
    ext,
    hash,
    contentType,
    gzip,
    brotli,
  }: {
    name: string;
    ext: string;
    hash: string;
    contentType: string;
    /** Read on first use, so start-up does not pay for a page nobody opened. */
    gzip: () => Uint8Array<ArrayBuffer>;
    brotli: () => Uint8Array<ArrayBuffer>;
  }) {
    this.#hash = hash.slice(0, 16);
    this.path = `${ASSETS_PATH}/${name}.${this.#hash}.${ext}`;
    this.contentType = contentType;
    this.#loadGzip = gzip;
    this.#loadBrotli = brotli;
  }

  get gzip(): Uint8Array<ArrayBuffer> {
    this.#gzip ??= this.#loadGzip();
    return this.#gzip;
  }

  get brotli(): Uint8Array<ArrayBuffer> {
    this.#brotli ??= this.#loadBrotli();
    return this.#brotli;
  }

  /** Answers with the br or gzip bytes or, for a client that takes neither, the plain ones. */
  respond(c: Context): Response {
    const headers = { 'Content-Type': this.contentType, Vary: 'Accept-Encoding' };
    const coding = preferredCoding(c.req.header('accept-encoding'));
    if (coding === 'br') {
      return respondAsset(c, this.brotli, `"${this.#hash}-br"`, { ...headers, 'Content-Encoding': 'br' });
    }
    if (coding === 'gzip') {
      return respondAsset(c, this.gzip, `"${this.#hash}-gz"`, { ...headers, 'Content-Encoding': 'gzip' });
    }
    // Inflated once, on the first client without gzip: inflating 3.5 MB per request would let
    // anyone without a key stall the event loop for every API caller.
    this.#plain ??= new Uint8Array(gunzipSync(this.gzip));
    return respondAsset(c, this.#plain, `"${this.#hash}"`, headers);
  }
}

/** A small text asset (the page's start-up script, its icon) under a content-hashed path. */
export class TextAsset {
  readonly path: string;
  readonly #body: string;
  readonly #contentType: string;
  readonly #etag: string;

  constructor({ name, ext, contentType, body }: { name: string; ext: string; contentType: string; body: string }) {
    const hash = contentHash(body);
    this.path = `${ASSETS_PATH}/${name}.${hash}.${ext}`;
    this.#body = body;
    this.#contentType = contentType;
    this.#etag = `"${hash}"`;
  }

  respond(c: Context): Response {
    return respondAsset(c, this.#body, this.#etag, { 'Content-Type': this.#contentType });
  }
}

// The reference page's assets under /docs/assets, each at a content-hashed path and cached
// forever: CompressedAsset (stored gzipped: the Scalar bundle) and TextAsset (the page's script
// and icon).
import { createHash } from 'node:crypto';
import { gunzipSync } from 'node:zlib';
import type { Context } from 'hono';
import type { Reply } from '../core/reply.ts';
import { accepts } from '../pipeline/compress.ts';

/** Cache lifetime of a content-addressed asset: a year, never revalidated (RFC 8246). */
export const IMMUTABLE = 'public, max-age=31536000, immutable';

/** Where the page's assets live; each name carries a content hash, so a new build gets new URLs. */
const ASSETS_PATH = '/docs/assets';

/** Headers of every asset: cached forever, loadable by any page or tool (no credentials). */
const ASSET_HEADERS = {
  'Cache-Control': IMMUTABLE,
  'Access-Control-Allow-Origin': '*',
  'X-Content-Type-Options': 'nosniff',
} as const;
/** Headers of an asset whose encoding depends on the client's `Accept-Encoding`. */
const ENCODED_ASSET_HEADERS = { ...ASSET_HEADERS, Vary: 'Accept-Encoding' };

/**
 * First 16 hex digits of the SHA-256 of `body`: short enough for a URL, long enough not to collide.
 */
function contentHash(body: string | Uint8Array): string {
  return createHash('sha256').update(body).digest('hex').slice(0, 16);
}

/**
 * An asset stored gzipped in the binary: clients that accept gzip (every browser) get those bytes
 * as they are; others get a copy decompressed once. Only gzip, not br too: a second copy of the
 * docs bundle would make every binary larger to save a browser a few bytes once
 * (bench/README.md#what-the-binary-carries). Each encoding has its own strong ETag: the content
 * hash plus the encoding.
 */
export class CompressedAsset {
  /** URL path, ending in the content hash. */
  readonly path: string;
  readonly contentType: string;
  readonly #hash: string;
  readonly #loadGzip: () => Uint8Array<ArrayBuffer>;
  /** Loaded on first use, so start-up does not pay for a page nobody opens. */
  #gzip: Uint8Array<ArrayBuffer> | undefined;
  #plain: Uint8Array<ArrayBuffer> | undefined;

  constructor({
    name,
    ext,
    hash,
    contentType,
    gzip,
  }: {
    name: string;
    ext: string;
    hash: string;
    contentType: string;
    /** Called on first use, so start-up does not pay for a page nobody opens. */
    gzip: () => Uint8Array<ArrayBuffer>;
  }) {
    this.#hash = hash.slice(0, 16);
    this.path = `${ASSETS_PATH}/${name}.${this.#hash}.${ext}`;
    this.contentType = contentType;
    this.#loadGzip = gzip;
  }

  get gzip(): Uint8Array<ArrayBuffer> {
    this.#gzip ??= this.#loadGzip();
    return this.#gzip;
  }

  /**
   * The gzip bytes or, for a client that does not accept gzip, the plain ones, each with its own
   * strong ETag (a revalidating browser or CDN gets 304).
   */
  reply(c: Context): Reply {
    const common = { status: 200, type: this.contentType, headers: ENCODED_ASSET_HEADERS };
    if (accepts(c.req.header('accept-encoding'), 'gzip'))
      return { ...common, body: this.gzip, encoding: 'gzip', etag: `"${this.#hash}-gz"` };
    // Decompressed once, for the first client without gzip: decompressing the bundle on every
    // request would let anyone without a key stall the event loop for every API caller.
    this.#plain ??= new Uint8Array(gunzipSync(this.gzip));
    return { ...common, body: this.#plain, etag: `"${this.#hash}"` };
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

  reply(): Reply {
    return { status: 200, body: this.#body, type: this.#contentType, headers: ASSET_HEADERS, etag: this.#etag };
  }
}

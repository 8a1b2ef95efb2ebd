// Step 1's URI limit: `uriTooLong()` returns the 414 for a path and query over `MAX_URI_BYTES`.
// `pathAndQuery()` returns a URL's path and query as sent, which is also the memo's key.
import { ApiError } from '../core/api-error.ts';

/**
 * Longest accepted path plus query, in bytes: RFC 9112 section 3 asks servers to take request
 * lines of at least 8,000 octets. `uriTooLong` counts the URL's UTF-16 units, one per byte: the
 * runtimes hand over the URL percent-encoded, all ASCII (Bun encodes raw non-ASCII bytes, Node
 * refuses them with a bare 400). Bun itself answers a bare 431 past its 16 KiB header limit,
 * before the app sees the request.
 */
export const MAX_URI_BYTES = 8 * 1024;

/**
 * Returns the 414 `uri_too_long` when a request's path and query together exceed `maxBytes` (the
 * runtime's URL is ASCII, so its length is its bytes; see `MAX_URI_BYTES`), else undefined.
 * Step 1 (`runRequest`, src/pipeline/pipeline.ts) calls it as a function, not a middleware.
 *
 * @example
 * uriTooLong('http://localhost/v1/pets?limit=20', 8192) // undefined
 */
export function uriTooLong(url: string, maxBytes: number = MAX_URI_BYTES): ApiError | undefined {
  if (url.length - pathStart(url) <= maxBytes) return undefined;
  return new ApiError('uri_too_long', `The path and query are longer than ${maxBytes} bytes.`);
}

/**
 * Returns the path and query of a request's URL as sent, without scheme and host.
 *
 * @example
 * pathAndQuery('http://localhost:8080/v1/pets?limit=20') // '/v1/pets?limit=20'
 */
export function pathAndQuery(url: string): string {
  return url.slice(pathStart(url));
}

/**
 * Returns where the path starts: the runtimes hand over an absolute URL, whose origin ends at the
 * first '/' after "://".
 */
function pathStart(url: string): number {
  const scheme = url.indexOf('://');
  const start = scheme < 0 ? 0 : url.indexOf('/', scheme + 3);
  return start < 0 ? url.length : start;
}

import type { MiddlewareHandler } from 'hono';
import type { AppEnv } from '../env.ts';
import { ApiError } from '../errors.ts';

/**
 * Longest accepted path plus query, in bytes as sent: RFC 9112 section 3 asks servers to take
 * request lines of at least 8,000 octets. Bun itself answers a bare 431 past its 16 KiB header
 * limit, before the app sees the request.
 */
export const MAX_URI_BYTES = 8 * 1024;

export interface UriLimitOptions {
  maxBytes?: number;
}

/**
 * Refuses a request whose path and query together exceed `maxBytes` with 414 `uri_too_long`,
 * before anything parses them.
 *
 * @example
 * app.use(uriLimit({ maxBytes: 8192 }))
 */
export function uriLimit({ maxBytes = MAX_URI_BYTES }: UriLimitOptions = {}): MiddlewareHandler<AppEnv> {
  return async function uriLimit(c, next) {
    const url = c.req.url;
    // The runtimes hand over an absolute URL: the origin ends at the first '/' after "://".
    const scheme = url.indexOf('://');
    const start = scheme < 0 ? 0 : url.indexOf('/', scheme + 3);
    const length = start < 0 ? 0 : url.length - start;
    if (length > maxBytes) {
      throw new ApiError('uri_too_long', `The path and query are longer than ${maxBytes} bytes.`);
    }
    await next();
  };
}

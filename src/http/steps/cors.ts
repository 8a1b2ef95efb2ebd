import type { MiddlewareHandler } from 'hono';
import { cors } from 'hono/cors';

/**
 * Every response header the contract documents, so a browser script may read them: rate
 * limits, `Retry-After`, paging and deprecation links, `Location`, `ETag`, the request id, and
 * the headers of 201 replays, 401 and 405.
 */
export const EXPOSED_HEADERS = [
  'X-RateLimit-Limit',
  'X-RateLimit-Remaining',
  'X-RateLimit-Reset',
  'RateLimit-Policy',
  'RateLimit',
  'Retry-After',
  'Link',
  'Location',
  'Deprecation',
  'Sunset',
  'ETag',
  'X-Request-Id',
  'Idempotent-Replayed',
  'WWW-Authenticate',
  'Allow',
] as const;

/** What a browser may send: the API's methods and the request headers the contract uses. */
const ALLOW_METHODS = ['GET', 'HEAD', 'POST'];
const ALLOW_HEADERS = ['Authorization', 'Content-Type', 'Idempotency-Key'];
/** How long a browser may reuse a preflight's answer (Chromium caps it at 2 hours). */
const MAX_AGE_SECONDS = 600;

/**
 * CORS for the API (`--cors-origin`), Hono's own `cors` middleware for the allowed origins,
 * mounted before the gateway:
 * - a preflight (OPTIONS with `Origin` and `Access-Control-Request-Method`) is answered 204
 *   here, so it needs no key and costs no quota of a key or an address; from an origin not
 *   allowed, with no CORS headers, which the browser reads as a refusal;
 * - any other request from an allowed origin gets `Access-Control-Allow-Origin` (the origin
 *   itself), `Access-Control-Expose-Headers` and `Vary: Origin`, also when the gateway answers
 *   401 or 429 (the headers are set before it runs and survive the error path);
 * - a request from another origin, or without one, goes on untouched but for `Vary: Origin`.
 * `*` in `origins` allows every origin.
 *
 * @example
 * app.use('/v1/*', corsFor(['https://app.example']))
 */
export function corsFor(origins: readonly string[]): MiddlewareHandler {
  const anyOrigin = origins.includes('*');
  const allowed = new Set(origins);
  const allow = cors({
    origin: (origin) => origin,
    allowMethods: ALLOW_METHODS,
    allowHeaders: ALLOW_HEADERS,
    exposeHeaders: [...EXPOSED_HEADERS],
    maxAge: MAX_AGE_SECONDS,
  });
  return async function corsFor(c, next) {
    const origin = c.req.header('origin');
    if (origin !== undefined && (anyOrigin || allowed.has(origin))) return allow(c, next);
    if (c.req.method === 'OPTIONS' && origin !== undefined && c.req.header('access-control-request-method')) {
      return c.body(null, 204, { Vary: 'Origin' });
    }
    await next();
    c.header('Vary', 'Origin', { append: true });
  };
}

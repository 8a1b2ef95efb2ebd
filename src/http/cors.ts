// Step 2: CORS for the API (`--cors-origin`). `corsStep()` answers a preflight before any key is
// asked for, and gathers the CORS headers of every other answer (`EXPOSED_HEADERS` and the rest).
import type { Context } from 'hono';
import { OPERATIONS } from '../api/operations.ts';
import { answerHeaders, appendHeader } from '../core/reply.ts';
import { answer } from './answer.ts';

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
  'traceresponse',
  'Idempotent-Replayed',
  'WWW-Authenticate',
  'Allow',
] as const;

/**
 * The methods of the whole operations table, with HEAD beside GET: what a browser may send. The
 * experimental operations' methods are among them whether served or not; none adds a method.
 */
export const ALLOW_METHODS = [
  ...new Set(OPERATIONS.flatMap((op) => (op.method === 'GET' ? ['GET', 'HEAD'] : [op.method]))),
].join(',');
/**
 * The request headers a browser script may set: the key, the body's type, the header parameters
 * of contract/openapi.yaml (cors.test.ts holds them to it), and the trace context.
 */
export const ALLOW_HEADERS = [
  'Authorization',
  'Content-Type',
  'Idempotency-Key',
  'If-Match',
  'If-None-Match',
  'traceparent',
  'tracestate',
].join(',');
/** How long a browser may reuse a preflight's answer (Chromium caps it at 2 hours). */
const MAX_AGE_SECONDS = '600';
const EXPOSED = EXPOSED_HEADERS.join(',');

/**
 * Makes step 2, CORS for the API (`--cors-origin`), run before the gateway. A preflight is
 * answered 204 here, so it needs no key and costs no quota. A request from an allowed origin gets
 * the CORS headers whatever its answer; any other gets only `Vary: Origin`. `*` allows every
 * origin. The headers are gathered like every other step's, for the one answer path.
 *
 * @example
 * const cors = corsStep(['https://app.example'])
 * const preflight = cors(c) // a Response for a preflight, else undefined (the headers are gathered)
 */
export function corsStep(origins: readonly string[]): (c: Context) => Response | undefined {
  const anyOrigin = origins.includes('*');
  const allowed = new Set(origins);
  return function cors(c) {
    const headers = answerHeaders(c);
    appendHeader(headers, 'Vary', 'Origin');
    const origin = c.req.header('origin');
    const preflight =
      c.req.method === 'OPTIONS' && origin !== undefined && c.req.header('access-control-request-method');
    if (origin === undefined || !(anyOrigin || allowed.has(origin))) {
      return preflight ? answer(c, { status: 204 }) : undefined;
    }
    headers['Access-Control-Allow-Origin'] = origin;
    headers['Access-Control-Expose-Headers'] = EXPOSED;
    if (!preflight) return undefined;
    headers['Access-Control-Max-Age'] = MAX_AGE_SECONDS;
    headers['Access-Control-Allow-Methods'] = ALLOW_METHODS;
    headers['Access-Control-Allow-Headers'] = ALLOW_HEADERS;
    return answer(c, { status: 204 });
  };
}

// Step 2: CORS for the API (`--cors-origin`). `Cors` adds the CORS headers to every answer
// (`addCorsHeaders()`) and answers a preflight before any key is asked for (`answerPreflight()`).
import type { Context } from 'hono';
import { OPERATIONS } from '../api/operations.ts';
import { answerHeaders, appendHeader } from '../core/reply.ts';
import { answer } from './answer.ts';

/**
 * Every response header the contract documents, so a browser script may read them: rate
 * limits, `Retry-After`, paging and deprecation links, `Location`, `ETag`, and the headers of 201
 * replays, 401, 405 and the `PATCH` 415 (cors.test.ts holds them to the contract); and the
 * request id and `traceresponse`, which every answer carries.
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
  'Accept-Patch',
] as const;

/**
 * Every method of the operations table, with HEAD next to GET: what a browser may send. The
 * experimental operations count whether served or not; they add no method of their own.
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
 * CORS for the API (`--cors-origin`): step 2 and the answer to a preflight, both before the
 * gateway. A request from an allowed origin gets the CORS headers on every answer from step 2 on
 * (not step 1's 414, nor an error that escapes step 1 to Hono's `onError`); any other gets only
 * `Vary: Origin`. `*` allows every origin.
 *
 * @example
 * const cors = new Cors(['https://app.example'])
 * cors.addCorsHeaders(c)
 * const preflight = cors.answerPreflight(c) // a Response for a preflight, else undefined
 */
export class Cors {
  readonly #anyOrigin: boolean;
  readonly #allowed: ReadonlySet<string>;

  constructor(origins: readonly string[]) {
    this.#anyOrigin = origins.includes('*');
    this.#allowed = new Set(origins);
  }

  /** Step 2: adds `Vary: Origin`, and for an allowed origin the CORS headers of every answer. */
  addCorsHeaders(c: Context): void {
    const headers = answerHeaders(c);
    appendHeader(headers, 'Vary', 'Origin');
    const origin = c.req.header('origin');
    if (origin === undefined || !this.#allows(origin)) return;
    headers['Access-Control-Allow-Origin'] = origin;
    headers['Access-Control-Expose-Headers'] = EXPOSED;
  }

  /**
   * Answers a preflight (OPTIONS with `Origin` and `Access-Control-Request-Method`) 204, so it
   * needs no key and costs no quota; returns undefined for any other request.
   */
  answerPreflight(c: Context): Response | undefined {
    const origin = c.req.header('origin');
    if (c.req.method !== 'OPTIONS' || origin === undefined || !c.req.header('access-control-request-method')) {
      return undefined;
    }
    // An origin that is not allowed gets the 204 without the headers that let its page send the
    // request.
    if (this.#allows(origin)) {
      const headers = answerHeaders(c);
      headers['Access-Control-Max-Age'] = MAX_AGE_SECONDS;
      headers['Access-Control-Allow-Methods'] = ALLOW_METHODS;
      headers['Access-Control-Allow-Headers'] = ALLOW_HEADERS;
    }
    return answer(c, { status: 204 });
  }

  /** Returns whether a page of `origin` may call the API. */
  #allows(origin: string): boolean {
    return this.#anyOrigin || this.#allowed.has(origin);
  }
}

import type { MiddlewareHandler } from 'hono';
import type { AppEnv } from '../env.ts';
import { ApiError } from '../errors.ts';
import { DEFAULT_MAX_IN_FLIGHT } from './plans.ts';

/**
 * Longest accepted path plus query, in bytes as sent: RFC 9112 section 3 asks servers to take
 * request lines of at least 8,000 octets. Bun itself answers a bare 431 past its 16 KiB header
 * limit, before the app sees the request.
 */
export const MAX_URI_BYTES = 8 * 1024;
/** A request refused for concurrency is worth retrying as soon as one of the others is done. */
const CONCURRENCY_RETRY_AFTER = '1';

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

export interface ConcurrencyLimitOptions {
  /** Most requests of one key in flight at once; the next gets 429 `too_many_concurrent_requests`. */
  max?: number;
}

/**
 * Caps the requests one API key has in flight, so a single client cannot hold every worker
 * of the store. Runs after the gateway: the request was admitted by the rate limiter and
 * counts against the quota; the 429 carries `Retry-After: 1`. Callers without a key never get
 * past the gateway, so only keys are counted; the table holds one entry per busy key.
 *
 * @example
 * app.use('/v1/*', concurrencyLimit({ max: 128 }))
 */
export function concurrencyLimit({
  max = DEFAULT_MAX_IN_FLIGHT,
}: ConcurrencyLimitOptions = {}): MiddlewareHandler<AppEnv> {
  const inFlight = new Map<string, number>();
  return async function concurrencyLimit(c, next) {
    const caller = c.get('caller');
    if (caller?.kind !== 'key') return next();
    const name = caller.key.name;
    const busy = inFlight.get(name) ?? 0;
    if (busy >= max) {
      throw new ApiError(
        'too_many_concurrent_requests',
        `This key already has ${max} requests in flight; retry when one is done.`,
        { 'Retry-After': CONCURRENCY_RETRY_AFTER },
      );
    }
    inFlight.set(name, busy + 1);
    try {
      await next();
    } finally {
      const left = (inFlight.get(name) ?? 1) - 1;
      if (left === 0) inFlight.delete(name);
      else inFlight.set(name, left);
    }
  };
}

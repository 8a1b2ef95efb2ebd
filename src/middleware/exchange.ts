import type { ErrorHandler, MiddlewareHandler } from 'hono';
import type { AppEnv } from '../env.ts';
import { adoptHeaders, answeredHere, beginAnswer } from '../http/answer.ts';
import { represent } from '../http/compress.ts';
import { answerError } from './answer-error.ts';
import { type RequestLogOptions, requestLogSteps } from '../http/steps/request-log.ts';
import { MAX_URI_BYTES, uriTooLong } from '../http/steps/uri-limit.ts';

export interface ExchangeOptions extends RequestLogOptions {
  /** The app's one error handler, for the 414 this layer answers itself. */
  onError: ErrorHandler<AppEnv>;
  /** Longest accepted path plus query (default `MAX_URI_BYTES`). */
  maxUriBytes?: number;
}

/** Whether Hono's `/v1/*` matches `path` (it matches `/v1` itself too). */
function isApi(path: string): boolean {
  return path.startsWith('/v1') && (path.length === 3 || path.charCodeAt(3) === 0x2f);
}

/**
 * The one layer every request passes first, its steps plain functions in this order (a Hono
 * layer costs measurable time on every request, so they are not layers of their own):
 * 1. the request id, echoed (`requestLogSteps.start`), and on `/v1` `Cache-Control: no-store` and
 *    `X-Content-Type-Options: nosniff`, so every API answer has them, the 414 too: the first
 *    fields of the answer's gathered headers (`beginAnswer`, src/http/answer.ts);
 * 2. 414 `uri_too_long` for a path and query over `maxUriBytes`, before anything parses them
 *    (so without rate-limit headers: the gateway never saw it); else the rest of the app;
 * 3. for an answer not built by `answer()` (Hono's, the health and docs routes), the gathered
 *    headers and the representation: `Vary`, compression, a HEAD's `Content-Length` (`represent`);
 * 4. the log line (`requestLogSteps.finish`), whatever happened before.
 *
 * @example
 * app.use(exchange({ log, clock, onError: handleError }))
 */
export function exchange({
  onError,
  maxUriBytes = MAX_URI_BYTES,
  ...logOptions
}: ExchangeOptions): MiddlewareHandler<AppEnv> {
  const log = requestLogSteps(logOptions);
  return async function exchange(c, next) {
    const started = log.start(c);
    beginAnswer(
      c,
      isApi(c.req.path)
        ? { 'X-Request-Id': started.id, 'Cache-Control': 'no-store', 'X-Content-Type-Options': 'nosniff' }
        : { 'X-Request-Id': started.id },
    );
    try {
      const tooLong = uriTooLong(c.req.url, maxUriBytes);
      if (tooLong) await answerError(c, tooLong, onError);
      else await next();
      if (!answeredHere(c)) {
        adoptHeaders(c);
        const reencoding = represent(c);
        if (reencoding) await reencoding;
      }
    } catch (err) {
      await answerError(c, err, onError);
    }
    log.finish(c, started);
  };
}

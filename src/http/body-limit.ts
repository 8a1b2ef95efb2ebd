import type { MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { tooLarge } from '../core/api-error.ts';
import { answerHeaders } from '../core/reply.ts';

/**
 * Past this declared size the 413 also closes the connection instead of letting the runtime
 * read and discard the rest (RFC 9112 section 9.6: "read the rest up to a bound, or close").
 * Up to it, the rest of an over-limit body is discarded by the runtime after the answer, so a
 * client that sends its whole body before it reads gets the 413, never a reset.
 */
export const MAX_DISCARDED_BYTES = 1024 * 1024 * 1024;

/**
 * Hono's `bodyLimit` answering the contract's 413 `payload_too_large`: at once for a declared
 * `Content-Length` over `maxBytes`, as soon as a chunked body passes it. The pipeline calls it
 * at step 5, after the gateway, so the 413 carries the rate-limit headers like any other answer.
 *
 * @example
 * const limit = limitBody(64 * 1024)
 * await limit(c, next) // throws the 413, or calls next()
 */
export function limitBody(maxBytes: number): MiddlewareHandler {
  return bodyLimit({
    maxSize: maxBytes,
    onError: (c) => {
      if (Number(c.req.header('content-length')) > MAX_DISCARDED_BYTES) answerHeaders(c).Connection = 'close';
      throw tooLarge(maxBytes);
    },
  });
}

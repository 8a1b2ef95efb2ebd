// Step 5's body limits: `limitBody()` refuses a body over the size limit (413), and
// `checkBodyOnGetOrHead()` applies the same size and type rules to a body sent with GET or HEAD.
import type { Context } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { isJson } from '../api/validate.ts';
import { notJson, tooLarge } from '../core/api-error.ts';
import { answerHeaders } from '../core/reply.ts';

/** Largest accepted request body: 64 KiB. */
export const MAX_BODY_BYTES = 64 * 1024;

/**
 * Above this declared size, the 413 also closes the connection (RFC 9112 section 9.6 allows
 * reading the rest up to a bound, or closing). Below it, the runtime reads and discards the rest of
 * an over-limit body after the answer, so a client that sends its whole body before reading gets
 * the 413, not a connection reset. The bound is on the declared `Content-Length` (a chunked body
 * declares none), so it caps the bytes one connection reads and discards after a 413, and with
 * them the time it spends on that: 1 GiB is far above a body sent by mistake (a file of some
 * MiB), which keeps its connection, while a larger one closes it instead (docs/operations.md,
 * "Resource bounds").
 */
const MAX_DISCARDED_BYTES = 1024 * 1024 * 1024;

/** Step 5's size check, made by `limitBody()`: it throws the 413, or returns `next()`'s answer. */
export type BodyLimit = (c: Context, next: () => Promise<Response>) => Promise<Response>;

/**
 * Returns Hono's `bodyLimit`, set to throw the contract's 413 `payload_too_large`: at once for a
 * declared `Content-Length` over `maxBytes`, or as soon as a chunked body passes it. Step 5 runs
 * it after the gateway, so the 413 carries the rate-limit headers like any other answer.
 *
 * @example
 * const limit = limitBody(64 * 1024)
 * return limit(c, next) // throws the 413, or returns next()'s answer
 */
export function limitBody(maxBytes: number): BodyLimit {
  const limit = bodyLimit({
    maxSize: maxBytes,
    onError: (c) => {
      if (Number(c.req.header('content-length')) > MAX_DISCARDED_BYTES) answerHeaders(c).Connection = 'close';
      throw tooLarge(maxBytes);
    },
  });
  // Sound: Hono's `bodyLimit` returns what `next()` or `onError` returns, and this `onError`
  // throws. Hono's type says less: its `next` and its middleware may return nothing.
  return limit as unknown as BodyLimit;
}

/**
 * Step 5 for a body sent with GET or HEAD: throws 413 when its declared `Content-Length` is over
 * `maxBytes`, and 415 when its `Content-Type` is not JSON. The runtimes give Hono no body for
 * these methods, so `bodyLimit` never sees one and the declared headers decide.
 *
 * @example
 * checkBodyOnGetOrHead(c, 64 * 1024)
 */
export function checkBodyOnGetOrHead(c: Context, maxBytes: number): void {
  const method = c.req.method;
  if (method !== 'GET' && method !== 'HEAD') return;
  const length = c.req.header('content-length');
  // The runtimes give a GET no body stream; checking it guards against a runtime that does.
  const hasBody =
    c.req.raw.body !== null ||
    (length !== undefined && length !== '0') ||
    c.req.header('transfer-encoding') !== undefined;
  if (!hasBody) return;
  if (Number(length) > maxBytes) throw tooLarge(maxBytes);
  if (!isJson(c.req.header('content-type'))) throw notJson();
}

// Step 5's body limits: `limitBody()` refuses a body over the size (413), and
// `checkBodyOnGetOrHead()` holds a body sent with GET or HEAD to the same rules of size and type.
import type { Context } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { isJson } from '../api/validate.ts';
import { notJson, tooLarge } from '../core/api-error.ts';
import { answerHeaders } from '../core/reply.ts';

/** Largest accepted request body: 64 KiB. */
export const MAX_BODY_BYTES = 64 * 1024;

/**
 * Past this declared size the 413 also closes the connection instead of letting the runtime
 * read and discard the rest (RFC 9112 section 9.6: "read the rest up to a bound, or close").
 * Up to it, the rest of an over-limit body is discarded by the runtime after the answer, so a
 * client that sends its whole body before it reads gets the 413, never a reset. The runtime
 * reads the rest without keeping it; the bound caps how long one connection may spend on that
 * (docs/operations.md, "Resource bounds").
 */
const MAX_DISCARDED_BYTES = 1024 * 1024 * 1024;

/** Step 5's size check, made by `limitBody()`: it throws the 413, or returns `next()`'s answer. */
export type BodyLimit = (c: Context, next: () => Promise<Response>) => Promise<Response>;

/**
 * Makes Hono's `bodyLimit` answer the contract's 413 `payload_too_large`: at once for a declared
 * `Content-Length` over `maxBytes`, as soon as a chunked body passes it. The pipeline calls it
 * at step 5, after the gateway, so the 413 carries the rate-limit headers like any other answer.
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
 * Holds a body sent with GET or HEAD to the rules of any other: it throws 413 past `maxBytes` bytes
 * and 415 when it is not `application/json`. The runtimes hand Hono no body for these methods, so
 * `bodyLimit` never sees one; the declared `Content-Length` and `Content-Type` decide. Step 5 of
 * the pipeline (./pipeline.ts) calls it beside `limitBody`; it throws its refusal.
 *
 * @example
 * checkBodyOnGetOrHead(c, 64 * 1024)
 */
export function checkBodyOnGetOrHead(c: Context, maxBytes: number): void {
  const method = c.req.method;
  if (method !== 'GET' && method !== 'HEAD') return;
  const length = c.req.header('content-length');
  // The runtimes hand a GET no body stream; the check of it is a guard should one ever do.
  const hasBody =
    c.req.raw.body !== null ||
    (length !== undefined && length !== '0') ||
    c.req.header('transfer-encoding') !== undefined;
  if (!hasBody) return;
  if (Number(length) > maxBytes) throw tooLarge(maxBytes);
  if (!isJson(c.req.header('content-type'))) throw notJson();
}

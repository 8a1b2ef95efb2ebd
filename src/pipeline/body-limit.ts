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
 * The most bytes of an over-limit body that one connection reads and discards after a 413, and
 * with them the time it spends on that (RFC 9112 section 9.6 allows reading the rest up to a
 * bound, or closing). Within it, the rest is read, so a client that sends its whole body before
 * reading gets the 413, not a connection reset, and keeps its connection: 1 GiB is far above a
 * body sent by mistake (a file of some MiB). Beyond it, the 413 closes the connection. A declared
 * `Content-Length` over it closes at once, and Bun discards the rest of a smaller one after the
 * answer. A chunked body declares no size, and Bun would discard its rest without end, so
 * `limitBody()` reads it up to the bound before it answers (docs/operations.md, "Resource bounds").
 */
const MAX_DISCARDED_BYTES = 1024 * 1024 * 1024;

/** Step 5's size check, made by `limitBody()`: it throws the 413, or returns `next()`'s answer. */
export type BodyLimit = (c: Context, next: () => Promise<Response>) => Promise<Response>;

/**
 * Returns step 5's size check, which throws the contract's 413 `payload_too_large`. A declared
 * `Content-Length` over `maxBytes` gets it at once, from Hono's `bodyLimit`. A chunked body is
 * read, and once it passes `maxBytes` the rest is read and discarded up to `MAX_DISCARDED_BYTES`
 * before the 413, which closes the connection when the body has not ended by then. Step 5 runs
 * after the gateway, so the 413 carries the rate-limit headers like any other answer.
 *
 * @example
 * const limit = limitBody(64 * 1024)
 * return limit(c, next) // throws the 413, or returns next()'s answer
 */
export function limitBody(maxBytes: number): BodyLimit {
  // Sound: Hono's `bodyLimit` returns what `next()` or `onError` returns, and this `onError`
  // throws. Hono's type says less: its `next` and its middleware may return nothing.
  const declared = bodyLimit({
    maxSize: maxBytes,
    onError: (c) => {
      if (Number(c.req.header('content-length')) > MAX_DISCARDED_BYTES) answerHeaders(c).Connection = 'close';
      throw tooLarge(maxBytes);
    },
  }) as unknown as BodyLimit;
  // Not async: a body with a declared size, the usual case, makes no promise of its own here.
  return (c, next) => {
    const body = c.req.raw.body;
    const headers = c.req.raw.headers;
    // Hono's own test for a declared size, so a body declaring both is read as chunked. Step 5
    // calls this only with a body; a direct call without one goes to `bodyLimit`, which passes it.
    if (body === null || (headers.has('content-length') && !headers.has('transfer-encoding'))) {
      return declared(c, next);
    }
    return readChunked(c, next, body, maxBytes);
  };
}

/**
 * Reads a chunked body whole, within `maxBytes`, and serves the request with it; past `maxBytes`,
 * discards the rest up to `MAX_DISCARDED_BYTES` and throws the 413. Hono's `bodyLimit` reads a
 * chunked body the same way, but its `onError` cannot reach the reader it holds, so it cannot
 * drain the rest within a bound: this loop is its, with the drain added.
 */
async function readChunked(
  c: Context,
  next: () => Promise<Response>,
  body: ReadableStream<Uint8Array>,
  maxBytes: number,
): Promise<Response> {
  const reader = body.getReader();
  const parts: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.length;
    if (size > maxBytes) {
      if (!(await discardRest(reader, size))) answerHeaders(c).Connection = 'close';
      throw tooLarge(maxBytes);
    }
    parts.push(value);
  }
  const whole = new Uint8Array(size);
  let offset = 0;
  for (const part of parts) {
    whole.set(part, offset);
    offset += part.length;
  }
  // Safe: nothing before step 7 reads the body through `c.req`, so Hono's body cache is empty.
  c.req.raw = new Request(c.req.raw, { body: whole });
  return next();
}

/** Reads and drops the rest of a body of which `read` bytes are read; false once past the bound. */
async function discardRest(reader: ReadableStreamDefaultReader<Uint8Array>, read: number): Promise<boolean> {
  let total = read;
  while (total <= MAX_DISCARDED_BYTES) {
    const { done, value } = await reader.read();
    if (done) return true;
    total += value.length;
  }
  return false;
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

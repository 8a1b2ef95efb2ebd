import { Buffer } from 'node:buffer';
import type { Context } from 'hono';
import { compressed, compressible, MIN_COMPRESSED_BYTES, preferredCoding } from './compress.ts';

/** The headers of one answer, by name as sent. */
export type AnswerHeaders = Record<string, string>;

interface AnswerVariables {
  Variables: { answerHeaders: AnswerHeaders; answered: boolean };
}

/** `c` with this module's two variables typed (any app's context carries them). */
const vars = (c: Context) => c as unknown as Context<AnswerVariables>;

/**
 * The headers gathered for this request's answer: every step adds its own fields to this plain
 * object (request id, rate-limit headers, ETag, Link...), and `answer()` hands the whole object
 * to `Response` once. Bun builds the response's headers from an object in one native call,
 * where `c.header()` crosses into native code once a field: that was ~9% of the list path,
 * and Hono's `Response` assembly ~7% more (bench/README.md, phase 3).
 *
 * @example
 * answerHeaders(c).Link = '<pets?cursor=2s>; rel="next"'
 */
export function answerHeaders(c: Context): AnswerHeaders {
  let headers = vars(c).get('answerHeaders');
  if (headers === undefined) {
    headers = {};
    vars(c).set('answerHeaders', headers);
  }
  return headers;
}

/**
 * Starts the gathered headers with `fields` (the outer layer's, before anything else writes).
 *
 * @example
 * beginAnswer(c, { 'X-Request-Id': id })
 */
export function beginAnswer(c: Context, fields: AnswerHeaders): void {
  vars(c).set('answerHeaders', fields);
}

/** Adds `value` to a list-valued field such as `Vary`. */
export function appendHeader(headers: AnswerHeaders, name: string, value: string): void {
  const current = headers[name];
  headers[name] = current ? `${current}, ${value}` : value;
}

/**
 * The response with `status`, `body` and every gathered header, represented as the API's
 * answers are: a successful JSON answer varies by `Accept-Encoding` and from 1 KiB on is sent br
 * or gzip when the client takes it; a HEAD answer gets the GET's `Content-Length` (Hono runs the
 * GET route for a HEAD and drops the body after). An answer built here is final: the outer
 * layer's `represent` step leaves it alone (`answeredHere`).
 *
 * @example
 * return answer(c, 200, JSON.stringify(pet), 'application/json')
 * return answer(c, 304, null)
 */
export function answer(c: Context, status: number, body: string | null, contentType?: string): Response {
  const headers = answerHeaders(c);
  vars(c).set('answered', true);
  if (body === null) return new Response(null, { status, headers });
  if (contentType !== undefined) headers['Content-Type'] = contentType;
  let bytes: string | Uint8Array<ArrayBuffer> = body;
  if (compressible(status, contentType)) {
    appendHeader(headers, 'Vary', 'Accept-Encoding');
    // UTF-8 takes at most 3 bytes a UTF-16 unit: shorter bodies are under the threshold.
    const coding =
      body.length * 3 >= MIN_COMPRESSED_BYTES ? preferredCoding(c.req.header('accept-encoding')) : undefined;
    const packed = coding && compressed(Buffer.from(body, 'utf8'), coding);
    if (packed) {
      bytes = packed;
      headers['Content-Encoding'] = coding;
      headers['Content-Length'] = String(bytes.length);
    }
  }
  if (c.req.method === 'HEAD' && headers['Content-Length'] === undefined) {
    headers['Content-Length'] = String(typeof bytes === 'string' ? Buffer.byteLength(bytes) : bytes.length);
  }
  return new Response(bytes, { status, headers });
}

/**
 * Whether this request's response was built by `answer()`; if not (Hono's own answers, the
 * health and docs routes), the outer layer copies the gathered headers onto it.
 */
export function answeredHere(c: Context): boolean {
  return vars(c).get('answered') === true;
}

/**
 * Copies the gathered headers onto a response built elsewhere, each unless the response has it
 * (the handler's own value wins, as with `c.header()` before it answered).
 *
 * @example
 * if (!answeredHere(c)) adoptHeaders(c)
 */
export function adoptHeaders(c: Context): void {
  const gathered = vars(c).get('answerHeaders');
  if (gathered === undefined) return;
  const headers = c.res.headers;
  for (const name in gathered) {
    const value = gathered[name];
    if (value !== undefined && !headers.has(name)) headers.set(name, value);
  }
}

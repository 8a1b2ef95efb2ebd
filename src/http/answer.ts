import { Buffer } from 'node:buffer';
import type { Context } from 'hono';
import { type Coding, compressed, compressible, MIN_COMPRESSED_BYTES, preferredCoding } from './compress.ts';
import { notModified } from './etag.ts';

/** The headers of one answer, by name as sent. */
export type AnswerHeaders = Record<string, string>;

/**
 * What a route, a step or the error path decides to answer. `answer()` turns it into the one
 * `Response`: nothing else builds one, and nothing changes one afterwards.
 */
export interface Reply {
  readonly status: number;
  /** The body as text (JSON, YAML, HTML) or bytes; none when absent or null. */
  readonly body?: string | Uint8Array<ArrayBuffer> | null;
  /** `Content-Type` of the body. */
  readonly type?: string;
  /** Fields of this answer besides the ones the request gathered on its way (rate limits, request id). */
  readonly headers?: Readonly<AnswerHeaders>;
  /** Entity tag of the body: an `If-None-Match` that matches it gets 304 without a body. */
  readonly etag?: string;
  /** The coding `body` is already in (a pre-compressed asset): sent as it is, never compressed again. */
  readonly encoding?: Coding;
}

interface AnswerVariables {
  Variables: { answerHeaders: AnswerHeaders };
}

/** `c` with this module's variable typed (any app's context carries it). */
const vars = (c: Context) => c as unknown as Context<AnswerVariables>;

/**
 * The headers gathered for this request's answer: every step adds its fields to this plain object
 * (request id, rate-limit headers, CORS), and `answer()` hands the whole object to `Response`
 * once. Bun builds a response's headers from an object in one native call, where `c.header()`
 * crosses into native code once a field (about 9% of the list path, bench/README.md).
 *
 * @example
 * answerHeaders(c)['Retry-After'] = '30'
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
 * Starts the gathered headers with `fields`, before any step writes.
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
 * The one way a response is made: status, headers and body are written here once, and the
 * representation is decided here for every answer, 2xx, 3xx, 4xx and 5xx alike:
 * - an `etag` that `If-None-Match` matches gives 304 with the same headers and no body;
 * - a successful JSON answer varies by `Accept-Encoding` and from 1 KiB on is sent br or gzip
 *   when the client takes it (errors stay readable in any log); a pre-compressed body is sent
 *   in its own coding;
 * - a HEAD answer carries the GET's headers, its `Content-Length` and a `Date` (Hono runs the GET
 *   route for a HEAD and drops the body; the runtimes would send no length and no date).
 *
 * @example
 * return answer(c, { status: 200, body: JSON.stringify(pet), type: 'application/json', etag })
 */
export function answer(c: Context, reply: Reply): Response {
  const headers = answerHeaders(c);
  if (reply.headers !== undefined) Object.assign(headers, reply.headers);
  const { etag, type } = reply;
  let status = reply.status;
  let body = reply.body ?? null;
  const json = compressible(status, type) && reply.encoding === undefined;
  if (json) appendHeader(headers, 'Vary', 'Accept-Encoding');
  if (etag !== undefined) {
    headers.ETag = etag;
    if (notModified(c.req.header('if-none-match'), etag)) {
      status = 304;
      body = null;
    }
  }
  const head = c.req.method === 'HEAD';
  if (head) headers.Date = new Date().toUTCString();
  if (body === null) return new Response(null, { status, headers });
  if (type !== undefined) headers['Content-Type'] = type;
  if (reply.encoding !== undefined) {
    headers['Content-Encoding'] = reply.encoding;
  } else if (json && typeof body === 'string') {
    body = encodedJson(c, body, headers);
  }
  if (head && headers['Content-Length'] === undefined) {
    headers['Content-Length'] = String(typeof body === 'string' ? Buffer.byteLength(body) : body.length);
  }
  return new Response(body, { status, headers });
}

/** `text` in the client's preferred coding when it is worth compressing, else as it is. */
function encodedJson(c: Context, text: string, headers: AnswerHeaders): string | Uint8Array<ArrayBuffer> {
  // UTF-8 takes at most 3 bytes a UTF-16 unit: shorter texts are under the threshold.
  if (text.length * 3 < MIN_COMPRESSED_BYTES) return text;
  const coding = preferredCoding(c.req.header('accept-encoding'));
  const packed = coding && compressed(Buffer.from(text, 'utf8'), coding);
  if (!packed) return text;
  headers['Content-Encoding'] = coding;
  headers['Content-Length'] = String(packed.length);
  return packed;
}

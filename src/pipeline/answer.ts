// Step 8: the one place the app makes a response, for every status: 304s, compression and HEAD.
import { Buffer } from 'node:buffer';
import type { Context } from 'hono';
import { type AnswerHeaders, answerHeaders, appendHeader, type Reply } from '../core/reply.ts';
import { compressed, compressible, MIN_COMPRESSED_BYTES, preferredCoding } from './compress.ts';
import { notModified } from './etag.ts';

/**
 * Step 8: makes the `Response` for `reply`, with the headers the request gathered
 * (`answerHeaders()` of src/core/reply.ts: step 1 starts them, and an error that Hono's `onError`
 * answers before step 1 gets them made on first use, by the error path). It answers a GET or
 * HEAD 304 when `If-None-Match` matches the `etag`, compresses a large successful JSON body when
 * the client accepts it, and gives a HEAD the GET's headers plus `Content-Length` and `Date`.
 * Only `traceresponse` may change afterwards (`setTraceResponse` in ./pipeline.ts).
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
  const compressibleJson = compressible(status, type) && reply.encoding === undefined;
  if (compressibleJson) appendHeader(headers, 'Vary', 'Accept-Encoding');
  if (etag !== undefined) {
    headers.ETag = etag;
    // Only a read gets a 304: the tag on a write's answer (a created or changed pet) is new to the
    // client.
    if (isRead(c.req.method) && notModified(c.req.header('if-none-match'), etag)) {
      status = 304;
      body = null;
    }
  }
  // Hono answers a HEAD by running the GET route and sending its response without the body
  // (`new Response(null, …)` in hono-base). The body is still made, and a HEAD's JSON compressed
  // as a GET's would be, only so that its `Content-Length` and `Content-Encoding` match the GET's.
  // The runtimes date every other answer but send a bodiless HEAD answer without `Date`, which
  // RFC 9110 section 6.6.1 asks for; it is set here by the system clock, as the runtimes date,
  // not the app's `Clock`.
  const head = c.req.method === 'HEAD';
  if (head) headers.Date = new Date().toUTCString();
  if (body === null) return new Response(null, { status, headers });
  if (type !== undefined) headers['Content-Type'] = type;
  if (reply.encoding !== undefined) {
    headers['Content-Encoding'] = reply.encoding;
  } else if (compressibleJson && typeof body === 'string') {
    body = encodedJson(c, body, headers);
  }
  if (head && headers['Content-Length'] === undefined) {
    headers['Content-Length'] = String(typeof body === 'string' ? Buffer.byteLength(body) : body.length);
  }
  return new Response(body, { status, headers });
}

function isRead(method: string): boolean {
  return method === 'GET' || method === 'HEAD';
}

/** Returns `text` in the client's preferred coding when it is worth compressing, else as it is. */
function encodedJson(c: Context, text: string, headers: AnswerHeaders): string | Uint8Array<ArrayBuffer> {
  // UTF-8 takes at most 3 bytes per UTF-16 unit, so a text this short is under the threshold.
  if (text.length * 3 < MIN_COMPRESSED_BYTES) return text;
  const coding = preferredCoding(c.req.header('accept-encoding'));
  const packed = coding && compressed(Buffer.from(text, 'utf8'), coding);
  if (!packed) return text;
  headers['Content-Encoding'] = coding;
  headers['Content-Length'] = String(packed.length);
  return packed;
}

import { createHash } from 'node:crypto';
import type { Context } from 'hono';
import { answer, answerHeaders, appendHeader } from './answer.ts';

/** Representations whose tag is kept: a list page or a pet asked for again is not hashed again. */
const MAX_KEPT_TAGS = 64;
/** The representation's first part -> its other parts (joined) and its tag. */
const kept = new Map<string, { rest: string; etag: string }>();

/**
 * A weak entity tag (RFC 9110 section 8.8.3) for a representation: the SHA-1 of its parts, in
 * base64url. Weak, because the same JSON is sent identity, gzip or br encoded (a strong tag would
 * have to differ per encoding); `If-None-Match` compares weakly anyway. SHA-1 through node:crypto
 * reads the same on Bun, Deno and Node; it identifies content, it guards nothing. The tags of the
 * last 64 representations are kept by their text: hashing a page cost ~10% of a list request's
 * CPU (bench/README.md), and the same page is asked for again and again.
 *
 * @example
 * weakEtag('[{"id":1}]') // 'W/"..."' (27 base64url characters)
 */
export function weakEtag(first: string, ...others: string[]): string {
  const rest = others.join('\n');
  const known = kept.get(first);
  if (known !== undefined && known.rest === rest) return known.etag;
  const hash = createHash('sha1').update(first).update('\n');
  for (const part of others) hash.update(part).update('\n');
  const etag = `W/"${hash.digest('base64url')}"`;
  if (kept.size >= MAX_KEPT_TAGS) kept.delete(kept.keys().next().value ?? '');
  kept.set(first, { rest, etag });
  return etag;
}

/**
 * Whether an `If-None-Match` value matches `etag` by weak comparison (RFC 9110 section 13.1.2):
 * `*`, or any listed tag with the same opaque part, `W/` or not.
 *
 * @example
 * notModified('W/"a", "b"', '"b"') // true
 * notModified(undefined, '"b"') // false
 */
export function notModified(ifNoneMatch: string | undefined, etag: string): boolean {
  if (!ifNoneMatch) return false;
  if (ifNoneMatch.trim() === '*') return true;
  const opaque = etag.startsWith('W/') ? etag.slice(2) : etag;
  for (const raw of ifNoneMatch.split(',')) {
    const tag = raw.trim();
    if ((tag.startsWith('W/') ? tag.slice(2) : tag) === opaque) return true;
  }
  return false;
}

/**
 * Answers `body` (already serialized) under `etag`: 304 without a body when the request's
 * `If-None-Match` matches, else 200 with the body. Headers gathered earlier (`answerHeaders`) stay on both.
 *
 * @example
 * const body = JSON.stringify(pet)
 * return conditional(c, body, weakEtag(body), 'application/json')
 */
export function conditional(c: Context, body: string, etag: string, contentType: string): Response {
  const headers = answerHeaders(c);
  headers.ETag = etag;
  if (notModified(c.req.header('if-none-match'), etag)) {
    // A 304 repeats the Vary the 200 would have had (RFC 9110 section 15.4.5); a 200 of JSON
    // gets it from `answer()`.
    if (contentType.startsWith('application/json')) appendHeader(headers, 'Vary', 'Accept-Encoding');
    return answer(c, 304, null);
  }
  return answer(c, 200, body, contentType);
}

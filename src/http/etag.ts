import { createHash } from 'node:crypto';

/**
 * A weak entity tag (RFC 9110 section 8.8.3) for a representation: the SHA-1 of its parts, each
 * followed by a newline, in base64url. Weak, because the same JSON is sent identity, gzip or br
 * encoded (a strong tag would have to differ per encoding); `If-None-Match` compares weakly
 * anyway. SHA-1 through node:crypto reads the same on Bun, Deno and Node; it identifies
 * content, it guards nothing.
 *
 * @example
 * weakEtag('[{"id":1}]') // 'W/"..."' (27 base64url characters)
 * weakEtag(page, '<pets?cursor=k>; rel="next"') // the Link is part of the page
 */
export function weakEtag(...parts: string[]): string {
  const hash = createHash('sha1');
  for (const part of parts) hash.update(part).update('\n');
  return `W/"${hash.digest('base64url')}"`;
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

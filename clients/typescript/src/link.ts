/** One link of a `Link` header: `<target>` and its parameters (a quoted value may hold `,` or `;`). */
const LINK = /<([^>]*)>((?:\s*;\s*[^;,"]*(?:"[^"]*")?)*)/g;
const REL = /;\s*rel\s*=\s*(?:"([^"]*)"|([^\s;,"]+))/i;

/**
 * The target of the first link of relation `rel` in a `Link` header (RFC 8288), resolved against
 * `base`, the request's URL: the service writes its links relative (`<pets?cursor=…>`), so they
 * keep any prefix a proxy serves the API under.
 *
 * @example
 * linkTarget('<pets?limit=2&cursor=2>; rel="next"', 'next', 'https://api.example/v1/pets?limit=2')
 * // 'https://api.example/v1/pets?limit=2&cursor=2'
 */
export function linkTarget(header: string | null, rel: string, base: string): string | undefined {
  if (header === null) return undefined;
  for (const [, target = '', params = ''] of header.matchAll(LINK)) {
    const found = REL.exec(params);
    const rels = (found?.[1] ?? found?.[2] ?? '').toLowerCase().split(/\s+/);
    if (rels.includes(rel)) return new URL(target, base).href;
  }
  return undefined;
}

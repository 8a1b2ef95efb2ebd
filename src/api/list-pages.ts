// The `Link` to the next page of a list, as `listPets` and `listOrders` answer it.

/**
 * Returns the RFC 8288 link to the page after `cursor` of `collection` (`pets`, `orders`), with
 * the caller's filters. It is relative to the list's own path (`pets?...`), so a proxy's prefix is
 * kept. Every part is already URL-safe (a number, a status name, a cursor).
 *
 * @example
 * nextPageLink('pets', 20, 'sold', 'k') // '<pets?limit=20&status=sold&cursor=k>; rel="next"'
 */
export function nextPageLink(collection: string, limit: number, status: string | undefined, cursor: string): string {
  const filter = status ? `&status=${status}` : '';
  return `<${collection}?limit=${limit}${filter}&cursor=${cursor}>; rel="next"`;
}

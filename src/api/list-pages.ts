// The `Link` to the next page of a list, as `listPets` and `listOrders` answer it.

/**
 * RFC 8288 link to the page after `cursor` of the list `collection` (`pets`, `orders`), keeping
 * the caller's filters, relative to the list's own path (so `pets?...`: the prefix of any proxy in
 * front is kept). Every part is URL-safe as it is (a number, a status name, a cursor).
 *
 * @example
 * nextPageLink('pets', 20, 'sold', 'k') // '<pets?limit=20&status=sold&cursor=k>; rel="next"'
 */
export function nextPageLink(collection: string, limit: number, status: string | undefined, cursor: string): string {
  const filter = status ? `&status=${status}` : '';
  return `<${collection}?limit=${limit}${filter}&cursor=${cursor}>; rel="next"`;
}

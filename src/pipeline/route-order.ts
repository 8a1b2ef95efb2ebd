// The order in which the table's routes are added to Hono.

/**
 * Returns the table's entries in the order to add their routes to Hono. Hono serves a request with
 * the first route that matches, so a static segment must come before a parameter in the same
 * position. The sort is stable: entries whose segments are of the same kinds keep the table's
 * order. No such route is served, but `/pets/count` would come before `/pets/:petId`.
 *
 * @example
 * byRouteOrder([{ path: '/pets/:petId' }, { path: '/pets/count' }]) // [{ path: '/pets/count' }, { path: '/pets/:petId' }]
 */
export function byRouteOrder<T extends { readonly path: string }>(entries: readonly T[]): T[] {
  const keyed = entries.map((entry) => ({ entry, key: segmentKinds(entry.path) }));
  keyed.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  return keyed.map(({ entry }) => entry);
}

/**
 * Returns a path's segments' kinds, `0` for each static segment and `1` for each parameter:
 * `/pets/:petId` is `01`, after `/pets/count`'s `00`.
 */
function segmentKinds(path: string): string {
  return path
    .split('/')
    .filter((segment) => segment !== '')
    .map((segment) => (segment.startsWith(':') ? '1' : '0'))
    .join('');
}

// Whether a request path is under a prefix such as the API's `/v1` or the admin API's `/admin/v1`.

/**
 * Returns whether `path` is `prefix` itself or below it, segment by segment: `/v10` is not
 * under `/v1`.
 *
 * @example
 * isUnder('/v1', '/v1/pets/7') // true
 * isUnder('/v1', '/v10') // false
 */
export function isUnder(prefix: string, path: string): boolean {
  return path.startsWith(prefix) && (path.length === prefix.length || path[prefix.length] === '/');
}

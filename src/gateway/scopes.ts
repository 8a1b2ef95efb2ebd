/**
 * What an API key may do. The gateway, not the routes, knows which scope each operation needs,
 * so routes and the store stay free of gateway imports.
 */
export const SCOPES = ['pets:read', 'pets:write'] as const;
export type Scope = (typeof SCOPES)[number];

/** The scope each operation needs, by method and path pattern (the contract's operations). */
const REQUIRED: ReadonlyArray<readonly [method: string, path: RegExp, scope: Scope]> = [
  ['GET', /^\/v1\/pets\/?$/, 'pets:read'], // listPets
  ['HEAD', /^\/v1\/pets\/?$/, 'pets:read'],
  ['POST', /^\/v1\/pets\/?$/, 'pets:write'], // createPet
  ['GET', /^\/v1\/pets\/[^/]+$/, 'pets:read'], // getPet
  ['HEAD', /^\/v1\/pets\/[^/]+$/, 'pets:read'],
];

/**
 * The scope a request needs, or undefined for one no operation serves (it gets 404 or 405,
 * which read and store nothing).
 *
 * @example
 * requiredScope('POST', '/v1/pets') // 'pets:write'
 * requiredScope('GET', '/v1/pets/7') // 'pets:read'
 */
export function requiredScope(method: string, path: string): Scope | undefined {
  for (const [m, pattern, scope] of REQUIRED) if (m === method && pattern.test(path)) return scope;
  return undefined;
}

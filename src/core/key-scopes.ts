// The scopes an API key may hold: four for the API's operations, and `admin` for the admin API.

/**
 * What an API key may do. Each operation in the table names the scope it needs
 * (src/api/operations.ts); a key carries a list of scopes (the keys file's `scopes`).
 */
export const SCOPES = ['pets:read', 'pets:write', 'orders:read', 'orders:write'] as const;
export type Scope = (typeof SCOPES)[number];

/**
 * The scope of the admin API (`--admin-port`). A key with it has no other scope, so it is refused
 * on the public API (403), as a public key is refused on the admin port. A key without `scopes`
 * has every scope of the public API, never this one.
 */
export const ADMIN_SCOPE = 'admin';

/** Every scope a key may carry. */
export const KEY_SCOPES = [...SCOPES, ADMIN_SCOPE] as const;
export type KeyScope = (typeof KEY_SCOPES)[number];

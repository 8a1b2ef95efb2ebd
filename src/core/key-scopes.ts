// The scopes an API key may hold: the operations' four, and `admin` for the admin API.

/**
 * What an API key may do. Each operation of the table names the one it needs
 * (src/api/operations.ts); a key carries a list of them (the keys file's `scopes`).
 */
export const SCOPES = ['pets:read', 'pets:write', 'orders:read', 'orders:write'] as const;
export type Scope = (typeof SCOPES)[number];

/**
 * The scope of the admin API (`--admin-port`). A key that has it has no other scope, so it is
 * refused on the public API (403) as a public key is refused on the admin port; a key without
 * `scopes` has every scope of the public API, never this one.
 */
export const ADMIN_SCOPE = 'admin';

/** Every scope a key may carry. */
export const KEY_SCOPES = [...SCOPES, ADMIN_SCOPE] as const;
export type KeyScope = (typeof KEY_SCOPES)[number];

/**
 * What an API key may do. Each operation of the table names the one it needs
 * (src/api/operations.ts); a key carries a list of them (the keys file's `scopes`).
 */
export const SCOPES = ['pets:read', 'pets:write'] as const;
export type Scope = (typeof SCOPES)[number];

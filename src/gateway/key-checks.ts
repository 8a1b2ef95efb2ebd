// The gateway's refusals based on the caller's key: 401 without a valid key (`unauthorized`), 403
// for a key without the operation's scope (`missingScope`) or an admin key on the public API
// (`adminKeyOnPublicApi`), each with its `WWW-Authenticate` challenge.
import { ApiError } from '../core/api-error.ts';
import { ADMIN_SCOPE } from '../core/key-scopes.ts';
import type { KeylessCaller } from './caller.ts';

/** The start of every gateway 401 and 403 `WWW-Authenticate` challenge (RFC 6750). */
const REALM = 'Bearer realm="petstore"';

/**
 * Returns the 403 `insufficient_scope` (RFC 6750 section 3.1) if the key lacks `needed`, the
 * operation's scope, else undefined. The gateway calls it after the limiter has spent the cost, so
 * probing a key's scopes costs quota.
 *
 * @example
 * // ApiError 403, WWW-Authenticate: ... scope="pets:write"
 * missingScope(readOnlyKey.scopes, 'pets:write')
 */
export function missingScope(scopes: readonly string[], needed: string | undefined): ApiError | undefined {
  if (needed === undefined || scopes.includes(needed)) return undefined;
  return new ApiError('insufficient_scope', `The API key lacks the scope ${needed} that this operation needs.`, {
    'WWW-Authenticate': `${REALM}, error="insufficient_scope", scope="${needed}"`,
  });
}

/** The 403 for an admin key on the public API, built once since it never changes. */
const ADMIN_KEY_HERE = new ApiError('insufficient_scope', 'An admin key works on the admin API (--admin-port) only.', {
  'WWW-Authenticate': `${REALM}, error="insufficient_scope"`,
});

/**
 * Returns the 403 for a key with the `admin` scope on the public API, else undefined. An admin key
 * holds no other scope, so an operation with a scope has refused it already.
 *
 * @example
 * adminKeyOnPublicApi(['admin']) // ApiError 403 insufficient_scope
 */
export function adminKeyOnPublicApi(scopes: readonly string[]): ApiError | undefined {
  return scopes.includes(ADMIN_SCOPE) ? ADMIN_KEY_HERE : undefined;
}

/**
 * The 401s for a caller without a valid key (RFC 6750 section 3), built once. A revoked, expired
 * or not yet valid key gets the unknown key's 401, so no answer tells a guess from a real token.
 */
const MISSING_KEY = new ApiError('unauthorized', 'An API key is required: send Authorization: Bearer <API_KEY>.', {
  'WWW-Authenticate': REALM,
});
// contract/admin.openapi.yaml's 401 example, SECURITY.md and docs/operations.md quote this wording.
// contract/openapi.yaml's example differs, and says that `message` is for people and may change.
const UNKNOWN_KEY = new ApiError('unauthorized', 'The API key is malformed or unknown.', {
  'WWW-Authenticate': `${REALM}, error="invalid_token"`,
});

/** Returns a keyless client's 401: "required" with no header, else "malformed or unknown". */
export function unauthorized(caller: KeylessCaller): ApiError {
  return caller.credential === 'none' ? MISSING_KEY : UNKNOWN_KEY;
}

// The gateway's refusals of a caller (./caller.ts finds it): the 401 of a caller without a valid
// key (`unauthorized`), the 403 of a key that lacks the operation's scope (`missingScope`) and of
// an admin key sent to the public API (`adminKeyOnPublicApi`), with the challenge they carry.
import { ApiError } from '../core/api-error.ts';
import { ADMIN_SCOPE } from '../core/key-scopes.ts';
import type { Caller } from './caller.ts';

/** The `WWW-Authenticate` challenge every 401 and 403 of the gateway starts with (RFC 6750). */
const REALM = 'Bearer realm="petstore"';

/**
 * Returns the 403 `insufficient_scope` (RFC 6750 section 3.1) when the key lacks `needed`, the
 * scope of the operation asked for, else undefined. The gateway asks it after the limiter's
 * decision. It skips it when the limiter refused the request (429), but not for a report-only
 * consumer over its limit, whom the limiter never refuses. So a request refused here has still
 * spent the operation's cost of the quota, and probing which scopes a key has is not free.
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

/** The 403 of an admin key on the public API: made once, it never changes. */
const ADMIN_KEY_HERE = new ApiError('insufficient_scope', 'An admin key works on the admin API (--admin-port) only.', {
  'WWW-Authenticate': `${REALM}, error="insufficient_scope"`,
});

/**
 * Returns the 403 for a key with the scope `admin` on the public API (an operation with a scope has
 * refused it already: an admin key holds no other scope), else undefined.
 *
 * @example
 * adminKeyOnPublicApi(['admin']) // ApiError 403 insufficient_scope
 */
export function adminKeyOnPublicApi(scopes: readonly string[]): ApiError | undefined {
  return scopes.includes(ADMIN_SCOPE) ? ADMIN_KEY_HERE : undefined;
}

/**
 * The 401s for a caller without a valid key (RFC 6750 section 3), made once: they never change.
 * A revoked, expired or not yet valid key gets the unknown key's, so no answer tells a guess
 * from a token that once worked.
 */
const MISSING_KEY = new ApiError('unauthorized', 'An API key is required: send Authorization: Bearer <API_KEY>.', {
  'WWW-Authenticate': REALM,
});
// contract/admin.openapi.yaml's 401 example, SECURITY.md and docs/operations.md quote this wording.
// contract/openapi.yaml's example differs, and says that `message` is for people and may change.
const UNKNOWN_KEY = new ApiError('unauthorized', 'The API key is malformed or unknown.', {
  'WWW-Authenticate': `${REALM}, error="invalid_token"`,
});

/**
 * Returns the 401 of a keyless client: the missing key's, else the unknown key's for any
 * credential.
 */
export function unauthorized(caller: Extract<Caller, { kind: 'keyless' }>): ApiError {
  return caller.credential === 'none' ? MISSING_KEY : UNKNOWN_KEY;
}

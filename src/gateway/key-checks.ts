// The checks of a found key, after `identify()` (`caller.ts`): its validity dates (`callerAt`, a
// key outside them makes a keyless client), its scopes (`missingScope`) and an admin key sent to
// the public API (`adminKeyOnPublicApi`), with the challenge their 401 and 403 carry.
import { ApiError } from '../core/api-error.ts';
import { ADMIN_SCOPE } from '../core/key-scopes.ts';
import type { KeyTable } from '../keys/table.ts';
import { type Caller, identify } from './caller.ts';

/** The `WWW-Authenticate` challenge every 401 and 403 of the gateway starts with (RFC 6750). */
const REALM = 'Bearer realm="petstore"';

/**
 * The caller of a request with this `Authorization` header at `now`: the key found
 * (`identify()`), then its dates checked (`callerAt()`). The gateway asks this once per request.
 *
 * @example
 * callerOf('Bearer psk_…', table, Date.now(), () => '203.0.113.9') // { kind: 'consumer', … }
 */
export function callerOf(
  authorization: string | undefined,
  keys: KeyTable,
  now: number,
  address: () => string,
): Caller {
  return callerAt(identify(authorization, keys, address), now, address);
}

/**
 * The caller as the gateway treats it at `now`. A key past its `expiresAt` or before its
 * `notBefore` makes its caller a keyless client: limited per address, answered the unknown key's
 * 401, so the answer never confirms a token was valid. The log's `credential` says why. Checked on
 * every request, so a key expires without a reload.
 *
 * @example
 * callerAt(identify('Bearer psk_old…', table, address), Date.now(), address) // { kind: 'keyless', credential: 'expired', … }
 */
export function callerAt(caller: Caller, now: number, address: () => string): Caller {
  if (caller.kind !== 'consumer') return caller;
  const { key } = caller;
  if (key.expiresAt !== undefined && now >= key.expiresAt)
    return { kind: 'keyless', address: address(), credential: 'expired', key };
  if (key.notBefore !== undefined && now < key.notBefore) {
    return { kind: 'keyless', address: address(), credential: 'not_yet_valid', key };
  }
  return caller;
}

/**
 * The 403 `insufficient_scope` (RFC 6750 section 3.1) when the key lacks `needed`, the scope of the
 * operation asked for, else undefined. Asked after the limiter admitted the request: a refused
 * request has still spent the operation's cost of the quota, so probing which scopes a key has is
 * not free.
 *
 * @example
 * missingScope(readOnlyKey.scopes, 'pets:write') // ApiError 403, WWW-Authenticate: ... scope="pets:write"
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
 * The 403 for a key with the scope `admin` on the public API (an operation with a scope has
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
const UNKNOWN_KEY = new ApiError('unauthorized', 'The API key is missing, malformed or unknown.', {
  'WWW-Authenticate': `${REALM}, error="invalid_token"`,
});

/** The 401 of a keyless client: the missing key's, or the unknown key's for every other credential. */
export function unauthorized(caller: Extract<Caller, { kind: 'keyless' }>): ApiError {
  return caller.credential === 'none' ? MISSING_KEY : UNKNOWN_KEY;
}

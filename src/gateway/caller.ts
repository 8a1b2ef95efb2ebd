// Who sent a request: `callerOf()` turns the `Authorization` header into a `Caller`, a key's
// consumer or a keyless client known by its address. `identify()` finds the key and `callerAt()`
// checks its dates. The gateway asks `callerOf()` first; ./key-checks.ts holds its refusals.
import type { Consumer, KeyRecord } from '../keys/records.ts';
import { bearerToken, type KeyTable } from '../keys/table.ts';

/**
 * Who sent a request: a key's consumer, or a keyless client known by its canonical address.
 * `callerOf()` makes it once per request for the gateway (`identify()` finds the key, `callerAt()`
 * turns a key used outside its dates into a keyless client), and every later step reads it. The
 * trace asks `callerOf()` again, through `validAuthorizationTest()` (./gateway.ts), for a valid
 * `traceparent`. A consumer carries no address: nothing about it depends on where it calls from,
 * and looking the address up costs time.
 */
export type Caller =
  | {
      readonly kind: 'consumer';
      readonly consumer: Consumer;
      readonly key: KeyRecord;
    }
  | {
      readonly kind: 'keyless';
      readonly address: string;
      /**
       * What the request carried, for the log; every value but `none` gets the same 401. `none`:
       * no Authorization header; `malformed`: not `Bearer <token>`; `bad_checksum`, `unknown`: a
       * token no key has; `revoked`: a revoked key's; `expired`, `not_yet_valid`: see `callerAt()`.
       */
      readonly credential: Credential;
      /**
       * The known key of a `revoked`, `expired` or `not_yet_valid` credential: for logs and
       * metrics, never for quota.
       */
      readonly key?: KeyRecord;
    };

/** A caller that presented a valid key: the only kind the gateway lets through. */
export type ConsumerCaller = Extract<Caller, { kind: 'consumer' }>;

/** Why a request is not a consumer's: see `Caller`. */
export type Credential = 'none' | 'malformed' | 'bad_checksum' | 'unknown' | 'revoked' | 'expired' | 'not_yet_valid';

/**
 * Returns the caller of a request with this `Authorization` header; `address` gives the canonical
 * client address, asked only when no key admits the request.
 *
 * @example
 * identify('Bearer psk_…', table, () => '203.0.113.9') // { kind: 'consumer', consumer: { name: 'acme', … }, … }
 * identify(undefined, table, () => '203.0.113.9') // { kind: 'keyless', address: '203.0.113.9', credential: 'none' }
 */
function identify(authorization: string | undefined, keys: KeyTable, address: () => string): Caller {
  const token = bearerToken(authorization);
  if (token === undefined)
    return { kind: 'keyless', address: address(), credential: authorization === undefined ? 'none' : 'malformed' };
  const key = keys.find(token);
  if (typeof key === 'string') return { kind: 'keyless', address: address(), credential: key };
  if (key.revokedAt !== undefined) return { kind: 'keyless', address: address(), credential: 'revoked', key };
  return { kind: 'consumer', consumer: key.consumer, key };
}

/**
 * Returns the caller of a request with this `Authorization` header at `now`: the key found
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
 * Returns the caller as the gateway treats it at `now`. A key past its `expiresAt` or before its
 * `notBefore` makes its caller a keyless client. The gateway limits that client per address and
 * answers it the same 401 as an unknown key, so the answer never confirms that a token was valid.
 * The log's `credential` says why. The dates are checked on every request, so a key expires
 * without a reload.
 *
 * @example
 * callerAt(identify('Bearer psk_old…', table, address), Date.now(), address) // { kind: 'keyless', credential: 'expired', … }
 */
function callerAt(caller: Caller, now: number, address: () => string): Caller {
  if (caller.kind !== 'consumer') return caller;
  const { key } = caller;
  if (key.expiresAt !== undefined && now >= key.expiresAt)
    return { kind: 'keyless', address: address(), credential: 'expired', key };
  if (key.notBefore !== undefined && now < key.notBefore) {
    return { kind: 'keyless', address: address(), credential: 'not_yet_valid', key };
  }
  return caller;
}

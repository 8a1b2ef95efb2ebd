// Who sent a request: `callerOf()` turns the `Authorization` header into a `Caller`, either a
// key's consumer or a keyless client known by its address. The gateway calls it first (step 3a);
// ./key-checks.ts holds the refusals that follow.
import type { Consumer, KeyRecord } from '../keys/records.ts';
import { bearerToken, type KeyTable } from '../keys/table.ts';

/**
 * Who sent a request: a key's consumer, or a keyless client known by its canonical address. The
 * gateway makes it once per request and later steps read it. A consumer carries no address,
 * because nothing about it depends on where it calls from and the lookup costs time.
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
       * Why the request has no valid key, for the log; all values get the same 401. `none`: no
       * Authorization header; `malformed`: not `Bearer <token>`; `bad_checksum`, `unknown`: no key
       * has this token; `revoked`: a revoked key; `expired`, `not_yet_valid`: see `callerAt()`.
       */
      readonly credential: Credential;
      /** The key of a `revoked`, `expired` or `not_yet_valid` credential, for logs and metrics. */
      readonly key?: KeyRecord;
    };

/** A caller with a valid key: the only kind the gateway admits. */
export type ConsumerCaller = Extract<Caller, { kind: 'consumer' }>;

/**
 * A caller without a valid key: counted by its address (3b), then refused (401, or 429; 503 when
 * the limiter cannot decide).
 */
export type KeylessCaller = Extract<Caller, { kind: 'keyless' }>;

/** Why a caller is keyless: see `Caller`. */
export type Credential = 'none' | 'malformed' | 'bad_checksum' | 'unknown' | 'revoked' | 'expired' | 'not_yet_valid';

/**
 * Returns the caller for this `Authorization` header, ignoring the key's dates. `address` returns
 * the canonical client address and is called only for a keyless caller.
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
 * Returns the caller for this `Authorization` header at `now`: the key is looked up, then its
 * dates are checked. The gateway calls it once per request, and `validAuthorizationTest()` too.
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
 * Turns a consumer whose key is past `expiresAt` or before `notBefore` into a keyless client. It
 * then gets the same per-address limits and 401 as an unknown key, so the answer never confirms
 * that a token exists. Dates are checked on every request, so a key expires without a reload.
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

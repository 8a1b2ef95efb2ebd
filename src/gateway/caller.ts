// Who sent a request: `identify()` turns the `Authorization` header into a `Caller`, a key's
// consumer or a keyless client known by its address. The gateway asks it first, through
// `callerOf()` (./key-checks.ts).
import type { Consumer, KeyRecord } from '../keys/records.ts';
import { bearerToken, type KeyTable } from '../keys/table.ts';

/**
 * Who sent a request: a key's consumer, or a keyless client known by its canonical address.
 * `identify()` makes it once per request, `callerAt()` turns a key used outside its dates into a
 * keyless client, and every later step reads it. A consumer carries no address: nothing about it
 * depends on where it calls from, and looking the address up costs time.
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
       * token no key has; `revoked`: a revoked key's; `expired`, `not_yet_valid`: see `key-checks.ts`.
       */
      readonly credential: Credential;
      /** The known key of a `revoked`, `expired` or `not_yet_valid` credential: for logs and metrics, never for quota. */
      readonly key?: KeyRecord;
    };

/** A caller that presented a valid key: the only kind the gateway lets through. */
export type ConsumerCaller = Extract<Caller, { kind: 'consumer' }>;

/** Why a request is not a consumer's: see `Caller`. */
export type Credential = 'none' | 'malformed' | 'bad_checksum' | 'unknown' | 'revoked' | 'expired' | 'not_yet_valid';

/**
 * The caller of a request with this `Authorization` header; `address` gives the canonical client
 * address, asked only when no key admits the request.
 *
 * @example
 * identify('Bearer psk_…', table, () => '203.0.113.9') // { kind: 'consumer', consumer: { name: 'acme', … }, … }
 * identify(undefined, table, () => '203.0.113.9') // { kind: 'keyless', address: '203.0.113.9', credential: 'none' }
 */
export function identify(authorization: string | undefined, keys: KeyTable, address: () => string): Caller {
  const token = bearerToken(authorization);
  if (token === undefined)
    return { kind: 'keyless', address: address(), credential: authorization === undefined ? 'none' : 'malformed' };
  const key = keys.find(token);
  if (typeof key === 'string') return { kind: 'keyless', address: address(), credential: key };
  if (key.revokedAt !== undefined) return { kind: 'keyless', address: address(), credential: 'revoked', key };
  return { kind: 'consumer', consumer: key.consumer, key };
}

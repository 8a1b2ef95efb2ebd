// Step 1's request log: `requestLog()` gives each request its id and writes one line per request
// once it is answered.
import type { Context } from 'hono';
import { routePath } from 'hono/route';
import type { AppEnv } from '../app-env.ts';
import type { Clock } from '../core/clock.ts';
import type { LogFields, Logger } from '../log.ts';
import { holdsToken } from '../redact.ts';

export interface RequestLogOptions {
  log: Logger;
  clock: Clock;
  /** Makes a fresh request id when the client sent none usable. */
  newId?: () => string;
  /**
   * The client's address, logged for requests the gateway did not see: a path outside the API
   * prefix, a preflight, a 414 (step 1), a service route.
   */
  clientAddress?: (c: Context<AppEnv>) => string;
}

/**
 * A client's request id is kept only when it is short and plain (1 to 64 of `[A-Za-z0-9._:-]`),
 * so it is safe to log and echo. A `Bearer …` value fails (it has a space), and `saneRequestId`
 * also refuses any id containing `psk_` (an API token), so a token sent by mistake never appears
 * in our log or a proxy's.
 */
const SANE_ID = /^[A-Za-z0-9._:-]{1,64}$/;

/**
 * Returns whether the client's `X-Request-Id` is kept.
 *
 * @example
 * saneRequestId('trace-42') // true
 * saneRequestId('Bearer psk_abc') // false
 * saneRequestId('x.psk_abc') // false
 */
function saneRequestId(given: string): boolean {
  return SANE_ID.test(given) && !holdsToken(given);
}

/** What `finish` needs of the start of a request. */
export interface RequestStart {
  id: string;
  at: number;
}

/**
 * Makes the request log, as two calls for step 1 (`handleRequest`): `start` gives the request its
 * id (the client's `X-Request-Id` when safe), and `finish` writes the one log line once the status
 * is known. The line names the key or the address, never the token.
 *
 * @example
 * const requests = requestLog({ log, clock: systemClock })
 * const start = requests.start(c)
 * const res = await inner(c)
 * requests.finish(c, start, res.status)
 * // {"time":"…","level":"info","msg":"request","requestId":"…","method":"GET","route":"/v1/pets",
 * //  "status":200,"durationMs":1,"consumer":"acme","key":"<the key's id>"}
 */
export function requestLog({ log, clock, newId = () => crypto.randomUUID(), clientAddress }: RequestLogOptions) {
  return {
    start(c: Context<AppEnv>): RequestStart {
      const at = clock.now();
      const given = c.req.header('x-request-id');
      const id = given !== undefined && saneRequestId(given) ? given : newId();
      c.set('requestId', id);
      return { id, at };
    },
    /**
     * Writes the request's log line. Call it inside the request state, whose `requestId`, `traceId`
     * and `spanId` the line carries. It adds `"traceSampled":true` when the trace is `exported`.
     */
    finish(c: Context<AppEnv>, { at }: RequestStart, status: number, exported = false): void {
      const method = c.req.method;
      const route = routePath(c);
      const durationMs = clock.now() - at;
      // The fields every line has, in one literal; `who()` adds the caller's.
      const fields: LogFields = exported
        ? { method, route, status, durationMs, traceSampled: true }
        : { method, route, status, durationMs };
      log.info('request', who(c, clientAddress, fields));
    },
  };
}

/**
 * Returns `fields` with the consumer's name and the key's id when the gateway found a key, else
 * with the client's address.
 */
function who(c: Context<AppEnv>, clientAddress: RequestLogOptions['clientAddress'], fields: LogFields): LogFields {
  const caller = c.get('caller');
  if (caller?.kind === 'consumer') {
    fields.consumer = caller.consumer.name;
    fields.key = caller.key.id;
  } else if (caller?.key) {
    // A revoked key, or a known key outside its dates: answered as an unknown key, but logged by
    // name with the reason.
    fields.client = caller.address;
    fields.consumer = caller.key.consumer.name;
    fields.key = caller.key.id;
    fields.credential = caller.credential;
  } else if (caller) {
    fields.client = caller.address;
    // Why no key admitted it (malformed, bad_checksum, unknown); nothing of the token itself.
    if (caller.credential !== 'none') fields.credential = caller.credential;
  } else if (clientAddress) fields.client = clientAddress(c);
  return fields;
}

import type { Context, Next } from 'hono';
import { type Clock, systemClock } from '../clock.ts';
import type { AppEnv } from '../env.ts';
import { ApiError, serviceUnavailable } from '../http/errors.ts';
import { canonicalAddress } from './addresses.ts';
import { type Caller, identify } from './caller.ts';
import { decider } from './decide.ts';
import { writeRateLimitHeaders } from './headers.ts';
import { InFlight, tooManyInFlight, untouched } from './in-flight.ts';
import type { KeyTable } from './keys/table.ts';
import { invalidKey, REALM, requireScope, validAt } from './keys/validity.ts';
import type { Decision, RateLimiter, Verdict } from './limiter/limiter.ts';
import { type BanPolicy, DEFAULT_MAX_IN_FLIGHT } from './plans.ts';

export interface GatewayOptions {
  /** The current keys; a function so a reload swaps the table between requests. */
  keys: () => KeyTable;
  limiter: RateLimiter;
  /** The client's address, as trusted: the socket peer, or X-Forwarded-For from a trusted proxy. */
  clientAddress: (c: Context<AppEnv>) => string;
  /** Ban applied when a key or address sets none of its own. */
  ban?: BanPolicy;
  /** Most requests one consumer may have in flight (`--max-in-flight`). */
  maxInFlight?: number;
  /** IPv6 callers without a valid key are counted by this prefix (`--ipv6-prefix`, default 56). */
  ipv6Prefix?: number;
  clock?: Clock;
}

/**
 * The gateway's pass: what `gateway()` returns. It calls `next` for an admitted request and
 * resolves to undefined; a refusal (401, 429) is returned, not thrown, for the caller to answer
 * through the app's one error handler: a throw through the async frames was the largest single
 * item of the 401 path's own code (bench/README.md, phase 3). A 403 or 503 is still thrown.
 */
export type GatewayPass = (c: Context<AppEnv>, next: Next) => Promise<ApiError | undefined>;

/**
 * The gateway's one pass: identify the caller once, take its in-flight slot before anything is
 * awaited, ask the limiter once, write the rate-limit headers once on every outcome. Admitted
 * requests go on; refused ones get 429, callers without a valid key 401 (both returned), a
 * limiter that cannot decide 503, all answered through the one error path (`apiPass`). A
 * consumer at its cap of requests in flight gets 429 before the limiter is asked, so no 429
 * costs quota.
 *
 * @example
 * const pass = gateway({ keys: () => table, limiter, clientAddress: () => '127.0.0.1' })
 * const refused = await pass(c, next) // undefined once next() ran, else the ApiError to answer
 */
export function gateway({
  keys,
  limiter,
  clientAddress,
  ban,
  maxInFlight = DEFAULT_MAX_IN_FLIGHT,
  ipv6Prefix,
  clock = systemClock,
}: GatewayOptions): GatewayPass {
  const decide = decider({ limiter, ban, ...(ipv6Prefix === undefined ? {} : { ipv6Prefix }) });
  const inFlight = new InFlight<Decision>(maxInFlight);

  return async function gateway(c, next) {
    // The client's address is looked up only for callers without a valid key.
    const address = () => canonicalAddress(clientAddress(c));
    const caller = validAt(identify(c.req.header('authorization'), keys(), address), clock.now(), address);
    c.set('caller', caller);
    if (caller.kind === 'address') {
      const decision = decided(await decide(caller));
      writeRateLimitHeaders(c, decision);
      return refusal(decision) ?? invalidKey(caller) ?? unauthorized(caller);
    }
    const { name, limits } = caller.consumer;
    // Taken before the first await: of many sent at once, only `maxInFlight` pass this line.
    if (!inFlight.enter(name)) {
      const now = Math.floor(clock.now() / 1000);
      writeRateLimitHeaders(c, inFlight.latest(name) ?? untouched(limits, now), now);
      return tooManyInFlight(inFlight.max);
    }
    try {
      const decision = decided(await decide(caller));
      writeRateLimitHeaders(c, decision);
      const refused = refusal(decision);
      if (refused) return refused;
      inFlight.admitted(name, decision);
      requireScope(caller.key.scopes, c.req.method, c.req.path);
      await next();
      return undefined;
    } finally {
      inFlight.leave(name);
    }
  };
}

/** The decision in a verdict; a limiter that cannot decide is a 503. */
function decided(verdict: Verdict): Decision {
  if (verdict.outcome === 'unavailable') {
    throw serviceUnavailable('Rate limits cannot be checked right now; retry shortly.');
  }
  return verdict;
}

/** The 401s for a caller without a valid key (RFC 6750 section 3), made once: they never change. */
const MISSING_KEY = new ApiError('unauthorized', 'An API key is required: send Authorization: Bearer <API_KEY>.', {
  'WWW-Authenticate': REALM,
});
const UNKNOWN_KEY = new ApiError('unauthorized', 'The API key is missing, malformed or unknown.', {
  'WWW-Authenticate': `${REALM}, error="invalid_token"`,
});

function unauthorized(caller: Extract<Caller, { kind: 'address' }>): ApiError {
  return caller.credential === 'none' ? MISSING_KEY : UNKNOWN_KEY;
}

/** The decision's 429, or undefined when it admitted the request. */
function refusal(decision: Decision): ApiError | undefined {
  if (decision.outcome === 'key_banned') {
    return new ApiError(
      'key_banned',
      `Too many requests after being limited; banned for ${decision.retryAfter} more seconds.`,
    );
  }
  if (decision.outcome === 'rate_limited') {
    return new ApiError('rate_limited', `Rate limit exceeded; retry in ${decision.retryAfter} seconds.`);
  }
  return undefined;
}

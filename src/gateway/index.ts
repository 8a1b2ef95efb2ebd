import type { Context, MiddlewareHandler } from 'hono';
import { type Clock, systemClock } from '../clock.ts';
import type { AppEnv } from '../env.ts';
import { ApiError } from '../errors.ts';
import { rateLimitHeaders } from './headers.ts';
import { InFlight, tooManyInFlight } from './in-flight.ts';
import type { KeyRecord } from './keys/file.ts';
import { bearerToken, type KeyTable } from './keys/table.ts';
import type { Decision, RateLimiter, Subject } from './limiter/limiter.ts';
import { type BanPolicy, DEFAULT_BAN, DEFAULT_MAX_IN_FLIGHT, PLAN_LIMITS } from './plans.ts';
import { SuspectAddresses } from './suspects.ts';

export interface GatewayOptions {
  /** The current keys; a function so a reload swaps the table between requests. */
  keys: () => KeyTable;
  limiter: RateLimiter;
  /** The client's address, as trusted: the socket peer, or X-Forwarded-For from a trusted proxy. */
  clientAddress: (c: Context<AppEnv>) => string;
  /** Ban applied when a key or address sets none of its own. */
  ban?: BanPolicy;
  /** Most requests one key may have in flight (`--max-in-flight`). */
  maxInFlight?: number;
  clock?: Clock;
}

const REALM = 'Bearer realm="petstore"';

/**
 * Identifies the caller once, asks the limiter once and writes the rate-limit headers on every
 * outcome: admitted requests go on; refused ones get 429, unknown callers 401. A key already at
 * its cap of requests in flight gets 429 before the limiter is asked, so no 429 costs quota.
 *
 * @example
 * app.use('/v1/*', gateway({ keys: () => table, limiter, clientAddress: () => '127.0.0.1' }))
 */
export function gateway({
  keys,
  limiter,
  clientAddress,
  ban = DEFAULT_BAN,
  maxInFlight = DEFAULT_MAX_IN_FLIGHT,
  clock = systemClock,
}: GatewayOptions): MiddlewareHandler<AppEnv> {
  const subjects = new WeakMap<KeyRecord, Subject>();
  const keySubject = (key: KeyRecord): Subject => {
    let subject = subjects.get(key);
    if (!subject) {
      const policy = key.ban ?? ban;
      subject = {
        id: `key:${key.name}`,
        plan: key.plan,
        label: key.name,
        limits: key.limits,
        ban: { seconds: policy.seconds, threshold: policy.threshold ?? key.limits.perMinute },
      };
      subjects.set(key, subject);
    }
    return subject;
  };
  const anonymousBan = { seconds: ban.seconds, threshold: ban.threshold ?? PLAN_LIMITS.free.perMinute };
  const addressSubject = (address: string): Subject => ({
    id: `addr:${address}`,
    plan: 'anonymous',
    label: address,
    limits: PLAN_LIMITS.free,
    ban: anonymousBan,
  });
  const suspects = new SuspectAddresses();
  const inFlight = new InFlight<Decision>(maxInFlight);

  return async function gateway(c, next) {
    const header = c.req.header('authorization');
    const token = bearerToken(header);
    const key = token === undefined ? undefined : keys().lookup(token);
    let subject: Subject;
    if (key) {
      c.set('caller', { kind: 'key', key });
      subject = keySubject(key);
      // From an address refused for failed keys, a valid key is refused like a wrong one until
      // the address is admitted again: a 200 among 429s would tell a guesser which guess won.
      if (suspects.size > 0) {
        const address = clientAddress(c);
        if (suspects.has(address)) {
          const guard = await limiter.decide(addressSubject(address));
          if (guard.outcome !== 'admitted') {
            suspects.mark(address);
            refuse(c, guard);
          }
          suspects.clear(address);
        }
      }
      // Checked before the limiter decides, so this 429 consumes no quota either.
      const held = inFlight.full(key.name);
      if (held) {
        writeHeaders(c, held, Math.floor(clock.now() / 1000));
        throw tooManyInFlight(inFlight.max);
      }
    } else {
      const address = clientAddress(c);
      c.set('caller', { kind: 'address', address });
      subject = addressSubject(address);
    }

    const decision = await limiter.decide(subject);
    if (!key && decision.outcome !== 'admitted') suspects.mark(subject.label);
    refuse(c, decision);
    if (!key) {
      const challenge = header === undefined ? REALM : `${REALM}, error="invalid_token"`;
      throw new ApiError(
        'unauthorized',
        header === undefined
          ? 'An API key is required: send Authorization: Bearer <API_KEY>.'
          : 'The API key is missing, malformed or unknown.',
        {
          'WWW-Authenticate': challenge,
        },
      );
    }
    inFlight.enter(key.name, decision);
    try {
      await next();
    } finally {
      inFlight.leave(key.name);
    }
  };
}

/**
 * Writes a decision's rate-limit headers. Given `now` (unix seconds), the decision is an earlier
 * one (nothing was consumed since) and a Reset that has passed moves to now: never in the past.
 */
function writeHeaders(c: Context<AppEnv>, decision: Decision, now?: number): void {
  const headers = rateLimitHeaders(decision);
  if (now !== undefined && Number(headers['X-RateLimit-Reset']) < now) headers['X-RateLimit-Reset'] = String(now);
  for (const name in headers) c.header(name, headers[name]);
}

/** Writes the decision's rate-limit headers; throws its 429 unless it admitted the request. */
function refuse(c: Context<AppEnv>, decision: Decision): void {
  writeHeaders(c, decision);
  if (decision.outcome === 'key_banned') {
    throw new ApiError(
      'key_banned',
      `Too many requests after being limited; banned for ${decision.retryAfter} more seconds.`,
    );
  }
  if (decision.outcome === 'rate_limited') {
    throw new ApiError('rate_limited', `Rate limit exceeded; retry in ${decision.retryAfter} seconds.`);
  }
}

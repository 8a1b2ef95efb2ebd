// Rate-limit response headers from one limiter decision: the de facto `X-RateLimit-*` trio for
// the binding window, and the IETF draft's `RateLimit-Policy` / `RateLimit` for every window
// (draft-ietf-httpapi-ratelimit-headers).
// The same quota as a body, for `GET /v1/rate_limit`: its type, src/core/rate-limit-status.ts; made
// by src/gateway/quota.ts; sent by src/api/rate-limit.ts (ARCHITECTURE.md's table "Rate limits
// and quotas").
import type { Context } from 'hono';
import { LRUCache } from 'lru-cache';
import type { Decision, WindowState } from '../core/decision.ts';
import type { AnswerHeaders } from '../core/reply.ts';
import { answerHeaders } from '../core/reply.ts';

/**
 * Cache size for `RateLimit-Policy` values, keyed by the windows' limits and sizes: distinct sets
 * are few (the plans plus consumers' own limits), and the value depends on nothing else.
 */
const MAX_CACHED_POLICIES = 1_024;
const policies = new LRUCache<string, string>({ max: MAX_CACHED_POLICIES });

/**
 * Returns the window the `X-RateLimit-*` headers describe. Tie-breaking relies on
 * `Decision.windows` being ordered shortest first (src/core/decision.ts).
 * - admitted: the fewest remaining; a tie goes to the shorter window.
 * - rate_limited: the window `Retry-After` waits for (remaining 0, reset = now + Retry-After);
 *   a tie goes to the shorter window.
 * - key_banned: the shortest window at least as long as the rest of the ban (else the longest),
 *   so that Reset = now + Retry-After is still within one window.
 *
 * @example
 * bindingWindow(decision).name // 'minute'
 */
export function bindingWindow(decision: Decision): WindowState {
  const { windows, outcome, retryAfter, now } = decision;
  const first = windows[0];
  if (!first) throw new TypeError('a decision needs at least one window');
  if (outcome === 'key_banned') {
    return windows.find((w) => w.seconds >= retryAfter) ?? windows.at(-1) ?? first;
  }
  if (outcome === 'rate_limited') {
    const awaited = windows.find((w) => w.remaining === 0 && w.reset === now + retryAfter);
    if (awaited) return awaited;
  }
  let binding = first;
  for (const w of windows) if (w.remaining < binding.remaining) binding = w;
  return binding;
}

/**
 * Returns all rate-limit headers for a decision, admitted or not. When not admitted, Remaining is
 * 0 and Reset is now + Retry-After; during a ban every window in `RateLimit` shows r=0. Pass
 * `withRetryAfter` true only for a 429, so a report-only consumer or a quota read gets no
 * `Retry-After`. The defaults are for tests; the gateway passes both arguments.
 *
 * @example
 * rateLimitHeaders(decision)
 * // { 'X-RateLimit-Limit': '60', 'X-RateLimit-Remaining': '59', 'X-RateLimit-Reset': '1700000060',
 * //   'RateLimit-Policy': '"minute";q=60;w=60, "day";q=1000;w=86400',
 * //   RateLimit: '"minute";r=59;t=60, "day";r=999;t=86400' }
 */
export function rateLimitHeaders(
  decision: Decision,
  into: AnswerHeaders = {},
  withRetryAfter = decision.outcome !== 'admitted',
): AnswerHeaders {
  const { windows, outcome, now } = decision;
  const binding = bindingWindow(decision);
  const wait = decision.retryAfter;
  const refused = outcome !== 'admitted';
  const banned = outcome === 'key_banned';
  let state = '';
  for (const w of windows) {
    const r = banned ? 0 : w.remaining;
    const t = banned ? Math.max(w.reset - now, wait) : w.reset - now;
    state += `${state ? ', ' : ''}"${w.name}";r=${r};t=${t}`;
  }
  into['X-RateLimit-Limit'] = String(binding.limit);
  into['X-RateLimit-Remaining'] = String(refused ? 0 : binding.remaining);
  into['X-RateLimit-Reset'] = String(refused ? now + wait : binding.reset);
  into['RateLimit-Policy'] = policy(windows);
  into.RateLimit = state;
  if (withRetryAfter) into['Retry-After'] = String(wait);
  return into;
}

/**
 * Returns the `RateLimit-Policy` value (`"minute";q=60;w=60, "day";q=1000;w=86400`), cached per
 * set of limits and window sizes (the month's size varies).
 */
function policy(windows: readonly WindowState[]): string {
  let key = '';
  for (const w of windows) key += `${w.limit}/${w.seconds} `;
  let value = policies.get(key);
  if (value === undefined) {
    value = windows.map((w) => `"${w.name}";q=${w.limit};w=${w.seconds}`).join(', ');
    policies.set(key, value);
  }
  return value;
}

/**
 * Adds a decision's rate-limit headers to the response (`answerHeaders`). `withRetryAfter` says
 * whether the answer is this decision's 429 and so carries its `Retry-After`: false for an
 * admitted request, and for a report-only consumer's refused one, which is served. Pass `now`
 * (unix seconds) when the decision is an earlier one, so a Reset in the past is shown as now.
 *
 * @example
 * // limiterRefusal() (gateway.ts) makes the decision's 429
 * const limited = consumer.enforce ? limiterRefusal(decision) : undefined
 * writeRateLimitHeaders(c, decision, limited !== undefined)
 */
export function writeRateLimitHeaders(c: Context, decision: Decision, withRetryAfter: boolean, now?: number): void {
  const headers = rateLimitHeaders(decision, answerHeaders(c), withRetryAfter);
  if (now !== undefined && Number(headers['X-RateLimit-Reset']) < now) headers['X-RateLimit-Reset'] = String(now);
}

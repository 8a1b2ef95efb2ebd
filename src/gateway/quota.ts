// Step 3's part of `GET /rate_limit`: `quotaStatus()` turns the limiter's cost-0 decision into the
// body the handler answers, from the same numbers as the rate-limit headers.
import type { Decision } from '../core/decision.ts';
import type { RateLimitStatus } from '../core/rate-limit-status.ts';
import type { Consumer } from '../keys/records.ts';

/**
 * Returns a consumer's quota as `GET /v1/rate_limit` shows it, from the decision that read it (cost
 * 0): the very numbers its rate-limit headers are written from, so the body, those headers and the
 * next request's headers come from one source. During a ban the windows keep their own counts and
 * `ban.until` says when requests are admitted again.
 *
 * @example
 * quotaStatus(consumer, decision)
 * // { consumer: 'acme', plan: 'pro', windows: [{ name: 'minute', limit: 300, remaining: 281, reset: 1795000000 }, ...], ban: null }
 */
export function quotaStatus(consumer: Consumer, decision: Decision): RateLimitStatus {
  return {
    consumer: consumer.name,
    plan: consumer.plan,
    windows: decision.windows.map(({ name, limit, remaining, reset }) => ({ name, limit, remaining, reset })),
    ban: decision.outcome === 'key_banned' ? { until: decision.now + decision.retryAfter } : null,
  };
}

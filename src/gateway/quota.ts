// The body of `GET /v1/rate_limit`: `quotaStatus()` turns the limiter's cost-0 decision into the
// handler's answer, using the same numbers as the rate-limit headers.
// The quota ("rate-limit status" in type names) in its other files: the body's type,
// src/core/rate-limit-status.ts; the handler that sends it, src/api/rate-limit.ts; the headers,
// src/gateway/rate-limit-headers.ts (ARCHITECTURE.md's table "Rate limits and quotas").
import type { Decision } from '../core/decision.ts';
import type { RateLimitStatus } from '../core/rate-limit-status.ts';
import type { Consumer } from '../keys/records.ts';

/**
 * Returns a consumer's quota as `GET /v1/rate_limit` shows it, from the cost-0 decision that also
 * writes the response's rate-limit headers, so body and headers agree. During a ban the windows
 * keep their counts and `ban.until` says when requests are admitted again.
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

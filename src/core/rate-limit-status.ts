// The body of `GET /rate_limit` (`RateLimitStatus`): a caller's quota windows and ban. The gateway
// fills it in and the handler sends it, so its type lives in core, below both layers.
// "Rate-limit status" is the type's name for the caller's quota. Its other files: the body made,
// src/gateway/quota.ts; sent, src/api/rate-limit.ts; the headers of every answer,
// src/gateway/rate-limit-headers.ts (ARCHITECTURE.md's table "Rate limits and quotas").
import * as v from 'valibot';

const Seconds = v.pipe(v.number(), v.integer(), v.minValue(0));

/** One window of a caller's quota, in units of cost, as `X-RateLimit-*` and `RateLimit` show it. */
const QuotaWindow = v.strictObject({
  name: v.picklist(['minute', 'day', 'month']),
  limit: v.pipe(v.number(), v.integer(), v.minValue(1)),
  remaining: v.pipe(v.number(), v.integer(), v.minValue(0)),
  /** Unix seconds, as in `X-RateLimit-Reset`. */
  reset: Seconds,
});

/**
 * The body of `getRateLimit`: whose quota, its windows (shortest first; a month window only when
 * the plan has one) and the ban, if any. The handler receives it ready-made (`Input.quota`,
 * src/api/rate-limit.ts) and knows nothing of keys or limiters.
 */
export const RateLimitStatus = v.strictObject({
  consumer: v.string(),
  plan: v.string(),
  windows: v.array(QuotaWindow),
  ban: v.nullable(v.strictObject({ until: Seconds })),
});
export type RateLimitStatus = v.InferOutput<typeof RateLimitStatus>;

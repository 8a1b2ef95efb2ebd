import * as v from 'valibot';
import type { Reply } from '../http/answer.ts';
import type { Input } from './operation.ts';

const Seconds = v.pipe(v.number(), v.integer(), v.minValue(0));

/** One window of a caller's quota, in units of cost, as `X-RateLimit-*` and `RateLimit` show it. */
export const QuotaWindow = v.strictObject({
  name: v.picklist(['minute', 'day', 'month']),
  limit: v.pipe(v.number(), v.integer(), v.minValue(1)),
  remaining: v.pipe(v.number(), v.integer(), v.minValue(0)),
  /** Unix seconds, as in `X-RateLimit-Reset`. */
  reset: Seconds,
});

/**
 * The body of `getRateLimit`: whose quota, its windows (shortest first; month only when the plan
 * has one) and the ban, if any. Handed to the handler ready made (`Input.quota`): the handler
 * knows nothing of keys or limiters.
 */
export const RateLimitStatus = v.strictObject({
  consumer: v.string(),
  plan: v.string(),
  windows: v.array(QuotaWindow),
  ban: v.nullable(v.strictObject({ until: Seconds })),
});
export type RateLimitStatus = v.InferOutput<typeof RateLimitStatus>;

/**
 * `GET /rate_limit`: the caller's quota as the gateway read it for this request, without
 * spending any of it.
 *
 * @example
 * await getRateLimit({ quota: { consumer: 'acme', plan: 'pro', windows: [...], ban: null }, ... })
 * // { status: 200, body: '{"consumer":"acme",...}', type: 'application/json' }
 */
export async function getRateLimit({ quota }: Input): Promise<Reply> {
  if (!quota) throw new TypeError('getRateLimit: the pipeline hands it the quota (readsQuota)');
  return { status: 200, body: JSON.stringify(quota), type: 'application/json' };
}

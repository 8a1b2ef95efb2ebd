// Step 7 for `GET /rate_limit`: `getRateLimit()` returns the caller's quota, which the gateway
// read at step 3 without spending it. The handler knows nothing of keys or limiters.
// The quota ("rate-limit status" in type names) in its other files: its body's type,
// src/core/rate-limit-status.ts; that body made, src/gateway/quota.ts; the headers of every
// answer, src/gateway/rate-limit-headers.ts (ARCHITECTURE.md's table "Rate limits and quotas").
import type { Reply } from '../core/reply.ts';
import type { Input } from './operation-types.ts';

/**
 * `GET /rate_limit`: the caller's quota as the gateway read it for this request, without spending
 * any.
 *
 * @example
 * await getRateLimit({ quota: { consumer: 'acme', plan: 'pro', windows: [...], ban: null }, ... })
 * // { status: 200, body: '{"consumer":"acme",...}', type: 'application/json' }
 */
export async function getRateLimit({ quota }: Input): Promise<Reply> {
  if (!quota) throw new TypeError('getRateLimit: the pipeline hands it the quota (readsQuota)');
  return { status: 200, body: JSON.stringify(quota), type: 'application/json' };
}

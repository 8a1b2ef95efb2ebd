// The shape of a service route (`ServiceRoute`) and their ids (`SERVICE_ROUTE_IDS`): health,
// metrics, docs and the contract, outside the API, with no key and no rate limit, answered by
// step 8 like any other.
import type { Context } from 'hono';
import type { Reply } from './reply.ts';

/** The ids of the service routes, the labels their requests are counted under. */
export const SERVICE_ROUTE_IDS = ['healthz', 'readyz', 'metrics', 'docs', 'openapi'] as const;
export type ServiceRouteId = (typeof SERVICE_ROUTE_IDS)[number];

/**
 * A route outside the API (health, metrics, the contract and its reference page): no key, no
 * rate limit. The same shape as an API operation where they overlap: an id, a method, a path,
 * and a handler whose reply is answered by `answer()` (src/pipeline/answer.ts), like every other.
 */
export interface ServiceRoute {
  readonly id: ServiceRouteId;
  readonly method: 'GET';
  readonly path: string;
  handler(c: Context): Reply | Promise<Reply>;
}

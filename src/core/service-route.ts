// The shape of a service route (`ServiceRoute`) and the routes' ids (`SERVICE_ROUTE_IDS`): health,
// metrics, docs and the contract, outside the API, with no key and no rate limit, answered by
// step 8 like any other route.
import type { Context } from 'hono';
import type { Reply } from './reply.ts';

/** The ids of the service routes, which are also the labels their requests are counted under. */
export const SERVICE_ROUTE_IDS = ['healthz', 'readyz', 'metrics', 'docs', 'openapi'] as const;
export type ServiceRouteId = (typeof SERVICE_ROUTE_IDS)[number];

/**
 * A route outside the API (health, metrics, the contract and its reference page), with no key and
 * no rate limit. Where they overlap it has an API operation's shape: an id, a method, a path, and
 * a handler whose reply `answer()` sends (src/pipeline/answer.ts).
 */
export interface ServiceRoute {
  readonly id: ServiceRouteId;
  readonly method: 'GET';
  readonly path: string;
  handler(c: Context): Reply | Promise<Reply>;
}

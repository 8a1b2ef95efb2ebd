import { OPERATIONS as API_OPERATIONS } from '../api/operations.ts';
import { OPS_IDS } from '../core/ops-route.ts';

/**
 * What requests and store errors are counted under, apart from the registry (registry.ts): the
 * request path and the `/metrics` route need these, and prom-client is loaded only when metrics
 * are on (it was 60% of the binary's start-up, bench/README.md).
 */
/** Operations requests are counted under: the API table's ids, the ops routes', and `other`. */
export const OPERATIONS: readonly string[] = [...API_OPERATIONS.map((op) => op.id), ...OPS_IDS, 'other'];
const INDEX = new Map(OPERATIONS.map((name, i) => [name, i]));
const OTHER = OPERATIONS.length - 1;

export const STORE_OPERATIONS = ['create', 'get', 'list', 'ping'] as const;
export type StoreOperation = (typeof STORE_OPERATIONS)[number];

/** `Content-Type` of the exposition format. */
export const METRICS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

/**
 * The index a request is counted under, from the id of the route that served it (none: `other`).
 *
 * @example
 * operationIndex('getPet') // 2
 */
export function operationIndex(id: string | undefined): number {
  return (id === undefined ? undefined : INDEX.get(id)) ?? OTHER;
}

// The labels requests and store errors are counted under, made from the operations table and
// STORE_CALLS: REQUEST_OPERATIONS, MEMO_OPERATIONS, STORE_OPERATIONS and operationIndex().
import { OPERATIONS } from '../api/operations.ts';
import { SERVICE_ROUTE_IDS } from '../core/service-route.ts';
import { OUTBOX_CALLS, STORE_CALLS } from '../store/store.ts';

// What requests and store errors are counted under, apart from the registry (registry.ts): the
// request path and the `/metrics` route need these, and prom-client is loaded only when metrics
// are on: it is most of a start-up's work
// (bench/README.md#measured-costs-behind-the-codes-choices).

/** What every request of the admin port (`--admin-port`) is counted under. */
export const ADMIN_OPERATION_LABEL = 'admin';

/**
 * Operations requests are counted under: the API table's ids, the service routes', `admin`, and
 * `other`.
 */
export const REQUEST_OPERATIONS: readonly string[] = [
  ...OPERATIONS.map((op) => op.id),
  ...SERVICE_ROUTE_IDS,
  ADMIN_OPERATION_LABEL,
  'other',
];
/** Memoised operations (the table's `memo`): counted as hits and misses. */
export const MEMO_OPERATIONS: readonly string[] = OPERATIONS.filter((op) => op.memo).map((op) => op.id);
const INDEX = new Map(REQUEST_OPERATIONS.map((name, i) => [name, i]));
const OTHER = REQUEST_OPERATIONS.length - 1;

/** What the store's failed calls are counted under: the `counted` of each call the store lists. */
export const STORE_OPERATIONS: readonly StoreOperation[] = [
  ...new Set([...Object.values(STORE_CALLS), ...Object.values(OUTBOX_CALLS)].map((call) => call.counted)),
];
type CountedOf<T> = T[keyof T] extends { readonly counted: infer C } ? C : never;
export type StoreOperation = CountedOf<typeof STORE_CALLS> | CountedOf<typeof OUTBOX_CALLS>;

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

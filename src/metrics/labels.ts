// The labels requests and store errors are counted under, built from the operations table and
// STORE_CALLS: REQUEST_OPERATIONS, MEMO_OPERATIONS, STORE_OPERATIONS and operationIndex(). They
// live apart from the registry (registry.ts) because the request path and the `/metrics` route
// need them, while prom-client is loaded only when metrics are on: loading it is most of
// start-up's work (bench/README.md#measured-costs-behind-the-codes-choices).
import { OPERATIONS } from '../api/operations.ts';
import { SERVICE_ROUTE_IDS } from '../core/service-route.ts';
import { OUTBOX_CALLS, STORE_CALLS } from '../store/store.ts';

/** What every request of the admin port (`--admin-port`) is counted under. */
export const ADMIN_OPERATION_LABEL = 'admin';

/** The `operation` label values: the API table's ids, the service routes' ids, `admin`, `other`. */
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

/** The labels of failed store calls: the `counted` label of each call the store lists. */
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

// With metrics on, countStoreErrors() wraps the handlers' store (step 7 in ARCHITECTURE.md) to
// count each failed call by operation and kind.
import {
  type CallWrap,
  type DataStore,
  OUTBOX_CALLS,
  STORE_CALLS,
  type WrappedStore,
  wrapStore,
} from '../store/store.ts';
import { storeErrorKind } from '../store/store-error.ts';
import { STORE_OPERATIONS, type StoreOperation } from './labels.ts';
import type { Metrics } from './registry.ts';

/**
 * Wraps `store` so each failed call is counted under its `counted` label: every call of
 * `STORE_CALLS` and `OUTBOX_CALLS`, plus the due orders' expiry that a read of pets waits for
 * (counted as `STORE_CALLS.expireDueOrders`). Errors pass through unchanged, and `backend` stays
 * the wrapped store's, so `keyStoreOf` still finds the keys. Throws at once if a call's `counted`
 * is not in `labels`, so no call's failures can go uncounted.
 *
 * @example
 * const store = countStoreErrors(await openStore(config.data, log, options), metrics);
 */
export function countStoreErrors(
  store: DataStore | WrappedStore,
  metrics: Metrics,
  labels: readonly StoreOperation[] = STORE_OPERATIONS,
): WrappedStore {
  // One rejection handler per label, made once, so a call allocates only its promise.
  const failed = new Map<string, (err: unknown) => never>(
    labels.map((operation) => [
      operation,
      (err: unknown) => {
        metrics.storeError(operation, storeErrorKind(err));
        throw err;
      },
    ]),
  );
  const calls = [...Object.values(STORE_CALLS), ...Object.values(OUTBOX_CALLS)];
  const missing = [...new Set(calls.map((call) => call.counted).filter((counted) => !failed.has(counted)))];
  if (missing.length > 0) {
    throw new Error(`countStoreErrors: no label for the failures of the calls counted as ${missing.join(', ')}`);
  }
  // Every `counted` has its handler: checked above.
  const handlerOf = (counted: string) => failed.get(counted) as (err: unknown) => never;
  const count: CallWrap = (run, { counted }) => run().catch(handlerOf(counted));
  const expiryFailed = handlerOf(STORE_CALLS.expireDueOrders.counted);
  return wrapStore(store, count, {
    // A read of pets waits for the due orders' expiry; a rejection there (the read's 503) is
    // counted under the expiry's label.
    startDueOrderExpiry: () => store.startDueOrderExpiry()?.catch(expiryFailed),
  });
}

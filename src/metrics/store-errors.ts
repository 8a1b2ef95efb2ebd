// With metrics on, the store wrapper that counts each failed call by operation and kind:
// countStoreErrors(), one of the wrappers around the handlers' store (step 7 in ARCHITECTURE.md).
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
 * The store, counting the calls that fail: every call of `STORE_CALLS` and `OUTBOX_CALLS` under
 * its `counted` label, and the due orders' expiry a read of pets waits for under the label of
 * `STORE_CALLS.expireDueOrders` (`order`). The error itself is passed on unchanged. Its `backend`
 * is the wrapped store's own, so the keys are still found there (`keyStoreOf`). `labels` are the
 * labels it counts under; a call whose `counted` is not among them throws here, when the wrapper
 * is made, rather than let that call's failures pass uncounted.
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
    // The wait a read of pets makes for the due orders' expiry: its rejection (the read's 503) is
    // counted under the expiry's label.
    startDueOrderExpiry: () => store.startDueOrderExpiry()?.catch(expiryFailed),
  });
}

// With metrics on, the store wrapper that counts each failed call by operation and kind:
// countStoreErrors(), one of the wrappers around the handlers' store (step 7 in ARCHITECTURE.md).
import { type CallWrap, type DataStore, STORE_CALLS, type WrappedStore, wrapStore } from '../store/store.ts';
import { storeErrorKind } from '../store/store-error.ts';
import { STORE_OPERATIONS } from './labels.ts';
import type { Metrics } from './registry.ts';

/**
 * The store, counting the calls that fail (every call of `STORE_CALLS` and `OUTBOX_CALLS`, under
 * its `counted` operation, and the due orders' expiry a read waits for, as `expireDueOrders`); the error
 * itself is passed on unchanged. Its `backend` is the wrapped
 * store's own, so the keys are still found there (`keyStoreOf`).
 *
 * @example
 * const store = countStoreErrors(await openStore(config.data, log, options), metrics);
 */
export function countStoreErrors(store: DataStore | WrappedStore, metrics: Metrics): WrappedStore {
  // One rejection handler per operation, made once, so a call allocates only its promise.
  const failed = new Map<string, (err: unknown) => never>(
    STORE_OPERATIONS.map((operation) => [
      operation,
      (err: unknown) => {
        metrics.storeError(operation, storeErrorKind(err));
        throw err;
      },
    ]),
  );
  const count: CallWrap = (run, { counted }) => run().catch(failed.get(counted));
  const expiryFailed = failed.get(STORE_CALLS.expireDueOrders.counted);
  return wrapStore(store, count, {
    // The wait a read of pets makes for the due orders' expiry: its rejection (a 503) counts as the expiry's.
    startDueOrderExpiry: () => store.startDueOrderExpiry()?.catch(expiryFailed),
  });
}

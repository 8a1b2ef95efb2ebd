import { storeErrorKind } from '../store/errors.ts';
import type { PetStore } from '../store/store.ts';
import type { StoreOperation } from './labels.ts';
import type { Metrics } from './registry.ts';

/**
 * The store, counting the calls that fail; the error itself is passed on unchanged.
 *
 * @example
 * createApp({ store: countStoreErrors(store, metrics), ... })
 */
export function countStoreErrors(store: PetStore, metrics: Metrics): PetStore {
  // One rejection handler per operation, made once, so a call allocates only its promise.
  const failed = (operation: StoreOperation) => (err: unknown) => {
    metrics.storeError(operation, storeErrorKind(err));
    throw err;
  };
  const onCreate = failed('create');
  const onGet = failed('get');
  const onList = failed('list');
  const onPing = failed('ping');
  return {
    create: (pet) => store.create(pet).catch(onCreate),
    createOnce: (pet, once) => store.createOnce(pet, once).catch(onCreate),
    get: (id) => store.get(id).catch(onGet),
    list: (options) => store.list(options).catch(onList),
    version: () => store.version(),
    ping: () => store.ping().catch(onPing),
    close: () => store.close(),
  };
}

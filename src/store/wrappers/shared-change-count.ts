// With --workers above 1, the outermost store wrapper, in each worker and the supervisor:
// sharedChangeCount() makes each write that changed something, or failed, move the change count
// all of them read, so no worker serves a memoised answer that another's write made stale.
import { type CallWrap, type DataStore, type OwnCalls, type WrappedStore, wrapStore } from '../store.ts';

/**
 * The change count of one worker's store: its own store's, and the count of every worker's writes.
 */
interface SharedChangeCount {
  readonly own: unknown;
  readonly shared: number;
}

/**
 * Returns the store of one worker among several, whose `changeCount()` moves with every worker's
 * writes. A write call that moved its own store's count, or that failed (it may have written), adds
 * one to a counter in shared memory before its caller hears of it. `changeCount()` pairs the
 * store's own count with that counter, so no worker serves a memoised answer that another's write
 * made stale. A write call that changed nothing leaves every worker's memo in place.
 *
 * @example
 * const store = sharedChangeCount(await openStore(data, log), new Int32Array(sab), 0)
 */
export function sharedChangeCount(store: DataStore | WrappedStore, counter: Int32Array, index: number): WrappedStore {
  const moved = () => {
    Atomics.add(counter, index, 1);
  };
  const write: CallWrap = (run, { mayWrite }) => {
    if (!mayWrite) return run();
    const before = store.changeCount();
    return run().then(
      (result) => {
        // The store counts its own writes before they resolve; an unknown count may hide one.
        if (before === undefined || store.changeCount() !== before) moved();
        return result;
      },
      (err: unknown) => {
        moved();
        throw err;
      },
    );
  };
  let seen = Number.NaN;
  let inner: unknown;
  let current: SharedChangeCount | undefined;
  const counts: OwnCalls = {
    changeCount: () => {
      const own = store.changeCount();
      if (own === undefined) return undefined;
      const shared = Atomics.load(counter, index);
      // The pair is made only when either part moved: a read that finds neither moved allocates
      // nothing.
      if (shared !== seen || own !== inner) {
        seen = shared;
        inner = own;
        current = { own, shared };
      }
      return current;
    },
    // Another worker's write may have changed any pet: a memoised answer stays true only while no
    // worker wrote.
    readsUnchangedSince: (since, reads) => {
      const { own, shared } = since as SharedChangeCount;
      return shared === Atomics.load(counter, index) && store.readsUnchangedSince(own, reads);
    },
  };
  // The outbox's calls change no pet: passed on as they are.
  return wrapStore(store, write, counts, 'as is');
}

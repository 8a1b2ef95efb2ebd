// The outermost store wrapper with --workers above 1, in each worker and the supervisor:
// sharedChangeCount() makes every write that changed something, or failed, move a change count
// that all of them read, so no worker serves a memoised answer that another's write made stale.
import { type CallWrap, type DataStore, type OwnCalls, type WrappedStore, wrapStore } from '../store.ts';

/** One worker's change count: its own store's count, and the shared count of every write. */
interface SharedChangeCount {
  readonly own: unknown;
  readonly shared: number;
}

/**
 * Wraps one worker's store so its `changeCount()` moves with every worker's writes. A write call
 * that moved its own store's count, or that failed (it may have written), increments a counter in
 * shared memory before its caller sees the result; `changeCount()` pairs the store's own count with
 * that counter. A write that changed nothing leaves every worker's memo in place.
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
        // The store counts its own writes before they resolve; an undefined count may hide one.
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
      // Make a new pair only when either part moved, so the memo's `===` check holds and an
      // unchanged read allocates nothing.
      if (shared !== seen || own !== inner) {
        seen = shared;
        inner = own;
        current = { own, shared };
      }
      return current;
    },
    // Another worker's write may have changed any pet, so a memoised answer stays valid only while
    // no worker wrote.
    readsUnchangedSince: (since, reads) => {
      const { own, shared } = since as SharedChangeCount;
      return shared === Atomics.load(counter, index) && store.readsUnchangedSince(own, reads);
    },
  };
  // The outbox's calls change no pet, so they pass through unwrapped.
  return wrapStore(store, write, counts, 'as is');
}

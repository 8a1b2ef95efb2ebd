// The tests' one fake store: a MemoryStore with some calls changed. It is made from
// STORE_CALLS, as the store's wrappers are, so a call added to DataStore reaches every fake.
import { MemoryStore } from '../src/store/memory-store.ts';
import { type CallSpec, type DataStore, STORE_CALLS, wrapCalls } from '../src/store/store.ts';

type CallName = keyof typeof STORE_CALLS;

export interface FakeStoreOptions {
  /** Every call passes through this first (a gate, a failure); by default it just runs. */
  around?: (run: () => Promise<unknown>, call: CallName, spec: CallSpec) => Promise<unknown>;
  /** Calls answered by these instead, given the MemoryStore underneath. */
  replace?: (memory: MemoryStore) => Partial<Pick<DataStore, CallName | 'changeCount'>>;
}

/**
 * A DataStore over a fresh MemoryStore, with `memory` for setting it up behind the fake's back.
 *
 * @example
 * const { store } = fakeStore({ around: () => Promise.reject(new Error('disk on fire')) })
 */
export function fakeStore({ around, replace }: FakeStoreOptions = {}): { store: DataStore; memory: MemoryStore } {
  const memory = new MemoryStore();
  const names = new Map<CallSpec, CallName>(
    Object.entries(STORE_CALLS).map(([name, spec]) => [spec, name as CallName]),
  );
  // Each spec object is one call's own, so it names the call. A fake may answer a call with
  // anything (a failure, a ping's `undefined`), so its answer is taken as the call's.
  const calls = around
    ? wrapCalls(
        memory,
        STORE_CALLS,
        <T>(run: () => Promise<T>, spec: CallSpec) => around(run, names.get(spec) as CallName, spec) as Promise<T>,
      )
    : wrapCalls(memory, STORE_CALLS, (run) => run());
  const store: DataStore = {
    ...calls,
    startDueOrderExpiry: () => memory.startDueOrderExpiry(),
    changeCount: () => memory.changeCount(),
    readsUnchangedSince: (since, reads) => memory.readsUnchangedSince(since as number, reads),
    close: () => memory.close(),
    ...replace?.(memory),
  };
  return { store, memory };
}

/** A store whose every call fails with `error` (its `ping` too unless `pingOk`), and that never tells a change count. */
export function failingStore(error: () => Error, { pingOk = false } = {}): DataStore {
  return fakeStore({
    around: (_run, call) => (call === 'ping' && pingOk ? Promise.resolve() : Promise.reject(error())),
    replace: () => ({ changeCount: () => undefined }),
  }).store;
}

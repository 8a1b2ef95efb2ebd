import { describe, expect, test } from 'bun:test';
import { fakeStore } from '../../../test/fake-store.ts';
import { fakeClock } from '../../../test/testing.ts';
import type { NewPet } from '../../core/pet-records.ts';
import { createLogger } from '../../log.ts';
import { MemoryStore } from '../memory-store.ts';
import { OUTBOX_CALLS, STORE_CALLS } from '../store.ts';
import { StoreTimeoutError, StoreUnreachableError, storeErrorKind } from '../store-error.ts';
import { boundAndTraced, type Timers } from './bound-and-traced.ts';

const REX: NewPet = { name: 'Rex', categoryId: 1, status: 'available' };

/** A clock and one-shot timers that run only when the test moves time. */
function fakeTime() {
  const clock = fakeClock(0);
  let pending: { at: number; run: () => void; id: number }[] = [];
  let ids = 0;
  const timers: Timers = {
    set: (run, ms) => {
      pending.push({ at: clock.now() + ms, run, id: ++ids });
      return ids;
    },
    clear: (id) => {
      pending = pending.filter((t) => t.id !== id);
    },
  };
  const settle = () => new Promise((resolve) => setImmediate(resolve));
  /** Moves time by `ms`, running each timer at its due time, oldest first. */
  async function advance(ms: number) {
    const until = clock.now() + ms;
    await settle();
    for (;;) {
      const next = pending.filter((t) => t.at <= until).sort((a, b) => a.at - b.at || a.id - b.id)[0];
      if (!next) break;
      pending = pending.filter((t) => t !== next);
      clock.advance(next.at - clock.now());
      next.run();
      await settle();
    }
    clock.advance(until - clock.now());
    await settle();
  }
  return { clock, timers, advance, timersPending: () => pending.length };
}

/** A memory store that can be made to hang or to refuse connections, counting what reaches it. */
function backend() {
  const state = {
    mode: 'ok' as 'ok' | 'hang' | 'refused' | 'held',
    calls: 0,
    pings: 0,
    /** Fails the calls made in `held` mode, as a connection lost under them would. */
    drop: () => {},
  };
  const held: ((err: Error) => void)[] = [];
  state.drop = () => {
    for (const fail of held.splice(0)) fail(new StoreUnreachableError('list pets: write CONNECTION_CLOSED'));
  };
  const gate = <T>(run: () => Promise<T>): Promise<T> => {
    state.calls++;
    if (state.mode === 'hang') return new Promise<T>(() => {});
    if (state.mode === 'held') return new Promise<T>((_, reject) => held.push(reject));
    if (state.mode === 'refused') {
      return Promise.reject(new StoreUnreachableError('list pets: connect ECONNREFUSED 127.0.0.1:5432'));
    }
    return run();
  };
  // The reads, the create and the ping meet the gate; the other calls reach the memory store.
  const gated = new Set(['create', 'get', 'list', 'inventory', 'ping']);
  const { store } = fakeStore({
    around: (run, call) => {
      if (call === 'ping') state.pings++;
      return gated.has(call) ? gate(run) : run();
    },
  });
  return { state, store };
}

function setup() {
  const time = fakeTime();
  const lines: Record<string, unknown>[] = [];
  const log = createLogger({ write: (l) => lines.push(JSON.parse(l)), now: time.clock.now });
  const { state, store: inner } = backend();
  const store = boundAndTraced(inner, { timeoutMs: 2_000, log, clock: time.clock, timers: time.timers });
  return { ...time, lines, state, store };
}

/** Resolves with what the promise settled with so far: a value, an error, or 'pending'. */
function watch<T>(promise: Promise<T>) {
  const seen: { value?: T; error?: unknown; settled: boolean } = { settled: false };
  promise.then(
    (value) => Object.assign(seen, { value, settled: true }),
    (error) => Object.assign(seen, { error, settled: true }),
  );
  return seen;
}

describe('BoundAndTracedStore: the bound', () => {
  test('a read that does not come back is rejected at the timeout, not before', async () => {
    const { state, store, advance } = setup();
    state.mode = 'hang';
    const list = watch(store.list({ limit: 10 }));
    await advance(1_999);
    expect(list.settled).toBe(false);
    await advance(1);
    expect(list.error).toEqual(new StoreTimeoutError('list pets: no answer from the store within 2000 ms'));
    expect(storeErrorKind(list.error)).toBe('timeout');
  });

  test('a write that does not come back says the outcome is unknown', async () => {
    const { state, store, advance } = setup();
    state.mode = 'hang';
    const create = watch(store.create(REX));
    await advance(2_000);
    expect(create.error).toBeInstanceOf(StoreTimeoutError);
    expect((create.error as Error).message).toBe(
      'store pet: no answer from the store within 2000 ms; the outcome is unknown: the write may have taken effect ' +
        '(a create retried with the same Idempotency-Key answers it, or stores one)',
    );
  });

  test('each call has its own deadline; calls that answer leave no timer behind', async () => {
    const { state, store, advance, timersPending } = setup();
    state.mode = 'hang';
    const first = watch(store.get(1));
    await advance(500);
    const second = watch(store.get(2));
    state.mode = 'ok';
    expect((await store.create(REX)).id).toBe(1);
    await advance(1_500);
    expect([first.settled, second.settled]).toEqual([true, false]);
    await advance(499);
    expect(second.settled).toBe(false);
    await advance(1);
    expect(second.error).toBeInstanceOf(StoreTimeoutError);
    expect(timersPending()).toBe(0);

    expect(await store.get(1)).toEqual({ id: 1, ...REX, version: 1 });
    await advance(5_000);
    expect(timersPending()).toBe(0);
  });

  test('a read waiting for an expiry that does not end is rejected at the timeout; none due waits for nothing', async () => {
    const time = fakeTime();
    const log = createLogger({ write: () => {}, now: time.clock.now });
    const { store: inner } = backend();
    let due = false;
    inner.startDueOrderExpiry = () => (due ? new Promise(() => {}) : undefined);
    const store = boundAndTraced(inner, { timeoutMs: 2_000, log, clock: time.clock, timers: time.timers });
    expect(store.startDueOrderExpiry()).toBeUndefined();
    due = true;
    const expiring = watch(store.startDueOrderExpiry() as Promise<unknown>);
    await time.advance(1_999);
    expect(expiring.settled).toBe(false);
    await time.advance(1);
    expect((expiring.error as Error).message).toStartWith('expire orders: no answer from the store within 2000 ms');
  });

  test('a call that answers in time is not touched by its deadline', async () => {
    const { store, advance } = setup();
    const created = watch(store.create(REX));
    await advance(2_000);
    expect(created.value).toEqual({ id: 1, ...REX, version: 1 });
  });
});

describe('BoundAndTracedStore: an unreachable database', () => {
  test('answers at once, probes every 250 ms after the last probe ends, and serves again after one answers', async () => {
    const { state, store, advance, lines, clock } = setup();
    state.mode = 'refused';
    await expect(store.list({ limit: 10 })).rejects.toBeInstanceOf(StoreUnreachableError);
    expect(store.unreachable).toBe(true);
    const reached = state.calls;

    // Nothing reaches the backend but the probes: requests do not wait for their own connection.
    const fast = await store.get(1).catch((err: unknown) => err);
    expect(fast).toEqual(
      new StoreUnreachableError(
        'read pet: the database is unreachable (list pets: connect ECONNREFUSED 127.0.0.1:5432)',
      ),
    );
    expect(state.calls).toBe(reached);
    await advance(1_000);
    expect(state.pings).toBe(4);

    // A probe that hangs is bounded like any call; the next one comes 250 ms after it gave up.
    state.mode = 'hang';
    await advance(250);
    expect(state.pings).toBe(5);
    await advance(2_000 + 249);
    expect(state.pings).toBe(5);

    state.mode = 'ok';
    const before = state.calls;
    await advance(1);
    expect(state.pings).toBe(6);
    expect(store.unreachable).toBe(false);
    expect(await store.create(REX)).toEqual({ id: 1, ...REX, version: 1 });
    expect(state.calls).toBe(before + 2);
    await advance(5_000);
    expect(state.pings).toBe(6);

    expect(lines).toEqual([
      {
        time: new Date(0).toISOString(),
        level: 'warn',
        msg: 'store unreachable; answering 503 at once until a probe finds it again',
        reason: 'list pets: connect ECONNREFUSED 127.0.0.1:5432',
        probeEveryMs: 250,
      },
      {
        time: new Date(clock.now() - 5_000).toISOString(),
        level: 'info',
        msg: 'store reachable again; serving',
        awayMs: 1_000 + 250 + 2_000 + 250,
      },
    ]);
  });

  test('a call begun before the database came back, failing late, does not mark it unreachable again', async () => {
    const { state, store, advance } = setup();
    state.mode = 'held';
    const old = watch(store.list({ limit: 10 }));
    state.mode = 'refused';
    await store.get(1).catch(() => {});
    expect(store.unreachable).toBe(true);
    state.mode = 'ok';
    await advance(250);
    expect(store.unreachable).toBe(false);
    state.drop();
    await advance(0);
    expect(old.error).toBeInstanceOf(StoreUnreachableError);
    expect(store.unreachable).toBe(false);
  });

  test('close stops the probes', async () => {
    const { state, store, advance, timersPending } = setup();
    state.mode = 'refused';
    await store.ping().catch(() => {});
    await store.close();
    await advance(5_000);
    expect(state.pings).toBe(1);
    expect(timersPending()).toBe(0);
  });
});

describe('BoundAndTracedStore: the method list', () => {
  test('every call STORE_CALLS and OUTBOX_CALLS list is bounded: a backend that answers none of them', async () => {
    const time = fakeTime();
    const hang = () => new Promise<never>(() => {});
    const backend = new MemoryStore();
    for (const name of Object.keys(STORE_CALLS)) Object.assign(backend, { [name]: hang });
    for (const name of Object.keys(OUTBOX_CALLS)) Object.assign(backend.outbox, { [name]: hang });
    const store = boundAndTraced(backend, { timeoutMs: 2_000, log: createLogger({ write: () => {} }), ...time });
    const call = (target: object, name: string) =>
      watch((target as Record<string, () => Promise<unknown>>)[name]?.() ?? Promise.resolve('not wrapped'));
    const calls = [
      ...Object.entries(STORE_CALLS).map(([name, { doing }]) => ({ name, doing, seen: call(store, name) })),
      ...Object.entries(OUTBOX_CALLS).map(([name, { doing }]) => ({
        name,
        doing,
        seen: call(store.outbox ?? {}, name),
      })),
    ];
    await time.advance(2_000);
    expect(calls.map(({ name, seen }) => [name, seen.error instanceof StoreTimeoutError])).toEqual([
      ['create', true],
      ['createOnce', true],
      ['get', true],
      ['update', true],
      ['remove', true],
      ['list', true],
      ['inventory', true],
      ['placeOrder', true],
      ['getOrder', true],
      ['listOrders', true],
      ['closeOrder', true],
      ['expireDueOrders', true],
      ['retireOwner', true],
      ['adoptOwners', true],
      ['ping', true],
      ['record', true],
      ['claim', true],
      ['settle', true],
      ['trim', true],
      ['stats', true],
    ]);
    for (const { doing, seen } of calls) {
      expect((seen.error as Error).message).toStartWith(`${doing}: no answer from the store within 2000 ms`);
    }
  });
});

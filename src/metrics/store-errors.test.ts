import { describe, expect, test } from 'bun:test';
import { MemoryStore } from '../store/memory-store.ts';
import { OUTBOX_CALLS, STORE_CALLS } from '../store/store.ts';
import { StoreError, StoreTimeoutError, StoreUnavailableError } from '../store/store-error.ts';
import { STORE_OPERATIONS } from './labels.ts';
import { Metrics } from './registry.ts';
import { countStoreErrors } from './store-errors.ts';

const lines = async (m: Metrics) => (await m.render()).split('\n');
const newMetrics = () => new Metrics({ version: '1.0.0', runtime: 'bun' });

describe('countStoreErrors', () => {
  test('counts failures by operation and kind and rethrows them unchanged; successes pass through', async () => {
    const metrics = newMetrics();
    const down = new StoreUnavailableError('create pet: database or disk is full');
    const broken = new StoreError('list pets: no such column');
    const slow = new StoreTimeoutError('read pet: no answer from the store within 2000 ms');
    const inner = new MemoryStore();
    const store = countStoreErrors(
      Object.assign(inner, {
        create: async () => {
          throw down;
        },
        list: async () => {
          throw broken;
        },
        get: async () => {
          throw slow;
        },
      }),
      metrics,
    );
    await expect(store.create({ name: 'Rex', categoryId: 1, status: 'available' })).rejects.toBe(down);
    await expect(store.list({ limit: 1 })).rejects.toBe(broken);
    await expect(store.get(1)).rejects.toBe(slow);
    await expect(store.ping()).resolves.toBeUndefined();
    const out = await lines(metrics);
    expect(out).toContain('petstore_store_errors_total{operation="create",kind="unavailable"} 1');
    expect(out).toContain('petstore_store_errors_total{operation="list",kind="error"} 1');
    expect(out).toContain('petstore_store_errors_total{operation="get",kind="timeout"} 1');
    expect(out).toContain('petstore_store_errors_total{operation="get",kind="unavailable"} 0');
  });

  test('every call STORE_CALLS and OUTBOX_CALLS list is counted when it fails, the outbox included', async () => {
    const metrics = newMetrics();
    const broken = new StoreError('no such table');
    const fail = async () => {
      throw broken;
    };
    const inner = new MemoryStore();
    for (const name of Object.keys(STORE_CALLS)) Object.assign(inner, { [name]: fail });
    for (const name of Object.keys(OUTBOX_CALLS)) Object.assign(inner.outbox, { [name]: fail });
    const store = countStoreErrors(inner, metrics);
    const call = (target: object | undefined, name: string) =>
      (target as Record<string, (() => Promise<unknown>) | undefined> | undefined)?.[name]?.().catch((err) => err);
    const thrown = [
      ...Object.keys(STORE_CALLS).map((name) => call(store, name)),
      ...Object.keys(OUTBOX_CALLS).map((name) => call(store.outbox, name)),
    ];
    expect(await Promise.all(thrown)).toEqual(Array(thrown.length).fill(broken));
    expect(thrown).toHaveLength(Object.keys(STORE_CALLS).length + Object.keys(OUTBOX_CALLS).length);
    const counted = (await lines(metrics)).filter((l) => l.includes('kind="error"') && !l.endsWith(' 0'));
    expect(counted).toEqual([
      'petstore_store_errors_total{operation="create",kind="error"} 2',
      'petstore_store_errors_total{operation="get",kind="error"} 1',
      'petstore_store_errors_total{operation="update",kind="error"} 1',
      'petstore_store_errors_total{operation="remove",kind="error"} 1',
      'petstore_store_errors_total{operation="list",kind="error"} 1',
      'petstore_store_errors_total{operation="inventory",kind="error"} 1',
      'petstore_store_errors_total{operation="order",kind="error"} 7',
      'petstore_store_errors_total{operation="ping",kind="error"} 1',
      'petstore_store_errors_total{operation="outbox",kind="error"} 5',
    ]);
  });

  test("the due orders' expiry a read of pets waits for is counted as the orders' when it fails (the read's 503)", async () => {
    const metrics = newMetrics();
    const slow = new StoreTimeoutError('expire orders: no answer from the store within 2000 ms');
    let due = false;
    const inner = Object.assign(new MemoryStore(), {
      startDueOrderExpiry: () => (due ? Promise.reject(slow) : undefined),
    });
    const store = countStoreErrors(inner, metrics);
    expect(store.startDueOrderExpiry()).toBeUndefined();
    due = true;
    await expect(store.startDueOrderExpiry() as Promise<unknown>).rejects.toBe(slow);
    expect(await lines(metrics)).toContain('petstore_store_errors_total{operation="order",kind="timeout"} 1');
  });

  test('a call whose label is missing stops the wrapper from being made, rather than go uncounted', () => {
    const withoutOrder = STORE_OPERATIONS.filter((label) => label !== 'order' && label !== 'outbox');
    expect(() => countStoreErrors(new MemoryStore(), newMetrics(), withoutOrder)).toThrow(
      new Error('countStoreErrors: no label for the failures of the calls counted as order, outbox'),
    );
  });
});

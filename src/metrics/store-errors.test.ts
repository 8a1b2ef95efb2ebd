import { describe, expect, test } from 'bun:test';
import { StoreError, StoreTimeoutError, StoreUnavailableError } from '../store/errors.ts';
import { MemoryStore } from '../store/memory.ts';
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
});

import { describe, expect, test } from 'bun:test';
import { MemoryStore } from '../memory-store.ts';
import { sharedChangeCount } from './shared-change-count.ts';

describe("the store's change count shared by the workers", () => {
  test("a write on one worker's store changes every worker's change count before it is acknowledged", async () => {
    const counter = new Int32Array(new SharedArrayBuffer(8));
    const a = sharedChangeCount(new MemoryStore(), counter, 1);
    const b = sharedChangeCount(new MemoryStore(), counter, 1);
    const before = b.changeCount();
    // Read twice with nothing written: the same value, so a memoised answer is served.
    expect(b.changeCount()).toBe(before);
    let seenWhenAcknowledged: unknown;
    await a.create({ name: 'Rex', categoryId: 1, status: 'available' }).then(() => {
      seenWhenAcknowledged = b.changeCount();
    });
    expect(seenWhenAcknowledged).not.toEqual(before);
    expect(b.changeCount()).toBe(seenWhenAcknowledged);
    // Reads move nothing.
    await a.list({ limit: 10 });
    expect(b.changeCount()).toBe(seenWhenAcknowledged);
  });

  test('a write that fails moves the change count too (it may have happened)', async () => {
    const counter = new Int32Array(new SharedArrayBuffer(8));
    const failing = new MemoryStore();
    failing.update = () => Promise.reject(new Error('timed out'));
    const a = sharedChangeCount(failing, counter, 0);
    const before = Atomics.load(counter, 0);
    await a.update(1, { name: 'x' }).catch(() => {});
    expect(Atomics.load(counter, 0)).toBe(before + 1);
  });

  test("an order read that expires nothing, and an order refused, leave every worker's change count; an expiry moves it", async () => {
    let now = 1_000_000;
    const clock = { now: () => now };
    const counter = new Int32Array(new SharedArrayBuffer(8));
    const a = sharedChangeCount(new MemoryStore({ clock }), counter, 1);
    const b = sharedChangeCount(new MemoryStore({ clock }), counter, 1);
    const pet = await a.create({ name: 'Rex', categoryId: 1, status: 'available' });
    const placed = await a.placeOrder({ owner: 'alice', petId: pet.id, holdMs: 1_000, now });
    if (placed.outcome !== 'placed') throw new Error(placed.outcome);
    const afterPlace = b.changeCount();

    expect(await a.getOrder('alice', placed.order.id, now)).toMatchObject({ status: 'placed' });
    await a.listOrders('alice', { limit: 10 }, now);
    expect(await a.placeOrder({ owner: 'bob', petId: pet.id, holdMs: 1_000, now })).toMatchObject({
      outcome: 'pet_unavailable',
    });
    expect(b.changeCount()).toBe(afterPlace);

    now += 1_001;
    await a.listOrders('alice', { limit: 10 }, now);
    expect(b.changeCount()).not.toEqual(afterPlace);
  });
});

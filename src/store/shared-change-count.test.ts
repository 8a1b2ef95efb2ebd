import { describe, expect, test } from 'bun:test';
import { MemoryStore } from './memory-store.ts';
import { sharedChangeCount } from './shared-change-count.ts';

describe("the store's change count shared by the workers", () => {
  test("a write on one worker's store changes every worker's change count before it is acknowledged", async () => {
    const counter = new Int32Array(new SharedArrayBuffer(8));
    const a = sharedChangeCount(new MemoryStore(), counter, 1);
    const b = sharedChangeCount(new MemoryStore(), counter, 1);
    const before = b.changeCount();
    // Read twice with nothing written: the same value, so a kept answer is served.
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
});

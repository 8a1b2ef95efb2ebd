import { describe, expect, test } from 'bun:test';
import { TraceRing } from './ring.ts';

describe('TraceRing wakes the export', () => {
  test('when a record is kept, and at once when half the ring turned over a kept record unread', () => {
    const ring = new TraceRing(8);
    const wakes: boolean[] = [];
    ring.wake = (full) => wakes.push(full);
    ring.settle(ring.claim(1), true);
    expect(wakes).toEqual([false]);
    for (let i = 0; i < 3; i++) ring.settle(ring.claim(2), false);
    expect(wakes).toEqual([false]);
    ring.settle(ring.claim(3), false);
    expect(wakes).toEqual([false, true]);
    // A read starts the count again: nothing kept, nothing to wake for.
    const read: number[] = [];
    ring.drain((r) => read.push(r));
    expect(read).toEqual([0]);
    for (let i = 0; i < 8; i++) ring.settle(ring.claim(4), false);
    expect(wakes).toEqual([false, true]);
    expect(ring.overwritten).toBe(0);
  });
});

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

describe('TraceRing hands out records', () => {
  test('the last freed first, so the records in use are the requests in flight', () => {
    const ring = new TraceRing(8);
    const a = ring.claim(1);
    const b = ring.claim(1);
    ring.settle(b, false);
    expect(ring.claim(2)).toBe(b);
    ring.settle(a, false);
    expect(ring.claim(3)).toBe(a);
  });

  test('with none free, the oldest kept record not yet read, counted with its children as overwritten', () => {
    const ring = new TraceRing(4);
    const kept: number[] = [];
    for (let i = 0; i < 4; i++) {
      const r = ring.claim(i);
      for (let c = 0; c < i; c++) ring.openChild(r, 0, 0, 0, i);
      ring.settle(r, true);
      kept.push(r);
    }
    expect(ring.overwritten).toBe(0);
    // The first kept record (no child) is taken, then the second (one child).
    const first = ring.claim(10);
    expect(first).toBe(kept[0] as number);
    expect(ring.overwritten).toBe(1);
    ring.settle(first, false);
    expect(ring.claim(11)).toBe(first);
    expect(ring.claim(12)).toBe(kept[1] as number);
    expect(ring.overwritten).toBe(3);
    const read: number[] = [];
    ring.drain((r) => read.push(r));
    expect(read).toEqual(kept.slice(2));
    expect(ring.kept).toBe(0);
  });

  test('with every record open, the next in turn, whose request no longer holds it', () => {
    const ring = new TraceRing(2);
    const a = ring.claim(1);
    const seqA = ring.seq[a] as number;
    const b = ring.claim(1);
    const seqB = ring.seq[b] as number;
    expect(ring.claim(2)).toBe(a);
    expect(ring.holds(a, seqA)).toBe(false);
    expect(ring.holds(b, seqB)).toBe(true);
    expect(ring.claim(3)).toBe(b);
    expect(ring.holds(b, seqB)).toBe(false);
    expect(ring.overwritten).toBe(0);
  });
});

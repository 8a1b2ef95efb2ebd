import { describe, expect, test } from 'bun:test';
import { SlidingWindowLimiter } from './in-process.ts';
import { KEYLESS_MINUTE, KeylessTable, SketchWindow } from './keyless.ts';
import type { Subject } from './limiter.ts';

/** 2023-11-14T22:13:20Z, a whole second. */
const T0 = 1_700_000_000_000;

function keyless(id: string): Subject {
  return {
    id,
    keyless: true,
    plan: 'anonymous',
    label: id,
    limits: { perMinute: 60, perDay: 1_000 },
    ban: { threshold: 60, seconds: 900 },
  };
}

/** P(X >= k) for X ~ Poisson(lambda). */
function poissonTail(lambda: number, k: number): number {
  let term = Math.exp(-lambda);
  let below = 0;
  for (let i = 0; i < k; i++) {
    below += term;
    term *= lambda / (i + 1);
  }
  return 1 - below;
}

describe('KeylessTable', () => {
  test('the chance of an early refusal is the documented P(Poisson(R / C) >= 60)^2', () => {
    // R requests from R addresses in one minute, over C columns: λ = 55 per cell.
    const columns = 1_024;
    const flood = 55 * columns;
    const limiter = new SlidingWindowLimiter({ clock: { now: () => T0 }, keyless: { columns, seed: 11 } });
    for (let i = 0; i < flood; i++) limiter.decide(keyless(`addr:flood-${i}`));
    const probes = 20_000;
    let early = 0;
    // Cost 0 reads without spending: a fresh address whose minute shows nothing left is refused
    // early.
    for (let i = 0; i < probes; i++) {
      if (limiter.decide(keyless(`addr:probe-${i}`), 0).windows[0]?.remaining === 0) early++;
    }
    const p = poissonTail(flood / columns, 60) ** 2;
    expect(p).toBeCloseTo(0.0714, 3);
    // Within four standard deviations of the formula's expectation (1,429 ± 4 x 36).
    expect(Math.abs(early - probes * p)).toBeLessThan(4 * Math.sqrt(probes * p * (1 - p)));
  });

  test('the documented figures for the default 65,536 columns', () => {
    const chance = (requests: number) => poissonTail(requests / 65_536, 60) ** 2;
    expect(chance(2_000_000)).toBeLessThan(1e-11);
    expect(chance(2_500_000)).toBeCloseTo(4.2e-7, 8);
    expect(chance(3_000_000)).toBeCloseTo(6.2e-4, 5);
    expect(chance(3_500_000)).toBeCloseTo(0.04, 2);
  });

  test('one hash, two rows: the same id always gets the same cells, one in each half', () => {
    const table = new KeylessTable(T0, { columns: 65_536, seed: 5 });
    const cells = table.cellsOf('addr:2001:db8:0:100::/56');
    expect(table.cellsOf('addr:2001:db8:0:100::/56')).toEqual(cells);
    expect(cells.a).toBeLessThan(65_536);
    expect(cells.b).toBeGreaterThanOrEqual(65_536);
    // Another key moves them: nobody outside the process can pick addresses that share a victim's
    // cells.
    expect(new KeylessTable(T0, { columns: 65_536, seed: 6 }).cellsOf('addr:2001:db8:0:100::/56')).not.toEqual(cells);
  });
});

describe('SketchWindow before its first count', () => {
  test('answers as a window whose counts all left, through advances, and counts from its first add', () => {
    const fresh = new SketchWindow(KEYLESS_MINUTE, 8, T0);
    const emptied = new SketchWindow(KEYLESS_MINUTE, 8, T0);
    emptied.add(3, T0, 5);
    emptied.clear(3);
    const read = (w: SketchWindow) => [w.count(3), w.used(0, 8), w.admitAt(3, 1), w.admitAt(3, 0), w.oldestLeavesAt(3)];
    expect(read(fresh)).toEqual(read(emptied));
    fresh.advance(T0 + 25_000);
    emptied.advance(T0 + 25_000);
    expect(read(fresh)).toEqual(read(emptied));
    fresh.add(3, T0 + 25_000, 2);
    emptied.add(3, T0 + 25_000, 2);
    expect(read(fresh)).toEqual(read(emptied));
    expect(fresh.count(3)).toBe(2);
  });
});

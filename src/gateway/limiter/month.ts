// The calendar-month window: a fixed window, not a sliding one. It counts what a subject spent
// since 00:00 UTC on the 1st and starts again from zero at 00:00 UTC on the 1st of the next month,
// so a monthly quota reads like an invoice ("20,000 requests in November").
import type { WindowName } from '../../core/decision.ts';

export const MONTH_NAME: WindowName = 'month';

/**
 * Returns the epoch ms of 00:00 UTC on the 1st of the month holding `time`, and of the next
 * month's.
 *
 * @example
 * monthOf(Date.UTC(2026, 10, 30, 23, 59, 59)) // { start: Date.UTC(2026, 10, 1), end: Date.UTC(2026, 11, 1) }
 */
export function monthOf(time: number): { start: number; end: number } {
  const d = new Date(time);
  const year = d.getUTCFullYear();
  const month = d.getUTCMonth();
  return { start: Date.UTC(year, month, 1), end: Date.UTC(year, month + 1, 1) };
}

/**
 * What a subject spent in the current calendar month. Callers pass non-decreasing times and call
 * `advance(now)` before reading; a new month is found by one comparison, so the list path pays
 * no date arithmetic but once a month.
 *
 * @example
 * const m = new MonthWindow(now); m.advance(now); if (m.count + cost <= quota) m.add(cost);
 */
export class MonthWindow {
  #start = 0;
  #end = 0;
  #count = 0;

  constructor(now: number) {
    this.advance(now);
  }

  /** Units spent this month. */
  get count(): number {
    return this.#count;
  }

  /** Epoch ms the month began. */
  get start(): number {
    return this.#start;
  }

  /** Epoch ms the next month begins: when the count goes back to zero. */
  get end(): number {
    return this.#end;
  }

  /** Starts a new month's count when `now` is past the current one. */
  advance(now: number): void {
    if (now < this.#end && now >= this.#start) return;
    const { start, end } = monthOf(now);
    this.#start = start;
    this.#end = end;
    this.#count = 0;
  }

  add(units: number): void {
    this.#count += units;
  }

  /** Takes back `units` added at `at` (after `advance`), when that was this month. */
  remove(at: number, units: number): void {
    if (at >= this.#start) this.#count -= Math.min(units, this.#count);
  }

  /**
   * Returns the epoch ms from which the count is below `quota`: the next month, or `-Infinity` when
   * it is now.
   */
  admitAt(quota: number): number {
    return this.#count < quota ? Number.NEGATIVE_INFINITY : this.#end;
  }
}

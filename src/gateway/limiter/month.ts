// The calendar-month window: a fixed window, not a sliding one. It resets to zero at 00:00 UTC on
// the 1st, so a monthly quota reads like an invoice ("20,000 requests in November").
import type { WindowName } from '../../core/decision.ts';

export const MONTH_NAME: WindowName = 'month';

/**
 * Returns the epoch ms of 00:00 UTC on the 1st of `time`'s month (`start`) and of the next month
 * (`end`).
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
 * What a subject spent in the current calendar month. Call `advance(now)` before reading. A new
 * month is detected with one comparison, so date arithmetic runs only once a month.
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

  /** Epoch ms the next month begins, when the count resets. */
  get end(): number {
    return this.#end;
  }

  /** Resets the count if `now` is outside the current month. */
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

  /** Takes back `units` added at `at`, if that was in the current month. Call after `advance`. */
  remove(at: number, units: number): void {
    if (at >= this.#start) this.#count -= Math.min(units, this.#count);
  }

  /**
   * Returns the epoch ms from which the count is below `quota`: `-Infinity` if it is already, else
   * the next month's start.
   */
  admitAt(quota: number): number {
    return this.#count < quota ? Number.NEGATIVE_INFINITY : this.#end;
  }
}

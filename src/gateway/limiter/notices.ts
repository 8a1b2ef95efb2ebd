/**
 * Which crossings a decision caused: the in-process limiter's half of the notices (the Redis
 * script does the same in Lua, `redis-script.ts`). A threshold T of a window of quota Q is
 * crossed by the request that takes the count from below ceil(T% of Q) to at least it; each
 * (kind, window, threshold) is noticed at most once per period, so a sliding day that dips
 * below 80% and climbs back within the same UTC day says nothing twice.
 */
import type { Notice, NoticeWindow } from './limiter.ts';
import { monthOf } from './month.ts';

const DAY_MS = 86_400_000;

/** The day window's period: the UTC day number of `now` (epoch ms). */
export function dayPeriod(now: number): number {
  return Math.floor(now / DAY_MS);
}

/** The month window's period: year * 12 + month - 1 (UTC), as the Redis script numbers it. */
export function monthPeriod(now: number): number {
  const start = new Date(monthOf(now).start);
  return start.getUTCFullYear() * 12 + start.getUTCMonth();
}

/** Units of a quota at which a threshold in percent is reached (at least 1). */
export function thresholdUnits(percent: number, quota: number): number {
  return Math.max(1, Math.ceil((percent * quota) / 100));
}

/**
 * The periods already noticed, by kind, window and threshold: one small map per subject that
 * has thresholds (a handful of entries).
 *
 * @example
 * const flags = new NoticeFlags(); flags.crossed([80, 100], 'day', 100, 79, 80, 20_000) // one quota.threshold
 */
export class NoticeFlags {
  readonly #sent = new Map<string, number>();

  /** True the first time `key` is seen in `period` (and remembers it). */
  #first(key: string, period: number): boolean {
    if (this.#sent.get(key) === period) return false;
    this.#sent.set(key, period);
    return true;
  }

  /** The thresholds a count going from `before` to `after` crossed, ascending. */
  crossed(
    thresholds: readonly number[],
    window: NoticeWindow,
    quota: number,
    before: number,
    after: number,
    period: number,
  ): Notice[] {
    const notices: Notice[] = [];
    for (const threshold of thresholds) {
      const units = thresholdUnits(threshold, quota);
      if (before < units && units <= after && this.#first(`t:${window}:${threshold}`, period)) {
        notices.push({ type: 'quota.threshold', window, threshold, period });
      }
    }
    return notices;
  }

  /** The window's first refusal of the period, or undefined. */
  exhausted(window: NoticeWindow, period: number): Notice | undefined {
    return this.#first(`x:${window}`, period) ? { type: 'quota.exhausted', window, period } : undefined;
  }
}

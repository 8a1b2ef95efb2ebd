// Which quota crossings a decision caused, in process (`redis-script.ts` does the same in Lua).
// A threshold is crossed by the request that takes the count from below it to at least it. Each
// crossing is noticed at most once per UTC day or month, so a sliding day that dips and climbs
// back says nothing twice.
//
// Each notice is given once more, to a later decision (`RECORD_AGAIN_AFTER_MS`,
// `RECORD_AGAIN_WITHIN_MS`): the instance that decided it may have died before recording it. Its
// event id is the same (src/webhooks/events.ts), so a notice already recorded records nothing.
import type { Notice, NoticeWindow } from '../../core/decision.ts';
import { monthOf } from './month.ts';

const DAY_MS = 86_400_000;

/** Returns the day window's period: the UTC day number of `now` (epoch ms). */
export function dayPeriod(now: number): number {
  return Math.floor(now / DAY_MS);
}

/**
 * Returns the month window's period: year * 12 + month - 1 (UTC), as the Redis script numbers it.
 */
export function monthPeriod(now: number): number {
  const start = new Date(monthOf(now).start);
  return start.getUTCFullYear() * 12 + start.getUTCMonth();
}

/** A notice is given once more to the subject's first decision at least this long after it... */
export const RECORD_AGAIN_AFTER_MS = 30_000;
/**
 * ...before this long after it, and while its period lasts: a warning about a day or a month
 * that is over is no warning (and the event's numbers, read from the decision, would be the
 * next period's). Delivered events are kept 8 days, so an id seen again within it is recorded once.
 */
export const RECORD_AGAIN_WITHIN_MS = 3_600_000;

/** Returns whether `notice` is about the day or month of `now` (a ban is always current). */
function current(notice: Notice, now: number): boolean {
  if (notice.type === 'key.banned') return true;
  return notice.period === (notice.window === 'day' ? dayPeriod(now) : monthPeriod(now));
}

/** Returns the units of a quota at which a threshold in percent is reached (at least 1). */
function thresholdUnits(percent: number, quota: number): number {
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
  /** Notices to give once more, oldest first, with when (epoch ms). */
  #again: { readonly notice: Notice; readonly from: number; readonly until: number }[] = [];

  /**
   * Returns `fresh` (this decision's notices) and those given once more at `now`: the ones noticed
   * from RECORD_AGAIN_WITHIN_MS to RECORD_AGAIN_AFTER_MS ago, in a period still current. Keeps
   * `fresh` for their second time.
   */
  withRepeats(fresh: readonly Notice[], now: number): readonly Notice[] {
    if (fresh.length === 0 && this.#again.length === 0) return fresh;
    const repeated: Notice[] = [];
    const waiting = this.#again.filter((entry) => {
      if (now < entry.from) return true;
      if (now < entry.until && current(entry.notice, now)) repeated.push(entry.notice);
      return false;
    });
    for (const notice of fresh) {
      waiting.push({ notice, from: now + RECORD_AGAIN_AFTER_MS, until: now + RECORD_AGAIN_WITHIN_MS });
    }
    this.#again = waiting;
    return [...fresh, ...repeated];
  }

  /** Returns true the first time `key` is seen in `period`, and remembers it. */
  #first(key: string, period: number): boolean {
    if (this.#sent.get(key) === period) return false;
    this.#sent.set(key, period);
    return true;
  }

  /** Returns the thresholds a count going from `before` to `after` crossed, ascending. */
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

  /** Returns the window's first refusal of the period, or undefined. */
  exhausted(window: NoticeWindow, period: number): Notice | undefined {
    return this.#first(`x:${window}`, period) ? { type: 'quota.exhausted', window, period } : undefined;
  }
}

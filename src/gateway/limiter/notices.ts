// Which quota thresholds a decision crossed, in process (`redis-script.ts` does the same in Lua).
// A threshold is crossed by the request that takes the count from below it to at least it. Each
// crossing is reported at most once per UTC day or month, so a sliding day that dips and climbs
// back is not reported twice.
//
// Each notice is repeated once on a later decision (`RECORD_AGAIN_AFTER_MS`,
// `RECORD_AGAIN_WITHIN_MS`), in case the instance that decided it died before recording it. The
// event id is the same (src/webhooks/events.ts), so recording it twice is a no-op.
import type { Notice, NoticeWindow } from '../../core/decision.ts';
import { monthOf } from './month.ts';

const DAY_MS = 86_400_000;

/** Returns the day window's period: the UTC day number of `now` (epoch ms). */
export function dayPeriod(now: number): number {
  return Math.floor(now / DAY_MS);
}

/** Returns the month window's period: year * 12 + month - 1 (UTC), as the Redis script does. */
export function monthPeriod(now: number): number {
  const start = new Date(monthOf(now).start);
  return start.getUTCFullYear() * 12 + start.getUTCMonth();
}

/** A notice is repeated on the subject's first decision at least this long after it... */
export const RECORD_AGAIN_AFTER_MS = 30_000;
/**
 * ...if that decision comes within this long and the period has not ended: a warning about a past
 * day or month is useless, and its numbers, read from the decision, would be the next period's.
 * Delivered events are kept `DELIVERED_KEEP_MS` (src/store/outbox.ts), so the repeat is recorded
 * once.
 */
export const RECORD_AGAIN_WITHIN_MS = 3_600_000;

/** Returns whether `notice` is about the day or month of `now`; a ban is always current. */
function current(notice: Notice, now: number): boolean {
  if (notice.type === 'key.banned') return true;
  return notice.period === (notice.window === 'day' ? dayPeriod(now) : monthPeriod(now));
}

/** Returns the units of a quota at which a threshold in percent is reached (at least 1). */
function thresholdUnits(percent: number, quota: number): number {
  return Math.max(1, Math.ceil((percent * quota) / 100));
}

/**
 * The periods already reported, by kind, window and threshold, plus the notices due to repeat.
 * One per subject that has thresholds.
 *
 * @example
 * const flags = new NoticeFlags(); flags.crossed([80, 100], 'day', 100, 79, 80, 20_000) // one quota.threshold
 */
export class NoticeFlags {
  readonly #sent = new Map<string, number>();
  /** Notices to repeat, oldest first, with their time range (epoch ms). */
  #again: { readonly notice: Notice; readonly from: number; readonly until: number }[] = [];

  /**
   * Returns `fresh` (this decision's notices) plus the queued notices due to repeat at `now`, and
   * queues `fresh` for their own repeat.
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

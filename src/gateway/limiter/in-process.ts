// The in-process rate limiter. Each subject has a sliding minute and day window counted in
// buckets, a calendar month if its limits have one (`month.ts`), and a temporary ban. A request
// spends its cost in every window at once, or spends nothing.
//
// Counting. A window of length W is split into buckets of length b (minute: 1 s, day: 15 min),
// kept in a ring with a running sum, so a decision costs amortised O(1). A request goes into the
// bucket that ends at or after its time, and is counted until that bucket's end plus W. Buckets
// end on whole seconds.
//
// Bound. An admitted request is counted for at least W and less than W + b. So the limiter never
// admits more than the quota in any interval of length W, and a `rate_limited` answer means the
// quota was admitted within the last W + b (`in-process.test.ts` checks both against an exact log).
// 15-minute day buckets keep the day's relative slack below the minute's, with little memory.
//
// Memory. A window whose requests all sit in one bucket has no ring (`BucketWindow`). The sizes
// are in docs/operations.md, "Memory, and keyless clients in a fixed table".
//
// Consumers and keyless clients are kept apart. Consumers are few and known: each has its own
// state in a map, removed only once idle for the day's W + b and not banned. Keyless clients are
// unbounded, so they share a fixed-size table (`keyless.ts`) with coarser buckets. A collision
// there can refuse a keyless request early, but never touches a consumer's state.
//
// Resets. A decision's `now` is the current unix second. A window's reset is the second its
// remaining next grows, or `now` if it holds nothing. It is never before `now` and at most W
// ahead, unless a subject's limits were lowered below what it holds. On a 429 the binding
// window's reset is now + retryAfter.
//
// Bans. `ban.threshold` refusals within a minute start a ban. It ends on the whole second
// `ban.seconds` after the second it began in, and the refusal that starts it is already
// `key_banned` with that end in Retry-After and Reset. So a `rate_limited` answer keeps its
// promise: after `retryAfter` the next request is admitted. Requests refused while banned do not
// count as refusals.
import { type Clock, systemClock } from '../../core/clock.ts';
import type { Decision, Notice, Outcome, WindowState } from '../../core/decision.ts';
import { type Limits, PLAN_LIMITS } from '../../keys/plans.ts';
import { BucketWindow, DAY, MINUTE, type WindowSpec } from './buckets.ts';
import { CellView, KeylessTable, type KeylessTableOptions } from './keyless.ts';
import type { LimiterEvent, RateLimiter, Subject } from './limiter.ts';
import { MONTH_NAME, MonthWindow } from './month.ts';
import { dayPeriod, monthPeriod, NoticeFlags } from './notices.ts';

/** Longest a request is counted (the day's W + b): a consumer idle this long has empty windows. */
export const STATE_TTL_MS = DAY.windowMs + DAY.bucketMs;
/** How often, at most, idle consumers are dropped and ended keyless bans are reported. */
const SWEEP_INTERVAL_MS = 60_000;

export interface SlidingWindowLimiterOptions {
  /** Where time comes from; tests pass a fake one. */
  clock?: Clock;
  /** The keyless clients' table (`keyless.ts`): cells per row and the hash key. */
  keyless?: KeylessTableOptions;
  /** Called when a ban starts, and when the limiter notices it has ended. */
  onEvent?: (event: LimiterEvent) => void;
}

/** Window counters of one consumer, and its ban. */
class SubjectState {
  readonly minute: BucketWindow;
  readonly day: BucketWindow;
  /** The calendar month; created on first use for limits that have one. */
  month: MonthWindow | undefined;
  /** Recent refusals; created on the first one, since most subjects are never refused. */
  refusals: BucketWindow | undefined;
  /** Epoch ms the ban ends; 0 when not banned. */
  bannedUntil = 0;
  /** Who was banned, for the `ban_end` event. */
  bannedSubject: Subject | undefined;
  /** Epoch ms of the latest decision, for dropping idle consumers. */
  seen = 0;
  /** Notices already given, by period; created once the subject has thresholds. */
  flags: NoticeFlags | undefined;

  constructor(now: number) {
    this.minute = new BucketWindow(MINUTE, now);
    this.day = new BucketWindow(DAY, now);
  }
}

/**
 * Sliding-window limits per subject, kept in process. The file header covers the bound, the
 * memory and how keyless clients are counted.
 *
 * @example
 * const limiter = new SlidingWindowLimiter({ onEvent: (e) => log(e) });
 * const decision = limiter.decide(subject); // { outcome: 'admitted', retryAfter: 0, ... }
 */
export class SlidingWindowLimiter implements RateLimiter {
  readonly #clock: Clock;
  readonly #onEvent: (event: LimiterEvent) => void;
  readonly #keylessTable: KeylessTable;
  /** For each banned cell of the keyless row 0, the subject that started the ban, for `ban_end`. */
  readonly #keylessBans = new Map<number, Subject>();
  /** Consumers' states by subject id; dropped only by the idle sweep. */
  readonly #consumers = new Map<string, SubjectState>();
  /** Latest time seen: the clock may step back, but the windows must not. */
  #time: number;
  #lastSweep: number;
  /** The latest keyless client's per-minute quota, for `full`. */
  #keylessPerMinute = PLAN_LIMITS.free.perMinute;

  constructor({ clock = systemClock, keyless, onEvent = () => {} }: SlidingWindowLimiterOptions = {}) {
    this.#clock = clock;
    this.#onEvent = onEvent;
    this.#time = clock.now();
    this.#lastSweep = this.#time;
    this.#keylessTable = new KeylessTable(this.#time, keyless);
  }

  /**
   * Cells in row 0 of the keyless table with a count in the day window. This is not a count of
   * clients, since addresses share cells.
   */
  get keylessCells(): number {
    return this.#keylessTable.used;
  }

  /** Number of consumers with their own state. */
  get consumers(): number {
    return this.#consumers.size;
  }

  /** Cells per row of the keyless clients' table. */
  get capacity(): number {
    return this.#keylessTable.columns;
  }

  /** Whether the keyless table is saturated (`KeylessTable.saturated`). */
  get full(): boolean {
    return this.#keylessTable.saturated(this.#keylessPerMinute);
  }

  decide(subject: Subject, cost = 1): Decision {
    const now = Math.max(this.#time, this.#clock.now());
    this.#time = now;
    if (now - this.#lastSweep >= SWEEP_INTERVAL_MS) this.#sweep(now);
    if (subject.keyless) return this.#decideKeyless(subject, cost, now);
    const state = this.#consumerState(subject.id, now);
    const { thresholds } = subject;
    if (!thresholds) return this.#spendOrRefuse(subject, cost, state, now);
    state.flags ??= new NoticeFlags();
    const { flags } = state;
    const decision = this.#spendOrRefuse(subject, cost, state, now, { flags, thresholds });
    return withNotices(decision, flags.withRepeats(decision.notices ?? [], now));
  }

  /**
   * Counts `units` in every window of a consumer without a decision, for a grant to a worker
   * (`host-limiter.ts`); the caller has checked they fit. Returns the epoch ms they are counted at,
   * for `giveBack`. On a whole second they are counted a millisecond later, so a grant made as a
   * second starts lasts that whole second.
   */
  book(subject: Subject, units: number): number | undefined {
    if (subject.keyless) return undefined;
    let now = Math.max(this.#time, this.#clock.now());
    if (now % 1_000 === 0) now += 1;
    this.#time = now;
    const state = this.#consumerState(subject.id, now);
    state.minute.advance(now);
    state.day.advance(now);
    state.minute.add(now, units);
    state.day.add(now, units);
    if (subject.limits.perMonth !== undefined) {
      state.month ??= new MonthWindow(now);
      state.month.advance(now);
      state.month.add(units);
    }
    return now;
  }

  /** Takes back unspent `units` that `book` counted at `at`, from windows still holding them. */
  giveBack(subject: Subject, units: number, at: number): void {
    const state = this.#consumers.get(subject.id);
    if (!state || units <= 0) return;
    const now = Math.max(this.#time, this.#clock.now());
    this.#time = now;
    state.minute.advance(now);
    state.day.advance(now);
    state.minute.remove(at, units);
    state.day.remove(at, units);
    state.month?.advance(now);
    state.month?.remove(at, units);
  }

  /**
   * Spends `cost` in every window, or refuses (counting the refusal, which may start a ban). With
   * `noticing`, the decision carries the thresholds this crossed; `decide` adds the repeats.
   */
  #spendOrRefuse(
    subject: Subject,
    cost: number,
    state: SubjectState,
    now: number,
    noticing?: { readonly flags: NoticeFlags; readonly thresholds: readonly number[] },
  ): Decision {
    const { minute, day } = state;
    minute.advance(now);
    day.advance(now);
    const { perMinute, perDay, perMonth } = subject.limits;
    let month: MonthWindow | undefined;
    if (perMonth !== undefined) {
      month = state.month ??= new MonthWindow(now);
      month.advance(now);
    }

    if (state.bannedUntil !== 0) {
      if (now < state.bannedUntil) return this.#decisionFromState('key_banned', subject, state, now, state.bannedUntil);
      this.#endBan(state);
    }
    if (cost === 0) return this.#decisionFromState('admitted', subject, state, now, now);
    const monthFits = month === undefined || month.count + cost <= (perMonth as number);
    const dayFits = day.count + cost <= perDay;
    if (minute.count + cost <= perMinute && dayFits && monthFits) {
      const dayBefore = day.count;
      const monthBefore = month?.count ?? 0;
      minute.add(now, cost);
      day.add(now, cost);
      month?.add(cost);
      const admitted = this.#decisionFromState('admitted', subject, state, now, now);
      if (!noticing) return admitted;
      const { flags, thresholds } = noticing;
      const notices = flags.crossed(thresholds, 'day', perDay, dayBefore, day.count, dayPeriod(now));
      if (month) {
        const period = monthPeriod(now);
        notices.push(...flags.crossed(thresholds, 'month', perMonth as number, monthBefore, month.count, period));
      }
      return withNotices(admitted, notices);
    }
    const banned = this.#refusalStartsBan(subject, state, now);
    let refused: Decision;
    if (banned) {
      refused = this.#decisionFromState('key_banned', subject, state, now, state.bannedUntil);
    } else {
      const admitAt = Math.max(
        minute.admitAt(perMinute - cost + 1),
        day.admitAt(perDay - cost + 1),
        month ? month.admitAt((perMonth as number) - cost + 1) : Number.NEGATIVE_INFINITY,
      );
      refused = this.#decisionFromState('rate_limited', subject, state, now, admitAt);
    }
    if (!noticing) return refused;
    const { flags } = noticing;
    const notices: Notice[] = [];
    const dayOut = dayFits ? undefined : flags.exhausted('day', dayPeriod(now));
    if (dayOut) notices.push(dayOut);
    const monthOut = monthFits ? undefined : flags.exhausted('month', monthPeriod(now));
    if (monthOut) notices.push(monthOut);
    if (banned) notices.push({ type: 'key.banned', until: state.bannedUntil });
    return withNotices(refused, notices);
  }

  /** Returns a consumer's state, creating it on its first request, and marks it seen. */
  #consumerState(id: string, now: number): SubjectState {
    let state = this.#consumers.get(id);
    if (!state) {
      state = new SubjectState(now);
      this.#consumers.set(id, state);
    }
    state.seen = now;
    return state;
  }

  /** Drops consumers that are idle past `STATE_TTL_MS` and not banned; reports ended bans. */
  #sweep(now: number): void {
    this.#lastSweep = now;
    const ends = this.#keylessTable.bannedUntil;
    for (const cell of this.#keylessBans.keys()) {
      if ((ends[cell] as number) * 1_000 <= now) this.#endKeylessBan(cell);
    }
    for (const [id, state] of this.#consumers) {
      if (now - state.seen < STATE_TTL_MS || now < state.bannedUntil) continue;
      if (state.bannedUntil !== 0) this.#endBan(state);
      this.#consumers.delete(id);
    }
  }

  /** Counts a refusal; returns true if it reaches the ban threshold and so starts a ban. */
  #refusalStartsBan(subject: Subject, state: SubjectState, now: number): boolean {
    const { threshold, seconds } = subject.ban;
    if (!(threshold >= 1 && seconds > 0)) return false;
    state.refusals ??= new BucketWindow(MINUTE, now);
    state.refusals.advance(now);
    state.refusals.add(now);
    if (state.refusals.count < threshold) return false;
    state.refusals = undefined;
    // Ending on a whole second keeps now + retryAfter equal to the end throughout the ban; counting
    // from the start of this second makes the first Retry-After `seconds`, never `seconds` + 1.
    state.bannedUntil = Math.floor(now / 1_000) * 1_000 + seconds * 1_000;
    state.bannedSubject = subject;
    this.#onEvent({ type: 'ban_start', subject, until: state.bannedUntil });
    return true;
  }

  /**
   * Decides for a keyless client from its two cells (`keyless.ts`): each window reads the cell with
   * the smaller count, a request is counted in both, and the address is banned while both are.
   */
  #decideKeyless(subject: Subject, cost: number, now: number): Decision {
    const table = this.#keylessTable;
    table.advance(now);
    const { a, b } = table.cellsOf(subject.id);
    const ends = table.bannedUntil;
    if (ends[a] !== 0 && (ends[a] as number) * 1_000 <= now) this.#endKeylessBan(a);
    if (ends[b] !== 0 && (ends[b] as number) * 1_000 <= now) ends[b] = 0;
    const { minute, day, refusals } = table;
    const view = (): [CellView, CellView] => [
      new CellView(minute, minute.count(a) <= minute.count(b) ? a : b),
      new CellView(day, day.count(a) <= day.count(b) ? a : b),
    ];
    const { perMinute, perDay } = subject.limits;
    this.#keylessPerMinute = perMinute;
    const decision = (outcome: Outcome, until: number): Decision => {
      const [m, d] = view();
      return decisionFromCounts(outcome, { perMinute, perDay }, now, until, m, d);
    };
    if (ends[a] !== 0 && ends[b] !== 0) {
      return decision('key_banned', Math.min(ends[a] as number, ends[b] as number) * 1_000);
    }
    if (cost === 0) return decision('admitted', now);
    const [m, d] = view();
    if (m.count + cost <= perMinute && d.count + cost <= perDay) {
      for (const cell of [a, b]) {
        minute.add(cell, now, cost);
        day.add(cell, now, cost);
      }
      return decision('admitted', now);
    }
    const { threshold, seconds } = subject.ban;
    if (threshold >= 1 && seconds > 0) {
      refusals.add(a, now, 1);
      refusals.add(b, now, 1);
      if (Math.min(refusals.count(a), refusals.count(b)) >= threshold) {
        refusals.clear(a);
        refusals.clear(b);
        // Like a key's ban, it ends on the whole second `seconds` after the start of this one.
        const end = Math.floor(now / 1_000) + seconds;
        ends[a] = Math.max(ends[a] as number, end);
        ends[b] = Math.max(ends[b] as number, end);
        // Ban events are tracked on row 0's cell; a new ban there ends the previous one's events.
        if (this.#keylessBans.has(a)) this.#endKeylessBan(a, true);
        this.#keylessBans.set(a, subject);
        this.#onEvent({ type: 'ban_start', subject, until: end * 1_000 });
        return decision('key_banned', end * 1_000);
      }
    }
    return decision('rate_limited', Math.max(m.admitAt(perMinute - cost + 1), d.admitAt(perDay - cost + 1)));
  }

  /**
   * Reports the end of the ban on row 0's `cell`, and clears it unless `keep` (when a new ban
   * takes the cell over).
   */
  #endKeylessBan(cell: number, keep = false): void {
    if (!keep) this.#keylessTable.bannedUntil[cell] = 0;
    const subject = this.#keylessBans.get(cell);
    if (!subject) return;
    this.#keylessBans.delete(cell);
    this.#onEvent({ type: 'ban_end', subject });
  }

  #endBan(state: SubjectState): void {
    const subject = state.bannedSubject;
    state.bannedUntil = 0;
    state.bannedSubject = undefined;
    if (subject) this.#onEvent({ type: 'ban_end', subject });
  }

  /** Returns the decision that `state`'s windows give at `now`. */
  #decisionFromState(outcome: Outcome, subject: Subject, state: SubjectState, now: number, until: number): Decision {
    const month = subject.limits.perMonth === undefined ? undefined : state.month;
    return decisionFromCounts(outcome, subject.limits, now, until, state.minute, state.day, month);
  }
}

/** Returns `decision` with `notices` attached, or unchanged if there are none. */
export function withNotices(decision: Decision, notices: readonly Notice[]): Decision {
  return notices.length === 0 ? decision : { ...decision, notices };
}

/** What a decision reads from a window: a `BucketWindow`, or the Redis script's numbers. */
export type WindowCounts = Pick<BucketWindow, 'count' | 'oldestLeavesAt' | 'admitAt'>;

/** What a decision reads from the month: a `MonthWindow`, or the Redis script's numbers. */
export type MonthCounts = Pick<MonthWindow, 'count' | 'start' | 'end'>;

/**
 * Returns the decision for `outcome` at `now` (epoch ms). `until` is when the next request would
 * be admitted or the ban ends (`now` if admitted); pass `month` if the limits have one. The Redis
 * limiter uses it too, so both give the same headers for the same counts.
 *
 * @example
 * decisionFromCounts('admitted', { perMinute: 60, perDay: 1000 }, now, now, minute, day).retryAfter // 0
 */
export function decisionFromCounts(
  outcome: Outcome,
  limits: Limits,
  now: number,
  until: number,
  minute: WindowCounts,
  day: WindowCounts,
  month?: MonthCounts,
): Decision {
  const seconds = Math.floor(now / 1_000);
  const windows = [
    windowState(MINUTE, minute, limits.perMinute, seconds),
    windowState(DAY, day, limits.perDay, seconds),
  ];
  if (month && limits.perMonth !== undefined) windows.push(monthState(month, limits.perMonth));
  return {
    outcome,
    now: seconds,
    windows,
    retryAfter: outcome === 'admitted' ? 0 : Math.max(1, Math.ceil((until - now) / 1_000)),
  };
}

function windowState(spec: WindowSpec, window: WindowCounts, limit: number, now: number): WindowState {
  const count = window.count;
  const remaining = count < limit ? limit - count : 0;
  let reset = now;
  if (remaining > 0 && count > 0) reset = window.oldestLeavesAt / 1_000;
  else if (remaining === 0) reset = window.admitAt(limit) / 1_000;
  return { name: spec.name, seconds: spec.seconds, limit, remaining, reset };
}

/** Returns the month window's state; it resets at the next month's start, whatever it holds. */
function monthState(month: MonthCounts, limit: number): WindowState {
  const count = month.count;
  return {
    name: MONTH_NAME,
    seconds: (month.end - month.start) / 1_000,
    limit,
    remaining: count < limit ? limit - count : 0,
    reset: month.end / 1_000,
  };
}

/**
 * The in-process rate limiter: two sliding windows per subject (60 s and 86,400 s), counted in
 * buckets, the calendar month when the subject's limits have one (`month.ts`), plus the
 * temporary ban. A request spends its cost in every window at once, or nothing.
 *
 * Counting. Each window of length W is cut into buckets of b (minute: 1 s, day: 15 min) kept in
 * a ring of W/b + 1 `Uint32Array` slots with a running sum, so a decision costs O(1) amortised.
 * A request at time t goes into the bucket that ends at or after t, and is counted until that
 * bucket's end plus W. Buckets end on whole seconds: the first request into an empty window
 * re-anchors the day buckets at the next whole second (free, since nothing is counted).
 *
 * Bound. Each admitted request holds one unit of its window's quota Q from its arrival for at
 * least W and less than W + b (minute: < 61 s, day: < 24 h 15 min). So the limiter behaves like
 * an exact sliding window whose length is between W and W + b: it never admits more than Q in
 * any interval of length W, and when it answers `rate_limited` at t, at least Q requests were
 * admitted in (t - W - b, t]. (`memory.test.ts` checks both against an exact log.) Day buckets of 15 min keep the day's slack (b/W = 1.04 %) below
 * the minute's (1/60 = 1.67 %) at a third of the memory of 5 min buckets.
 *
 * Memory per tracked subject: a window whose counted requests all sit in one bucket keeps no
 * ring (`BucketWindow`), so a stranger that sent a request or a few costs about 450 bytes of
 * heap with its LRU entry (`bench/strangers.ts` measures it from outside). One whose requests
 * span buckets holds 632 bytes of counters (61 + 97 slots of 4 bytes): with the objects and the
 * LRU entry about 1.1 KB under Bun 1.4 and 1.3 KB under Node 20, so the default 100,000 client
 * addresses take 110-130 MB at most. A subject refused within the last minute also holds a
 * refusal counter (up to 244 bytes), and one with a monthly quota a `MonthWindow` (three numbers).
 *
 * Consumers and addresses apart. Consumers (API keys) are few and known: the keys file's. Each
 * has its own state, always, in a map of its own that nothing evicts; an entry goes once it has
 * been idle for 24 h 15 min and is not banned (so a consumer removed from the keys file ages
 * out). Client addresses without a valid key are unbounded: their states live in an `LRUCache`
 * of `maxSubjects` entries whose TTL (24 h 15 min, refreshed on every request, extended by the
 * ban) outlasts every counted request, so an entry only goes stale once its windows are empty.
 * A new address never evicts a live entry: when the cache is full the limiter purges stale
 * entries (at most once a second, one O(n) pass); if it is still full, the newcomer shares one
 * overflow state, checked against its own limits, so rotating addresses cannot mint fresh
 * quotas. When an address later gets its own entry, it starts with a copy of the overflow
 * counts, since some of them may be its own. The overflow is never banned (a ban would hit
 * strangers), and it never applies to a consumer: a flood of addresses cannot touch a key's quota.
 *
 * Resets. `now` in a decision is floor(time / 1000). A window's reset is the unix second at which
 * its remaining next grows (its oldest counted bucket leaves; when remaining is 0, the second
 * its next request would be admitted); `now` when it holds nothing. It is never before `now`
 * and never after ceil(time) + W (unless a subject's limits were lowered below what it already
 * holds). On a 429 the binding window's reset is now + retryAfter, to the second.
 *
 * Bans. `ban.threshold` refusals counted like the minute window (1 s buckets, 60-61 s) start a
 * ban that ends on the whole second `ban.seconds` after the start of the second it began in:
 * it lasts more than `ban.seconds` - 1 s and at most `ban.seconds`, and the refusal that starts
 * it says Retry-After = `ban.seconds` and Reset = its end, to the second. The refusal that reaches the threshold is
 * already answered `key_banned`, so `rate_limited` keeps its promise that waiting `retryAfter`
 * gets the next request admitted. Requests refused while banned do not count as refusals.
 */
import { LRUCache } from 'lru-cache';
import { type Clock, systemClock } from '../../core/clock.ts';
import type { Decision, Notice, Outcome, WindowState } from '../../core/decision.ts';
import type { Limits } from '../../keys/plans.ts';
import { BucketWindow, DAY, MINUTE, type WindowSpec } from './buckets.ts';
import type { LimiterEvent, RateLimiter, Subject } from './limiter.ts';
import { MONTH_NAME, MonthWindow } from './month.ts';
import { dayPeriod, monthPeriod, NoticeFlags } from './notices.ts';

/** Longest a request is counted (W + b of the day window): entries idle this long are empty. */
export const STATE_TTL_MS = DAY.windowMs + DAY.bucketMs;
/** A full cache is scanned for stale entries at most this often, so a flood cannot make each request O(n). */
const PURGE_INTERVAL_MS = 1_000;
const DEFAULT_MAX_SUBJECTS = 100_000;
/** Idle consumers' entries are looked for at most this often. */
const SWEEP_INTERVAL_MS = 60_000;

export interface SlidingWindowLimiterOptions {
  /** Where time comes from; tests pass a fake one. */
  clock?: Clock;
  /** Most client addresses tracked at once (bounds memory: at most about 1.3 KB each); consumers are not counted. */
  maxSubjects?: number;
  /** Told when a ban starts and when it is seen to have ended. */
  onEvent?: (event: LimiterEvent) => void;
}

/** Window counters of one subject (or of one plan's overflow), and its ban. */
class SubjectState {
  readonly minute: BucketWindow;
  readonly day: BucketWindow;
  /** The calendar month; made on the first decision for limits that have one. */
  month: MonthWindow | undefined;
  /** Recent refusals; created on the first one, since most subjects are never refused. */
  refusals: BucketWindow | undefined;
  /** Epoch ms the ban ends; 0 when not banned. */
  bannedUntil = 0;
  /** Who was banned, for the `ban_end` event. */
  bannedSubject: Subject | undefined;
  /** Epoch ms of the latest decision, for dropping idle consumers. */
  seen = 0;
  /** What was noticed in which period; made on the first notice of a subject with thresholds. */
  flags: NoticeFlags | undefined;

  constructor(now: number, seed?: SubjectState) {
    this.minute = new BucketWindow(MINUTE, now, seed?.minute);
    this.day = new BucketWindow(DAY, now, seed?.day);
  }
}

/**
 * Sliding-window limits per subject, kept in process; see the top of this file for the bound,
 * the memory and the full-cache behaviour.
 *
 * @example
 * const limiter = new SlidingWindowLimiter({ maxSubjects: 50_000, onEvent: (e) => log(e) });
 * const decision = limiter.decide(subject); // { outcome: 'admitted', retryAfter: 0, ... }
 */
export class SlidingWindowLimiter implements RateLimiter {
  readonly #clock: Clock;
  readonly #max: number;
  readonly #onEvent: (event: LimiterEvent) => void;
  readonly #cache: LRUCache<string, SubjectState>;
  /** Consumers' states, by subject id: never evicted, never shared. */
  readonly #consumers = new Map<string, SubjectState>();
  /** Shared by new client addresses while the cache is full of live ones. */
  #overflow: SubjectState | undefined;
  /** Whether the latest new address had to share the overflow state. */
  #full = false;
  /** Latest time seen: the clock may step back, the windows must not. */
  #time: number;
  #lastPurge = Number.NEGATIVE_INFINITY;
  #lastSweep: number;

  constructor({
    clock = systemClock,
    maxSubjects = DEFAULT_MAX_SUBJECTS,
    onEvent = () => {},
  }: SlidingWindowLimiterOptions = {}) {
    if (!Number.isSafeInteger(maxSubjects) || maxSubjects < 1) {
      throw new TypeError(`maxSubjects must be a positive integer, got ${maxSubjects}`);
    }
    this.#clock = clock;
    this.#max = maxSubjects;
    this.#onEvent = onEvent;
    this.#time = clock.now();
    this.#lastSweep = this.#time;
    this.#cache = new LRUCache<string, SubjectState>({
      // The same bound as `max: maxSubjects`, but `max` preallocates its arrays up front: 2-7 ms
      // of start-up for 100,000 subjects (bench/README.md). Sized by count, they grow as needed.
      maxSize: maxSubjects,
      sizeCalculation: () => 1,
      ttl: STATE_TTL_MS,
      updateAgeOnGet: true,
      // The default (1 ms) caches the time behind a setTimeout: stale under a fake clock, and a timer per call.
      ttlResolution: 0,
      // +1: lru-cache reads a start time of 0 as "no TTL".
      perf: { now: () => this.#time + 1 },
      dispose: (state, _id, reason) => {
        if (reason !== 'set' && state.bannedUntil !== 0) this.#endBan(state);
      },
    });
  }

  /** Number of client addresses with their own state (stale ones included until purged). */
  get size(): number {
    return this.#cache.size;
  }

  /** Number of consumers with their own state. */
  get consumers(): number {
    return this.#consumers.size;
  }

  /** Most client addresses with their own state (`maxSubjects`). */
  get capacity(): number {
    return this.#max;
  }

  /** True while the table is full of live entries: the latest new address shares the overflow state. */
  get full(): boolean {
    return this.#full;
  }

  decide(subject: Subject, cost = 1): Decision {
    const now = Math.max(this.#time, this.#clock.now());
    this.#time = now;
    const state = this.#stateOf(subject, now);
    const { thresholds } = subject;
    if (!thresholds) return this.#spendOrRefuse(subject, cost, state, now);
    state.flags ??= new NoticeFlags();
    const { flags } = state;
    const decision = this.#spendOrRefuse(subject, cost, state, now, { flags, thresholds });
    return withNotices(decision, flags.withRepeats(decision.notices ?? [], now));
  }

  /**
   * Spends `cost` in every window, or refuses (counting the refusal, perhaps starting a ban);
   * with `noticing` (a subject with thresholds) the decision carries what this crossed. `decide`
   * adds the notices given once more.
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
    // A read of the state: nothing spent, no refusal counted.
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

  #stateOf(subject: Subject, now: number): SubjectState {
    if (subject.plan !== 'anonymous') return this.#consumerState(subject.id, now);
    const own = this.#cache.get(subject.id);
    if (own) return own;
    const spill = this.#overflow;
    if (this.#cache.size >= this.#max && !this.#purge(now)) {
      this.#full = true;
      if (spill) return spill;
      this.#overflow = new SubjectState(now);
      return this.#overflow;
    }
    if (spill) {
      spill.minute.advance(now);
      spill.day.advance(now);
    }
    // Some of the overflow's counts may be this address's own: starting from zero could over-admit.
    const state = new SubjectState(now, spill && spill.day.count > 0 ? spill : undefined);
    this.#cache.set(subject.id, state);
    this.#full = false;
    return state;
  }

  /** A consumer's own state, made on its first request; idle ones are dropped now and then. */
  #consumerState(id: string, now: number): SubjectState {
    if (now - this.#lastSweep >= SWEEP_INTERVAL_MS) this.#sweep(now);
    let state = this.#consumers.get(id);
    if (!state) {
      state = new SubjectState(now);
      this.#consumers.set(id, state);
    }
    state.seen = now;
    return state;
  }

  /** Drops consumers idle for longer than anything is counted and not banned (a ban seen over is reported). */
  #sweep(now: number): void {
    this.#lastSweep = now;
    for (const [id, state] of this.#consumers) {
      if (now - state.seen < STATE_TTL_MS || now < state.bannedUntil) continue;
      if (state.bannedUntil !== 0) this.#endBan(state);
      this.#consumers.delete(id);
    }
  }

  /** Drops stale entries if the last pass was long enough ago; true when there is room now. */
  #purge(now: number): boolean {
    if (now - this.#lastPurge < PURGE_INTERVAL_MS) return false;
    this.#lastPurge = now;
    this.#cache.purgeStale();
    return this.#cache.size < this.#max;
  }

  /** Counts a refusal; true when it reaches the ban threshold, which starts the ban. */
  #refusalStartsBan(subject: Subject, state: SubjectState, now: number): boolean {
    const { threshold, seconds } = subject.ban;
    if (!(threshold >= 1 && seconds > 0) || this.#overflow === state) return false;
    state.refusals ??= new BucketWindow(MINUTE, now);
    state.refusals.advance(now);
    state.refusals.add(now);
    if (state.refusals.count < threshold) return false;
    state.refusals = undefined;
    // Ending on a whole second keeps now + retryAfter equal to the end for the whole ban; counted
    // from the start of this second, the first Retry-After is `seconds`, never `seconds` + 1.
    state.bannedUntil = Math.floor(now / 1_000) * 1_000 + seconds * 1_000;
    state.bannedSubject = subject;
    // Keep an address's entry (and so the ban) for the whole ban, however long it is configured.
    if (subject.plan === 'anonymous') this.#cache.set(subject.id, state, { ttl: STATE_TTL_MS + seconds * 1_000 });
    this.#onEvent({ type: 'ban_start', subject, until: state.bannedUntil });
    return true;
  }

  #endBan(state: SubjectState): void {
    const subject = state.bannedSubject;
    state.bannedUntil = 0;
    state.bannedSubject = undefined;
    if (subject) this.#onEvent({ type: 'ban_end', subject });
  }

  /** The decision `state`'s own windows show at `now`: `decisionFromCounts` over this limiter's windows. */
  #decisionFromState(outcome: Outcome, subject: Subject, state: SubjectState, now: number, until: number): Decision {
    const month = subject.limits.perMonth === undefined ? undefined : state.month;
    return decisionFromCounts(outcome, subject.limits, now, until, state.minute, state.day, month);
  }
}

/** `decision` with what it crossed, when it crossed anything. */
export function withNotices(decision: Decision, notices: readonly Notice[]): Decision {
  return notices.length === 0 ? decision : { ...decision, notices };
}

/** What a decision reads of a window: a `BucketWindow`, or the same numbers from the Redis script. */
export type WindowCounts = Pick<BucketWindow, 'count' | 'oldestLeavesAt' | 'admitAt'>;

/** What a decision reads of the calendar month: a `MonthWindow`, or the same numbers from the Redis script. */
export type MonthCounts = Pick<MonthWindow, 'count' | 'start' | 'end'>;

/**
 * The decision for `outcome` at `now` (epoch ms); `until` is the epoch ms the next request
 * would be admitted (or the ban ends), `now` when admitted. Shared with the Redis limiter, so
 * both answer the same headers for the same counts. `month` is given when the limits have one.
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

/** The calendar month resets at 00:00 UTC on the 1st of the next, whatever it holds. */
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

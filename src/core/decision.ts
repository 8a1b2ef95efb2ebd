// What the limiter decides for one request (`Decision`): its outcome, the windows' state and the
// notices it caused.

/** One limiter decision: what to do with the request and what to tell the client. */
export interface Decision {
  readonly outcome: Outcome;
  /** The decision's Unix time in whole seconds (floor): resets and Retry-After count from it. */
  readonly now: number;
  /** The subject's windows, shortest first: minute, day, and month when its limits have one. */
  readonly windows: readonly WindowState[];
  /** Seconds until a request would be admitted; at least 1 when refused, 0 when admitted. */
  readonly retryAfter: number;
  /**
   * For a subject with `thresholds`: the notices this decision caused, then earlier notices given
   * once more (`RECORD_AGAIN_AFTER_MS` in notices.ts); absent when there are none.
   */
  readonly notices?: readonly Notice[];
}

/** The windows whose thresholds cause notices: a minute passes too fast for a warning to help. */
export type NoticeWindow = 'day' | 'month';

/**
 * Something a decision caused that its subject is told about: one event per subject, window,
 * period and threshold (across instances with Redis). Each notice is given twice, in case the
 * instance that decided it dies before recording it; both carry the same event id, so they make
 * one event (`notices.ts`). `period` is the UTC day number (epoch ms / 86,400,000) for the day
 * window, and year * 12 + month - 1 for the month.
 */
export type Notice =
  | {
      readonly type: 'quota.threshold';
      readonly window: NoticeWindow;
      readonly threshold: number;
      readonly period: number;
    }
  /** The window's first refusal in the period. */
  | { readonly type: 'quota.exhausted'; readonly window: NoticeWindow; readonly period: number }
  /** A ban started; `until` in epoch ms. */
  | { readonly type: 'key.banned'; readonly until: number };

export type WindowName = 'minute' | 'day' | 'month';

/**
 * One window's state after a decision: the minute and day windows slide; the month is a calendar
 * month.
 */
export interface WindowState {
  readonly name: WindowName;
  /** The window's length in seconds: a minute, a day, or the current calendar month. */
  readonly seconds: number;
  /** The window's quota. */
  readonly limit: number;
  /** Requests that would still be admitted in this window right now. */
  readonly remaining: number;
  /** Unix time in seconds: see docs/integrators.md, "Headers", for the exact meaning. */
  readonly reset: number;
}

/**
 * What the limiter did with the request. `key_banned` also covers a banned keyless address,
 * since the contract has one code for any ban (`limiterRefusal()`, src/gateway/gateway.ts).
 */
export type Outcome = 'admitted' | 'rate_limited' | 'key_banned';

// What the limiter decides for one request (`Decision`): its outcome, the windows' state and the
// notices it caused.

/** One limiter decision: what to do with the request and what to tell the client. */
export interface Decision {
  readonly outcome: Outcome;
  /** Unix time in whole seconds (floor) of the decision: resets and Retry-After count from it. */
  readonly now: number;
  /** The subject's windows, shortest first: minute, day, and month when its limits have one. */
  readonly windows: readonly WindowState[];
  /** Seconds until a request would be admitted; at least 1 when refused, 0 when admitted. */
  readonly retryAfter: number;
  /**
   * What this decision crossed, for a subject with `thresholds`, then the notices given once
   * more (30 s to an hour after their first time, `notices.ts`); absent when nothing.
   */
  readonly notices?: readonly Notice[];
}

/** Windows whose crossings are noticed: a minute's comes and goes too fast to warn anyone. */
export type NoticeWindow = 'day' | 'month';

/**
 * What a decision caused that its subject is told about: one event per subject, window, period and
 * threshold (across instances with Redis). Each notice is given twice, in case the instance that
 * decided it died before recording it; both carry one event id, so they make one event
 * (`notices.ts`).
 * `period` is the UTC day number (epoch ms / 86,400,000) for the day window, year * 12 + month - 1
 * for the month.
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
 * The state of one window after a decision: the minute and the day slide; the month is the calendar
 * month.
 */
export interface WindowState {
  readonly name: WindowName;
  /**
   * Window length in seconds: 60, 86,400, or the current calendar month's (2,419,200 to 2,678,400).
   */
  readonly seconds: number;
  /** Quota of the window. */
  readonly limit: number;
  /** Requests that would still be admitted in this window right now. */
  readonly remaining: number;
  /** Unix time in seconds: see docs/integrators.md, "Headers", for the exact meaning. */
  readonly reset: number;
}

/**
 * What the limiter did with the request. `key_banned` names a banned keyless address's refusal
 * too: the contract has one code for a ban, whoever is banned (`limiterRefusal()`,
 * src/gateway/gateway.ts).
 */
export type Outcome = 'admitted' | 'rate_limited' | 'key_banned';

// The limiter interface the gateway uses: `RateLimiter.decide()` takes a `Subject` and a cost and
// returns a `Verdict` (a decision or `Unavailable`), never an HTTP response.
import type { Decision } from '../../core/decision.ts';
import type { BanPolicy, Limits, PlanName } from '../../keys/plans.ts';

/**
 * Whose quota a request counts against: a consumer (all its keys together), or a keyless client's
 * address group.
 */
export interface Subject {
  /** Stable identity, e.g. `key:con_…` (a consumer's id) or `addr:203.0.113.7`. */
  readonly id: string;
  /**
   * True for a keyless client's address group. Limiters count these apart from consumers and never
   * grant or lease them units.
   */
  readonly keyless: boolean;
  /** Plan name for metrics and logs; `anonymous` for a keyless client. */
  readonly plan: PlanName | 'anonymous';
  /** The consumer's name or the keyless client's address group, for logs (never a token). */
  readonly label: string;
  readonly limits: Limits;
  readonly ban: Required<BanPolicy>;
  /** Percentages of the day and month quotas that trigger a notice, ascending; absent: none. */
  readonly thresholds?: readonly number[];
}

/** A ban's start or end, reported so it can be logged and counted. */
export type LimiterEvent =
  | {
      readonly type: 'ban_start';
      readonly subject: Subject;
      /** When the ban ends, in epoch ms (the clock's unit). */
      readonly until: number;
    }
  | { readonly type: 'ban_end'; readonly subject: Subject };

/**
 * The limiter could not decide: Redis is down and `--redis-fail closed` forbids deciding without
 * it. The gateway answers 503.
 */
export interface Unavailable {
  readonly outcome: 'unavailable';
  /** Why, for the log (never shown to the client). */
  readonly reason: string;
}

/** The limiter's answer for one request: a decision, or `Unavailable`. */
export type Verdict = Decision | Unavailable;

/**
 * Decides once per request; the in-process implementation is `SlidingWindowLimiter`. `cost`
 * (default 1) is spent in every window at once: the request is admitted only if it fits in each
 * window, else refused and nothing is spent. A cost of 0 only reads the state: it counts no refusal
 * and starts no ban (a banned subject still gets `key_banned`).
 */
export interface RateLimiter {
  decide(subject: Subject, cost?: number): Verdict | Promise<Verdict>;
}

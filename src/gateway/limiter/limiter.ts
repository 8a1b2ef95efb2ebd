// The limiter as the gateway sees it at step 3: `RateLimiter.decide()` takes a `Subject` and a
// cost and gives a `Verdict`, a decision or `Unavailable`, never an HTTP answer.
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
   * True for a keyless client (an address group without a valid key): the limiters count these
   * apart from consumers and never grant or lease them units.
   */
  readonly keyless: boolean;
  /** Plan name for metrics and logs; `anonymous` for a keyless client. */
  readonly plan: PlanName | 'anonymous';
  /** The consumer's name or the keyless client's address group, for logs (never a token). */
  readonly label: string;
  readonly limits: Limits;
  readonly ban: Required<BanPolicy>;
  /**
   * Percent of the day and month quotas whose crossing is noticed, ascending; none: no notices at
   * all.
   */
  readonly thresholds?: readonly number[];
}

/** Ban start and end, reported so they can be logged and counted. */
export type LimiterEvent =
  | {
      readonly type: 'ban_start';
      readonly subject: Subject;
      /** When the ban ends, in epoch ms (the clock's unit). */
      readonly until: number;
    }
  | { readonly type: 'ban_end'; readonly subject: Subject };

/**
 * The limiter could not decide: Redis is down and `--redis-fail closed` says not to
 * decide without it. The gateway answers 503; the limiter never builds an HTTP answer.
 */
export interface Unavailable {
  readonly outcome: 'unavailable';
  /** Why, for the log (never shown to the client). */
  readonly reason: string;
}

/** What the gateway gets for one request: a decision, or none to be had. */
export type Verdict = Decision | Unavailable;

/**
 * Decides once per request; the in-process implementation is `SlidingWindowLimiter`.
 *
 * `cost` is what the request spends in every window at once (default 1). It is admitted only if
 * all of it fits in each window; else it is refused whole and spends nothing. A cost of 0 only
 * reads the state: it counts no refusal and starts no ban (a banned subject reads `key_banned`).
 */
export interface RateLimiter {
  decide(subject: Subject, cost?: number): Verdict | Promise<Verdict>;
}

// How many units a grant asks for: what the recent rate would spend in the rest of its term,
// with headroom, plus what the requests waiting for it need. Shared by the Redis leases
// (`leases.ts`) and the workers' grants from the supervisor (`host-limiter.ts`).

/**
 * A grant aims at this many times the units the recent rate would spend in the rest of its term.
 */
const HEADROOM = 1.5;
/** Weight of the latest interval in the rate estimate. */
const RATE_WEIGHT = 0.5;
/**
 * The rate is measured over at least this long: two grants asked a moment apart (one spent at
 * once, a term's end) would otherwise read a burst as a rate, and take half the room.
 */
const MIN_RATE_INTERVAL_MS = 100;

/**
 * One consumer's pace on one holder (an instance, a worker).
 *
 * @example
 * const pace = new GrantPace(); pace.spent(1); const units = cost + pace.beyond(now, 1_000 - now % 1_000, cost)
 */
export class GrantPace {
  /**
   * Local epoch ms until which requests ask for their cost alone, without waiting for each
   * other: a grant was asked for and the room left gave none, so it is a decision per request
   * until the next term.
   */
  tightUntil = Number.NEGATIVE_INFINITY;
  /** Units asked for by requests waiting for the grant asked for now. */
  waiting = 0;
  /** Units spent per ms, recently. */
  #rate = 0;
  #last = Number.NaN;
  #spent = 0;

  /** Counts `units` spent since the last grant asked for (from a grant, or decided one by one). */
  spent(units: number): void {
    this.#spent += units;
  }

  /**
   * Returns the units beyond `cost` to ask for at `now`, `termLeft` ms before the term ends, for a
   * request of `cost` (the rate measured up to now; `cost` counts in the next interval).
   */
  beyond(now: number, termLeft: number, cost: number): number {
    if (!Number.isNaN(this.#last)) {
      const recent = this.#spent / Math.max(MIN_RATE_INTERVAL_MS, now - this.#last);
      this.#rate = RATE_WEIGHT * recent + (1 - RATE_WEIGHT) * this.#rate;
    }
    this.#last = now;
    this.#spent = cost;
    return this.waiting + Math.floor(this.#rate * termLeft * HEADROOM);
  }
}

// How many units to ask for in a grant: what the recent rate would spend in the rest of the term,
// with headroom, plus what waiting requests need. Used by the Redis leases (`leases.ts`) and by the
// workers' grants from the supervisor (`host-limiter.ts`).

/** A grant asks for this many times what the recent rate would spend in the rest of the term. */
const HEADROOM = 1.5;
/** Weight of the latest interval in the rate estimate. */
const RATE_WEIGHT = 0.5;
/**
 * The shortest interval the rate is measured over. Without it, two grant requests a moment apart
 * (one spent at once, or at a term's end) would read a burst as a rate and take half the room.
 */
const MIN_RATE_INTERVAL_MS = 100;

/**
 * One consumer's spending rate on one grant holder (an instance or a worker).
 *
 * @example
 * const pace = new GrantPace(); pace.spent(1); const units = cost + pace.beyond(now, 1_000 - now % 1_000, cost)
 */
export class GrantPace {
  /**
   * Local epoch ms until which each request asks for its own cost without waiting for others. It
   * is set when a grant request got no extra units, so requests are decided one by one until the
   * next term.
   */
  tightUntil = Number.NEGATIVE_INFINITY;
  /** Units needed by requests waiting for the grant now being asked for. */
  waiting = 0;
  /** Recent units spent per ms (moving average). */
  #rate = 0;
  #last = Number.NaN;
  #spent = 0;

  /** Counts `units` spent since the last grant request, from a grant or decided one by one. */
  spent(units: number): void {
    this.#spent += units;
  }

  /**
   * Returns how many units beyond `cost` to ask for at `now`, `termLeft` ms before the term ends.
   * It updates the rate up to now and counts `cost` in the next interval.
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

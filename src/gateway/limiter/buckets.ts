// One sliding window counted in time buckets, used by `in-process.ts`; its file header states the
// accuracy bound this gives.
import type { WindowName } from '../../core/decision.ts';

/** A window's length and the bucket size its requests' times are rounded up to. */
export interface WindowSpec {
  readonly name: WindowName;
  readonly seconds: number;
  readonly windowMs: number;
  /** A whole number of seconds that divides the window, so every bucket ends on a whole second. */
  readonly bucketMs: number;
  /** Buckets per window (W / b). */
  readonly buckets: number;
  /** Ring slots: W / b + 1, since a window of W that starts mid-bucket spans that many. */
  readonly slots: number;
}

const SECOND_MS = 1_000;

function spec(name: WindowName, seconds: number, bucketSeconds: number): WindowSpec {
  const buckets = seconds / bucketSeconds;
  return {
    name,
    seconds,
    windowMs: seconds * SECOND_MS,
    bucketMs: bucketSeconds * SECOND_MS,
    buckets,
    slots: buckets + 1,
  };
}

/** 60 s in 1 s buckets: a request holds quota for 60 to 61 s. */
export const MINUTE = spec('minute', 60, 1);
/** 24 h in 15 min buckets: a request holds quota for 24 h to 24 h 15 min (96 buckets). */
export const DAY = spec('day', 86_400, 900);

/**
 * Returns `bucket`'s index in a ring of `slots`. It handles negative buckets, since fake clocks
 * start at 0 and windows reach back before it.
 */
function slot(bucket: number, slots: number): number {
  const s = bucket % slots;
  return s < 0 ? s + slots : s;
}

/**
 * Bucket `j` holds requests in (offset + (j-1)b, offset + jb] and is counted while
 * `time < offset + jb + W`, so each request counts for at least W and less than W + b. Pass
 * non-decreasing times and call `advance(now)` before reading.
 *
 * The ring is allocated only when requests fall into a second bucket; until then `#oldest` and
 * `#sum` describe the single bucket. Most windows never need more, which saves memory. The ring is
 * dropped again when the window empties.
 *
 * @example
 * const w = new BucketWindow(MINUTE, now);
 * w.advance(now); if (w.count + cost <= 60) w.add(now, cost);
 */
export class BucketWindow {
  readonly #spec: WindowSpec;
  /** The ring, while counted requests span more than one bucket (else all are in `#oldest`). */
  #counts: Uint32Array | undefined;
  /** Where buckets end, modulo b: a whole second, chosen again whenever the window empties. */
  #offset = 0;
  /** Buckets up to and including this one have left the window; their slots are zero. */
  #dropped: number;
  /** The oldest non-empty bucket, when `#sum > 0`. */
  #oldest = 0;
  #sum = 0;

  constructor(spec: WindowSpec, now: number, copyOf?: BucketWindow) {
    this.#spec = spec;
    if (copyOf) {
      this.#counts = copyOf.#counts?.slice();
      this.#offset = copyOf.#offset;
      this.#dropped = copyOf.#dropped;
      this.#oldest = copyOf.#oldest;
      this.#sum = copyOf.#sum;
    } else {
      this.#dropped = Math.floor(now / spec.bucketMs) - spec.buckets;
    }
  }

  /** Requests counted at the last `advance`. */
  get count(): number {
    return this.#sum;
  }

  /** Epoch ms at which the oldest counted bucket leaves (meaningful when `count > 0`). */
  get oldestLeavesAt(): number {
    return this.#leavesAt(this.#oldest);
  }

  /** Drops the buckets that have left the window by `now`; O(1) unless one held requests. */
  advance(now: number): void {
    const { bucketMs, buckets, slots } = this.#spec;
    const dropped = Math.floor((now - this.#offset) / bucketMs) - buckets;
    if (dropped <= this.#dropped) return;
    this.#dropped = dropped;
    if (this.#sum === 0 || this.#oldest > dropped) return;
    const counts = this.#counts;
    if (!counts) {
      this.#sum = 0; // the one bucket has left
      return;
    }
    // Only buckets from the oldest non-empty one can hold counts; clear at most one ring.
    const last = Math.min(dropped, this.#oldest + slots - 1);
    for (let j = this.#oldest; j <= last; j++) {
      const s = slot(j, slots);
      this.#sum -= counts[s] ?? 0;
      counts[s] = 0;
    }
    if (this.#sum === 0) {
      this.#counts = undefined;
      return;
    }
    let oldest = dropped + 1;
    while (counts[slot(oldest, slots)] === 0) oldest++;
    this.#oldest = oldest;
  }

  /** Counts `units` (a request's cost, default 1) at `now`. Call after `advance(now)`. */
  add(now: number, units = 1): void {
    const { bucketMs, buckets, slots } = this.#spec;
    if (this.#sum === 0) {
      // Empty: align a bucket end to the next whole second, so this request leaves at most W
      // after that second and `reset` stays within one window of now.
      const offset = (Math.ceil(now / SECOND_MS) * SECOND_MS) % bucketMs;
      this.#offset = offset < 0 ? offset + bucketMs : offset;
      this.#dropped = Math.floor((now - this.#offset) / bucketMs) - buckets;
      this.#oldest = Math.ceil((now - this.#offset) / bucketMs);
    }
    const bucket = Math.ceil((now - this.#offset) / bucketMs);
    if (!this.#counts) {
      if (bucket === this.#oldest) {
        this.#sum += units;
        return;
      }
      this.#counts = new Uint32Array(slots);
      this.#counts[slot(this.#oldest, slots)] = this.#sum;
    }
    const s = slot(bucket, slots);
    this.#counts[s] = (this.#counts[s] ?? 0) + units;
    this.#sum += units;
  }

  /**
   * Takes back up to `units` counted by `add(at, …)` if their bucket is still in the window; used
   * when a grant's unused units are returned (`host-limiter.ts`). Call after `advance(now)`.
   */
  remove(at: number, units: number): void {
    if (this.#sum === 0) return;
    const { bucketMs, slots } = this.#spec;
    const bucket = Math.ceil((at - this.#offset) / bucketMs);
    if (bucket <= this.#dropped || bucket < this.#oldest) return;
    const counts = this.#counts;
    if (!counts) {
      if (bucket === this.#oldest) this.#sum -= Math.min(units, this.#sum);
      return;
    }
    const s = slot(bucket, slots);
    const taken = Math.min(units, counts[s] ?? 0);
    counts[s] = (counts[s] ?? 0) - taken;
    this.#sum -= taken;
    if (this.#sum === 0) {
      this.#counts = undefined;
      return;
    }
    while (counts[slot(this.#oldest, slots)] === 0) this.#oldest++;
  }

  /**
   * Returns the epoch ms from which the count is below `quota` if no other traffic arrives, or
   * `-Infinity` if it already is. A request of cost c fits a window of quota Q from
   * `admitAt(Q - c + 1)` on.
   */
  admitAt(quota: number): number {
    if (this.#sum < quota) return Number.NEGATIVE_INFINITY;
    // Single bucket: it has to leave, as the loop below would find.
    if (!this.#counts) return this.#leavesAt(this.#sum > 0 ? this.#oldest : this.#oldest - 1);
    const slots = this.#spec.slots;
    let left = this.#sum;
    let bucket = this.#oldest;
    while (left >= quota && left > 0) {
      left -= this.#counts[slot(bucket, slots)] ?? 0;
      bucket++;
    }
    return this.#leavesAt(bucket - 1);
  }

  #leavesAt(bucket: number): number {
    return this.#offset + bucket * this.#spec.bucketMs + this.#spec.windowMs;
  }
}

// The cap on a consumer's requests in flight within one process; over the cap, the gateway answers
// 429 (step 3c).
import { ApiError } from '../core/api-error.ts';
import type { Decision, WindowState } from '../core/decision.ts';
import type { Limits } from '../keys/plans.ts';
import { DAY, MINUTE } from './limiter/buckets.ts';
import { MONTH_NAME, monthOf } from './limiter/month.ts';

/** A request refused for concurrency can retry as soon as one of the others is done. */
const CONCURRENCY_RETRY_AFTER = '1';

/**
 * Counts each consumer's requests in flight and caps them, so one client cannot take every store
 * connection. Call `enter()` before the first await and `leave()` in a `finally`; `remember()`
 * keeps the latest admitted decision so a refusal at the cap can show its rate-limit headers.
 *
 * @example
 * const inFlight = new InFlight(128)
 * if (!inFlight.enter('con_acme')) refuse(inFlight.latest('con_acme'))
 * try {
 *   inFlight.remember('con_acme', await decide())
 *   await next()
 * } finally {
 *   inFlight.leave('con_acme')
 * }
 */
export class InFlight<D> {
  readonly max: number;
  #busy = new Map<string, { count: number; last: D | undefined }>();

  constructor(max: number) {
    this.max = max;
  }

  /**
   * Takes one of the consumer's slots, or returns false if all are taken. It is synchronous so no
   * other request can take the slot between the check and the increment.
   */
  enter(consumerId: string): boolean {
    const entry = this.#busy.get(consumerId);
    if (!entry) {
      this.#busy.set(consumerId, { count: 1, last: undefined });
      return true;
    }
    if (entry.count >= this.max) return false;
    entry.count++;
    return true;
  }

  /** Stores the decision that admitted this consumer's request, if it holds a slot. */
  remember(consumerId: string, decision: D): void {
    const entry = this.#busy.get(consumerId);
    if (entry) entry.last = decision;
  }

  /** Returns the consumer's latest stored decision while it has requests in flight. */
  latest(consumerId: string): D | undefined {
    return this.#busy.get(consumerId)?.last;
  }

  leave(consumerId: string): void {
    const entry = this.#busy.get(consumerId);
    if (!entry) return;
    if (--entry.count === 0) this.#busy.delete(consumerId);
  }
}

/** Returns the 429 for a consumer at its cap of requests in flight. */
export function tooManyInFlight(max: number): ApiError {
  return new ApiError(
    'too_many_concurrent_requests',
    `This consumer's keys already have ${max} requests in flight; retry when one is done.`,
    { 'Retry-After': CONCURRENCY_RETRY_AFTER },
  );
}

/**
 * Returns a decision with the full limits, for the headers of a 429 at the cap when no request in
 * flight has been decided yet. Asking the limiter would spend quota. The sliding windows reset at
 * `now`, since nothing is counted in them; the month resets at its end.
 *
 * @example
 * // { name: 'minute', remaining: 60, ... }
 * untouched({ perMinute: 60, perDay: 1000 }, 1700000000).windows[0]
 */
export function untouched({ perMinute, perDay, perMonth }: Limits, now: number): Decision {
  const windows: WindowState[] = [
    { name: MINUTE.name, seconds: MINUTE.seconds, limit: perMinute, remaining: perMinute, reset: now },
    { name: DAY.name, seconds: DAY.seconds, limit: perDay, remaining: perDay, reset: now },
  ];
  if (perMonth !== undefined) {
    const { start, end } = monthOf(now * 1_000);
    const seconds = (end - start) / 1_000;
    windows.push({ name: MONTH_NAME, seconds, limit: perMonth, remaining: perMonth, reset: end / 1_000 });
  }
  return { outcome: 'admitted', now, retryAfter: 0, windows };
}

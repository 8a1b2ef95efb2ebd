// The cap on a consumer's requests in flight (one process): the gateway takes a slot before it
// awaits anything and gives it back when the answer is made, or when a step throws; over the cap
// is a 429.
import { ApiError } from '../core/api-error.ts';
import type { Decision, WindowState } from '../core/decision.ts';
import { DEFAULT_MAX_IN_FLIGHT, type Limits } from '../keys/plans.ts';
import { DAY, MINUTE } from './limiter/buckets.ts';
import { MONTH_NAME, monthOf } from './limiter/month.ts';

/** A request refused for concurrency is worth retrying as soon as one of the others is done. */
const CONCURRENCY_RETRY_AFTER = '1';

/**
 * Requests each consumer has in flight, capped so one client cannot take every store connection. A
 * request takes its slot before anything is awaited, so of many sent at once exactly the cap get
 * one; the rest get 429 `too_many_concurrent_requests` before the limiter decides, spending no
 * quota. A slot is given back when the answer is made, or when a step throws. A refusal's
 * rate-limit headers come from the consumer's latest admitted decision, kept while it has requests
 * in flight.
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

  constructor(max: number = DEFAULT_MAX_IN_FLIGHT) {
    this.max = max;
  }

  /**
   * Takes one of the consumer's slots; false, taking none, when all are taken. Synchronous on
   * purpose: no other request can take the slot between the check and the take.
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

  /** Remembers the decision that admitted a request of the consumer that has taken a slot. */
  remember(consumerId: string, decision: D): void {
    const entry = this.#busy.get(consumerId);
    if (entry) entry.last = decision;
  }

  /** Returns the latest admitting decision of the consumer while it has requests in flight. */
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
 * Returns the headers' decision for a consumer refused for concurrency before any of its requests
 * in flight was decided: its quotas, with nothing yet known to be consumed. Why: every answer
 * carries the rate-limit headers, but this refusal must not ask the limiter (that would spend
 * quota), so the headers show the full limits: the sliding windows reset `now`, as nothing is
 * counted in them, and the month at its end.
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

import { ApiError } from '../errors.ts';
import { DEFAULT_MAX_IN_FLIGHT } from './plans.ts';

/** A request refused for concurrency is worth retrying as soon as one of the others is done. */
const CONCURRENCY_RETRY_AFTER = '1';

/**
 * Requests each API key has in flight, capped so a single client cannot hold every worker of
 * the store. The gateway asks before the rate limiter decides, so a request refused here
 * (429 `too_many_concurrent_requests`, `Retry-After: 1`) consumes no quota, like every 429.
 * It also keeps the decision that admitted the key's latest request: that refusal's
 * rate-limit headers come from it, since nothing was consumed since. One entry per busy key.
 *
 * @example
 * const inFlight = new InFlight(128)
 * if (inFlight.full('acme')) refuse(inFlight.lastDecision('acme'))
 * inFlight.enter('acme', decision); try { await next() } finally { inFlight.leave('acme') }
 */
export class InFlight<D> {
  readonly max: number;
  #busy = new Map<string, { count: number; last: D }>();

  constructor(max: number = DEFAULT_MAX_IN_FLIGHT) {
    this.max = max;
  }

  /** The decision that admitted the latest request of `name` still in flight, if at the cap. */
  full(name: string): D | undefined {
    const entry = this.#busy.get(name);
    return entry !== undefined && entry.count >= this.max ? entry.last : undefined;
  }

  enter(name: string, decision: D): void {
    const entry = this.#busy.get(name);
    if (entry) {
      entry.count++;
      entry.last = decision;
    } else {
      this.#busy.set(name, { count: 1, last: decision });
    }
  }

  leave(name: string): void {
    const entry = this.#busy.get(name);
    if (!entry) return;
    if (--entry.count === 0) this.#busy.delete(name);
  }
}

/** The 429 for a key at its cap of requests in flight. */
export function tooManyInFlight(max: number): ApiError {
  return new ApiError(
    'too_many_concurrent_requests',
    `This key already has ${max} requests in flight; retry when one is done.`,
    { 'Retry-After': CONCURRENCY_RETRY_AFTER },
  );
}

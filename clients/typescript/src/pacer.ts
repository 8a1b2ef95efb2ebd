import { sleep } from './wait.ts';

/**
 * Clients sharing a key that all wait for the same reset come back spread over this much after
 * it, rather than together in its first millisecond: the window may free only its oldest second's
 * requests at the reset, and the next second's a second later.
 */
export const RESET_SPREAD_MS = 1_000;

/** A key's quota as one answer states it. */
interface Quota {
  remaining: number;
  /** Local time (ms) at which the binding window next admits one request more. */
  resetAt: number;
}

/**
 * What one client knows of its key's quota, shared by all of its calls. Every answer's
 * `X-RateLimit-Remaining` and `X-RateLimit-Reset` update it; a call takes one request of it
 * before it sends. With none left, a call waits for the answers still in flight, or, with none
 * in flight, holds until the reset, and then one request goes first to learn how much the window
 * freed. So a client alone on its key is never refused, however many calls it makes at once.
 *
 * Until the window moves, the estimate only goes down: answers can arrive out of order, and the
 * requests still in flight may not be counted in an answer yet, so each is taken off it.
 */
export class Pacer {
  /** Requests this client may still send before the window moves. 1 at first: the first call goes alone. */
  #remaining = 1;
  /** When the binding window next admits more (local ms); 0 while unknown. */
  #resetAt = 0;
  #inFlight = 0;
  #settled = deferred();

  /**
   * Resolves when a request may be sent, and counts it in flight until `settle`. `onHold` is told
   * before each hold for the reset, with its length, and may throw to give up.
   */
  async acquire(signal: AbortSignal | undefined, onHold: (waitMs: number) => void): Promise<void> {
    for (;;) {
      signal?.throwIfAborted();
      if (this.#remaining > 0) {
        this.#remaining--;
        this.#inFlight++;
        return;
      }
      if (this.#inFlight > 0) {
        await sleep(undefined, signal, this.#settled.promise);
        continue;
      }
      const untilReset = this.#resetAt - Date.now();
      if (untilReset <= 0) {
        this.#remaining = 1;
        continue;
      }
      const waitMs = untilReset + Math.random() * RESET_SPREAD_MS;
      onHold(waitMs);
      await sleep(waitMs, signal, this.#settled.promise);
    }
  }

  /** Takes a request out of flight, with its answer's headers (none after a connection error). */
  settle(headers: Headers | undefined, receivedAt = Date.now()): void {
    this.#inFlight--;
    const quota = headers && quotaOf(headers, receivedAt);
    if (quota) {
      const estimate = Math.max(0, quota.remaining - this.#inFlight);
      // Past the last known reset the window has moved and this answer is the news; before it,
      // a higher count is an older answer overtaken by a newer one.
      if (receivedAt >= this.#resetAt || estimate < this.#remaining) {
        this.#remaining = estimate;
        this.#resetAt = quota.resetAt;
      } else if (estimate === this.#remaining) {
        this.#resetAt = Math.max(this.#resetAt, quota.resetAt);
      }
    }
    const settled = this.#settled;
    this.#settled = deferred();
    settled.resolve();
  }
}

/**
 * The quota an answer states. The reset is taken relative to the answer's `Date` when it has
 * one, so a client whose clock is off from the server's still waits the right length; `Date` is
 * rounded down and the reset up, so the wait is never short.
 */
function quotaOf(headers: Headers, receivedAt: number): Quota | undefined {
  const remaining = wholeNumber(headers.get('x-ratelimit-remaining'));
  const reset = wholeNumber(headers.get('x-ratelimit-reset'));
  if (remaining === undefined || reset === undefined) return undefined;
  const date = Date.parse(headers.get('date') ?? '');
  const resetAt = Number.isNaN(date) ? reset * 1000 : receivedAt + (reset * 1000 - date);
  return { remaining, resetAt };
}

function wholeNumber(value: string | null): number | undefined {
  return value !== null && /^\d+$/.test(value) ? Number(value) : undefined;
}

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve = () => {};
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

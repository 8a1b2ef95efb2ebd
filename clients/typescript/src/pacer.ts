import { sleep } from './wait.ts';

/**
 * Clients sharing a key that all wait for the same reset come back spread over this much after
 * it, rather than together in its first millisecond: the window may free only its oldest second's
 * requests at the reset, and the next second's a second later.
 */
export const RESET_SPREAD_MS = 1_000;

/**
 * The service counts a request in whole-second buckets, for up to this much longer than its
 * window: requests spaced one window over a share apart, plus this, never meet in one window.
 */
export const BUCKET_SLACK_MS = 1_000;

/** A key's quota as one answer states it. */
interface Quota {
  remaining: number;
  /** Local time (ms) at which the binding window next admits one request more. */
  resetAt: number;
  /** The binding window's quota and length in ms, when the answer states its policy. */
  window?: { limit: number; ms: number };
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
 *
 * Other clients on the key show in the answers: the window counts more than this client sent in
 * it. Then this client takes only its share (`#share`): its requests are spaced over the window,
 * and it holds for the reset when what remains, split among the clients seen, is less than one
 * request each.
 */
export class Pacer {
  /** Requests this client may still send before the window moves. 1 at first: the first call goes alone. */
  #remaining = 1;
  /** When the binding window next admits more (local ms); 0 while unknown. */
  #resetAt = 0;
  #inFlight = 0;
  #settled = deferred();
  /** When (local ms) this client sent the requests its binding window may still count, oldest first. */
  #sent: number[] = [];
  /** Clients the last answer shows on the key, this one included, counted at this client's rate. */
  #clients = 1;
  /** The least time between two requests of this client: 0 while it is alone on the key. */
  #spacingMs = 0;

  /**
   * Resolves when a request may be sent, and counts it in flight until `settle`. `onHold` is told
   * before each hold for the reset, with its length, and may throw to give up.
   */
  async acquire(signal: AbortSignal | undefined, onHold: (waitMs: number) => void): Promise<void> {
    for (;;) {
      signal?.throwIfAborted();
      // Alone, all that remains is this client's; shared, its part of it (at least one request).
      const mine = this.#remaining >= this.#clients || (this.#clients === 1 && this.#remaining > 0);
      const untilTurn = (this.#sent.at(-1) ?? 0) + this.#spacingMs - Date.now();
      if (mine && untilTurn > 0) {
        onHold(untilTurn);
        await sleep(untilTurn, signal, this.#settled.promise);
        continue;
      }
      if (mine) {
        this.#remaining--;
        this.#inFlight++;
        this.#sent.push(Date.now());
        return;
      }
      if (this.#inFlight > 0 && this.#remaining <= 0) {
        await sleep(undefined, signal, this.#settled.promise);
        continue;
      }
      const untilReset = this.#resetAt - Date.now();
      if (untilReset <= 0) {
        // One request goes first, whatever the share: its answer tells what the window freed.
        this.#remaining = 1;
        this.#clients = 1;
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
    // Refused, or lost before an answer: the service may not count it; the newest goes.
    if (!headers || headers.has('retry-after')) this.#sent.pop();
    const quota = headers && quotaOf(headers, receivedAt);
    if (quota?.window) this.#share(quota.remaining, quota.window, receivedAt);
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

  /**
   * Leaves room for the others an answer shows. The binding window counts `limit - remaining`
   * requests; those this client did not send in the last window are others'. Counting them as
   * clients at this client's rate, the key has `#clients` of them, and this client's part of a
   * window is the larger of its fair share (the quota over the clients, whole) and what the
   * others leave, less one request of room for each of them. Its requests are spaced one window
   * over that part apart, so each client has at most its part in any window and together they
   * stay within the quota, instead of meeting 429s at its end. Alone, nothing is spaced.
   */
  #share(remaining: number, window: { limit: number; ms: number }, receivedAt: number): void {
    while ((this.#sent[0] ?? Number.POSITIVE_INFINITY) <= receivedAt - window.ms) this.#sent.shift();
    const others = Math.max(0, window.limit - remaining - this.#sent.length);
    if (others === 0) {
      this.#clients = 1;
      this.#spacingMs = 0;
      return;
    }
    this.#clients = 1 + others / Math.max(1, this.#sent.length);
    const fair = window.limit / this.#clients;
    const left = window.limit - others - Math.ceil(this.#clients - 1);
    const part = Math.max(fair < 1 ? fair : Math.floor(fair), left);
    this.#spacingMs = window.ms / part + BUCKET_SLACK_MS;
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
  const limit = wholeNumber(headers.get('x-ratelimit-limit'));
  const ms = limit === undefined ? undefined : windowMsOf(headers.get('ratelimit-policy'), limit);
  return limit === undefined || ms === undefined
    ? { remaining, resetAt }
    : { remaining, resetAt, window: { limit, ms } };
}

/**
 * The length in ms of the shortest window of quota `limit` in a `RateLimit-Policy` header
 * (`"minute";q=60;w=60, "day";q=1000;w=86400`): the binding window's, as `X-RateLimit-Limit`
 * is its quota.
 */
function windowMsOf(policy: string | null, limit: number): number | undefined {
  let shortest: number | undefined;
  for (const item of (policy ?? '').split(',')) {
    const q = wholeNumber(/;\s*q=(\d+)/.exec(item)?.[1] ?? null);
    const w = wholeNumber(/;\s*w=(\d+)/.exec(item)?.[1] ?? null);
    if (q === limit && w !== undefined && w > 0) shortest = Math.min(shortest ?? Number.POSITIVE_INFINITY, w * 1000);
  }
  return shortest;
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

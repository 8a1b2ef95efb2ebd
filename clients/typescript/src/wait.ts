/** The first retry's backoff is drawn from 0 to this; each further retry doubles the range. */
export const BACKOFF_BASE_MS = 500;
/** The range of a backoff never grows beyond this. */
export const BACKOFF_CAP_MS = 20_000;

/**
 * The backoff before retry `n` (1 for the first): "full jitter", a uniform draw from 0 to
 * min(cap, base × 2^(n-1)), so clients that failed together come back apart instead of in step.
 *
 * @example
 * backoffMs(1) // 0 to 500
 * backoffMs(4) // 0 to 4,000
 */
export function backoffMs(n: number, random: () => number = Math.random): number {
  return random() * Math.min(BACKOFF_CAP_MS, BACKOFF_BASE_MS * 2 ** (n - 1));
}

/**
 * `Retry-After` in milliseconds: whole seconds, or an HTTP date; undefined when absent or unreadable.
 *
 * @example
 * retryAfterMs(new Headers({ 'retry-after': '61' })) // 61_000
 */
export function retryAfterMs(headers: Headers, now = Date.now()): number | undefined {
  const value = headers.get('retry-after');
  if (value === null) return undefined;
  if (/^\d+$/.test(value)) return Number(value) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/**
 * Resolves after `ms` (never, when `ms` is undefined), or as soon as `wake` settles; rejects with
 * the signal's reason when it aborts first.
 */
export function sleep(ms: number | undefined, signal?: AbortSignal, wake?: Promise<unknown>): Promise<void> {
  signal?.throwIfAborted();
  return new Promise((resolve, reject) => {
    const finish = (settle: () => void) => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      settle();
    };
    const onAbort = () => finish(() => reject(signal?.reason));
    // Clamped, as setTimeout fires at once for a delay past 2^31-1 ms (24.8 days).
    const timer =
      ms === undefined ? undefined : setTimeout(() => finish(resolve), Math.min(Math.max(0, ms), 2 ** 31 - 1));
    signal?.addEventListener('abort', onAbort, { once: true });
    void wake?.then(() => finish(resolve));
  });
}

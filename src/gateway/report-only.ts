// Report-only limits (`"enforce": false`): `wouldRefuseReporter()` counts each request a limit
// would have refused, and logs it at most once a minute per consumer and window.
import { LRUCache } from 'lru-cache';
import { type Clock, systemClock } from '../core/clock.ts';
import type { WindowName } from '../core/decision.ts';
import type { Logger } from '../log.ts';

/** Each consumer and window pair is logged at most once per interval. */
const LOG_INTERVAL_MS = 60_000;
/** Consumer and window pairs remembered at once: more than a keys file holds. */
const MAX_LOGGED = 10_000;

export interface WouldRefuseOptions {
  log: Logger;
  clock?: Clock;
  /** Counts each request (`petstore_ratelimit_would_refuse_total`), when metrics are on. */
  count?: (consumer: string, window: WindowName) => void;
}

/**
 * Returns the gateway's `wouldRefuse` callback. It counts every would-be refusal by consumer and
 * window, and logs at most once a minute per pair, so a plan tried on live traffic shows its effect
 * without flooding the log.
 *
 * @example
 * const wouldRefuse = wouldRefuseReporter({ log, count: (c, w) => metrics.wouldRefuse(c, w) })
 * wouldRefuse('acme', 'minute')
 */
export function wouldRefuseReporter({
  log,
  clock = systemClock,
  count,
}: WouldRefuseOptions): (consumer: string, window: WindowName) => void {
  const logged = new LRUCache<string, true>({
    max: MAX_LOGGED,
    ttl: LOG_INTERVAL_MS,
    // The default caches the time and refreshes it on a timer, which goes stale under a fake clock.
    ttlResolution: 0,
    // +1: lru-cache reads a start time of 0 as "no TTL".
    perf: { now: () => clock.now() + 1 },
  });
  return function wouldRefuse(consumer, window) {
    count?.(consumer, window);
    const key = `${consumer}\0${window}`;
    if (logged.has(key)) return;
    logged.set(key, true);
    log.warn('report-only limit exceeded; the request was served', { consumer, window });
  };
}

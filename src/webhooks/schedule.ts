// When a failed delivery is retried: backoff with jitter, about 5 s, 30 s, 2 min, 10 min, 1 h,
// then every 6 h until 3 days have passed; after the last attempt, the event is failed.

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
/** How long an event is retried for, at most. */
const GIVE_UP_AFTER_MS = 72 * HOUR;

function defaultSchedule(): number[] {
  const delays = [5_000, 30_000, 2 * MINUTE, 10 * MINUTE, HOUR];
  let total = delays.reduce((a, b) => a + b, 0);
  while (total + 6 * HOUR <= GIVE_UP_AFTER_MS) {
    delays.push(6 * HOUR);
    total += 6 * HOUR;
  }
  return delays;
}

/**
 * Delays in ms before the 2nd, 3rd, … attempt: 5 s, 30 s, 2 min, 10 min, 1 h, then 6 h eleven
 * times.
 */
export const RETRY_DELAYS_MS: readonly number[] = defaultSchedule();

/**
 * Each delay is multiplied by a random factor in [1 - JITTER, 1 + JITTER], so receivers that come
 * back are not hit by every instance at once.
 */
const JITTER = 0.2;

/**
 * Epoch ms of the next attempt after `attempts` failed ones, or undefined when the schedule is
 * spent (the event is then failed).
 *
 * @example
 * nextAttemptAt(1, 0, RETRY_DELAYS_MS, () => 0.5) // 5000
 */
export function nextAttemptAt(
  attempts: number,
  now: number,
  delays: readonly number[] = RETRY_DELAYS_MS,
  random: () => number = Math.random,
): number | undefined {
  const delay = delays[attempts - 1];
  if (delay === undefined) return undefined;
  return now + Math.round(delay * (1 - JITTER + 2 * JITTER * random()));
}

/**
 * Parses `PETSTORE_WEBHOOK_RETRY_SECONDS`, a comma-separated list of seconds that lets tests see
 * backoff without waiting minutes. Throws a `TypeError` naming the value when it is invalid.
 *
 * @example
 * parseRetrySeconds('1,2,4') // [1000, 2000, 4000]
 */
export function parseRetrySeconds(text: string): number[] {
  const parts = text.split(',').map((s) => s.trim());
  const delays = parts.map(Number);
  if (parts.length === 0 || delays.some((d, i) => parts[i] === '' || !Number.isFinite(d) || d <= 0 || d > 86_400)) {
    throw new TypeError(
      `PETSTORE_WEBHOOK_RETRY_SECONDS: must be a comma-separated list of seconds from 0.001 to 86400, got ${JSON.stringify(text)}`,
    );
  }
  return delays.map((d) => Math.round(d * 1_000));
}

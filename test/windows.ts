/** What the limiter tests and the fleet simulation share: a replayable random walk, and an exact sliding window. */

/**
 * A tiny deterministic PRNG (mulberry32), so a failing walk can be replayed from its seed.
 *
 * @example
 * const random = mulberry32(7); random() // 0 <= x < 1, the same sequence every run
 */
export function mulberry32(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/**
 * The most units admitted in any interval (t - windowMs, t], over a log of [epoch ms, units]
 * sorted by time: what an exact sliding window of that length would hold at its fullest.
 *
 * @example
 * busiest([[0, 1], [59_999, 1], [60_000, 1]], 60_000) // 2
 */
export function busiest(log: readonly (readonly [number, number])[], windowMs: number): number {
  let most = 0;
  let sum = 0;
  let first = 0;
  for (const [time, units] of log) {
    sum += units;
    while ((log[first] as readonly [number, number])[0] <= time - windowMs) {
      sum -= (log[first++] as readonly [number, number])[1];
    }
    most = Math.max(most, sum);
  }
  return most;
}

/**
 * One seeded walk of requests given to two limiters that must decide alike: the in-process
 * `SlidingWindowLimiter` and the Redis script (per request, or through leases). Any difference
 * fails at its step, with both decisions; what each test checks besides is in `each`.
 */
import type { Decision } from '../src/core/decision.ts';
import type { Subject } from '../src/gateway/gateway.ts';
import type { fakeClock } from './testing.ts';
import { mulberry32 } from './windows.ts';

type Outcome = Decision['outcome'];

export interface Replay {
  readonly steps: number;
  readonly seed: number;
  readonly clock: ReturnType<typeof fakeClock>;
  readonly subjects: readonly Subject[];
  /** Costs drawn from for each request; none: every request decided at its default cost, no draw made. */
  readonly costs?: readonly number[];
  /** How long to move the clock before a step, drawn with `random`: it may be negative (a step back). */
  readonly pause: (random: () => number) => number;
  readonly expected: (subject: Subject, cost: number | undefined) => Decision;
  /**
   * The decision under test, made first; undefined when it was not made (a reply lost on its
   * way back): that request is not given to `expected` either, as if it had never been sent.
   */
  readonly actual: (subject: Subject, cost: number | undefined) => Promise<Decision | undefined>;
  /** After a step whose decisions agreed (`decision` is the in-process one, `actual` the other). */
  readonly each?: (step: {
    decision: Decision;
    actual: Decision;
    cost: number | undefined;
    random: () => number;
  }) => unknown;
}

/**
 * Walks `steps` requests and gives how many ended in each outcome.
 *
 * @example
 * const outcomes = await replay({ steps: 4_000, seed: 7, clock, subjects, pause: (r) => r() * 300,
 *   expected: (s) => local.decide(s), actual: (s) => shared.decide(s) })
 * expect(outcomes.key_banned).toBeGreaterThan(100)
 */
export async function replay(walk: Replay): Promise<Record<Outcome, number>> {
  const { clock, subjects, costs } = walk;
  const random = mulberry32(walk.seed);
  const outcomes: Record<Outcome, number> = { admitted: 0, rate_limited: 0, key_banned: 0 };
  for (let i = 0; i < walk.steps; i++) {
    clock.advance(walk.pause(random));
    const subject = subjects[Math.floor(random() * subjects.length)] as Subject;
    const cost = costs ? (costs[Math.floor(random() * costs.length)] as number) : undefined;
    const actual = await walk.actual(subject, cost);
    if (actual === undefined) continue;
    const expected = walk.expected(subject, cost);
    if (JSON.stringify(actual) !== JSON.stringify(expected)) {
      const at = `${subject.id}${cost === undefined ? '' : `, cost ${cost}`} at ${clock.now()}`;
      throw new Error(`step ${i} (${at}): ${JSON.stringify({ expected, actual })}`);
    }
    outcomes[expected.outcome]++;
    await walk.each?.({ decision: expected, actual, cost, random });
  }
  return outcomes;
}

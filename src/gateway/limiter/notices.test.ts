import { describe, expect, test } from 'bun:test';
import { testRedis } from '../../../test/redis.ts';
import type { Decision, Notice } from '../../core/decision.ts';
import type { Limits } from '../../keys/plans.ts';
import { SlidingWindowLimiter } from './in-process.ts';
import type { RateLimiter, Subject } from './limiter.ts';
import { RedisLimiter } from './redis.ts';

/** 2026-11-22T12:00:00Z: UTC day 20779, month 2026 * 12 + 10. */
const T0 = Date.UTC(2026, 10, 22, 12, 0, 0);
const DAY = 20_779;
const MONTH = 2026 * 12 + 10;

const redis = testRedis();

function clock(start = T0) {
  let t = start;
  return {
    now: () => t,
    advance: (ms: number) => {
      t += ms;
    },
  };
}

function subject(limits: Limits, thresholds?: number[], ban = { threshold: 3, seconds: 60 }): Subject {
  return {
    id: `key:n-${crypto.randomUUID().slice(0, 8)}`,
    keyless: false,
    plan: 'pro',
    label: 'n',
    limits,
    ban,
    ...(thresholds ? { thresholds } : {}),
  };
}

type Make = (c: ReturnType<typeof clock>) => RateLimiter;
const limiters: [string, Make][] = [
  ['in process', (c) => new SlidingWindowLimiter({ clock: c })],
  ['Redis script', (c) => new RedisLimiter({ client: redis.client(), clock: c, prefix: redis.prefix() })],
];

async function run(limiter: RateLimiter, s: Subject, n: number, cost = 1): Promise<Decision[]> {
  const out: Decision[] = [];
  for (let i = 0; i < n; i++) out.push((await limiter.decide(s, cost)) as Decision);
  return out;
}

describe.each(limiters)('notices (%s)', (_name, make) => {
  test('80% and 100% of a day quota: one notice each on the request that crosses it; the first 429 once', async () => {
    const c = clock();
    const limiter = make(c);
    const s = subject({ perMinute: 100, perDay: 10 }, [80, 100], { threshold: 100, seconds: 60 });
    const decisions = await run(limiter, s, 13);
    const noticed = decisions
      .map((d, i) => [i + 1, d.outcome, d.notices ?? []])
      .filter(([, , n]) => (n as []).length > 0);
    expect(noticed).toEqual([
      [8, 'admitted', [{ type: 'quota.threshold', window: 'day', threshold: 80, period: DAY }]],
      [10, 'admitted', [{ type: 'quota.threshold', window: 'day', threshold: 100, period: DAY }]],
      [11, 'rate_limited', [{ type: 'quota.exhausted', window: 'day', period: DAY }]],
    ]);
  });

  test('a request whose cost jumps over both thresholds notices both, in order; reads notice nothing', async () => {
    const c = clock();
    const limiter = make(c);
    const s = subject({ perMinute: 100, perDay: 10, perMonth: 1_000 }, [50, 90]);
    expect(((await limiter.decide(s, 0)) as Decision).notices).toBeUndefined();
    const [d] = await run(limiter, s, 1, 10);
    expect(d?.notices).toEqual([
      { type: 'quota.threshold', window: 'day', threshold: 50, period: DAY },
      { type: 'quota.threshold', window: 'day', threshold: 90, period: DAY },
    ]);
  });

  test('the month window notices its own thresholds; a subject without thresholds notices nothing', async () => {
    const c = clock();
    const limiter = make(c);
    const s = subject({ perMinute: 100, perDay: 100, perMonth: 10 }, [80]);
    const decisions = await run(limiter, s, 12);
    expect(decisions.flatMap((d) => d.notices ?? [])).toEqual([
      { type: 'quota.threshold', window: 'month', threshold: 80, period: MONTH },
      { type: 'quota.exhausted', window: 'month', period: MONTH },
    ]);
    const silent = subject({ perMinute: 100, perDay: 5 });
    expect((await run(limiter, silent, 8)).some((d) => d.notices !== undefined)).toBe(false);
  });

  test('a ban start is noticed with its end; the 80% crossing after it still comes, once', async () => {
    const c = clock();
    const limiter = make(c);
    const s = subject({ perMinute: 2, perDay: 10 }, [80], { threshold: 2, seconds: 60 });
    await run(limiter, s, 2);
    const [, second] = await run(limiter, s, 2);
    expect(second?.outcome).toBe('key_banned');
    expect(second?.notices).toEqual([{ type: 'key.banned', until: T0 + 60_000 }]);
    // 8 of 10 in the day (the threshold of 80) over the next minutes, then the window slides until
    // they leave.
    c.advance(61_000);
    await run(limiter, s, 2);
    c.advance(61_000);
    await run(limiter, s, 2);
    c.advance(61_000);
    const [, crossing] = await run(limiter, s, 2);
    expect((await run(limiter, s, 1))[0]?.notices).toBeUndefined();
    expect(crossing?.notices).toEqual([{ type: 'quota.threshold', window: 'day', threshold: 80, period: DAY }]);
  });

  test('a notice is given once more to the first decision from 30 s to an hour after it, then never', async () => {
    const c = clock();
    const limiter = make(c);
    const s = subject({ perMinute: 100, perDay: 10 }, [80, 100], { threshold: 100, seconds: 60 });
    const at80: Notice = { type: 'quota.threshold', window: 'day', threshold: 80, period: DAY };
    const at100: Notice = { type: 'quota.threshold', window: 'day', threshold: 100, period: DAY };
    expect((await run(limiter, s, 8)).at(-1)?.notices).toEqual([at80]);
    c.advance(29_999);
    expect((await run(limiter, s, 1))[0]?.notices).toBeUndefined();
    c.advance(1);
    // What this decision crossed comes first, then what is given once more.
    expect((await run(limiter, s, 1))[0]?.notices).toEqual([at100, at80]);
    c.advance(60_000);
    // A read is a decision too.
    expect(((await limiter.decide(s, 0)) as Decision).notices).toEqual([at100]);
    c.advance(1_000);
    expect(((await limiter.decide(s, 0)) as Decision).notices).toBeUndefined();
    const late = subject({ perMinute: 100, perDay: 10 }, [80], { threshold: 100, seconds: 60 });
    expect((await run(limiter, late, 8)).at(-1)?.notices).toEqual([at80]);
    c.advance(3_600_000);
    expect(((await limiter.decide(late, 0)) as Decision).notices).toBeUndefined();
  });

  test('a notice whose day is over is not given again', async () => {
    const c = clock(Date.UTC(2026, 10, 22, 23, 59, 40));
    const limiter = make(c);
    const s = subject({ perMinute: 100, perDay: 10 }, [80], { threshold: 100, seconds: 60 });
    expect((await run(limiter, s, 8)).at(-1)?.notices).toEqual([
      { type: 'quota.threshold', window: 'day', threshold: 80, period: DAY },
    ]);
    c.advance(40_000);
    expect(((await limiter.decide(s, 0)) as Decision).notices).toBeUndefined();
  });

  test('a ban is given once more to a request refused during it', async () => {
    const c = clock();
    const limiter = make(c);
    const s = subject({ perMinute: 2, perDay: 100 }, [80], { threshold: 2, seconds: 120 });
    const [, , , banning] = await run(limiter, s, 4);
    expect(banning?.notices).toEqual([{ type: 'key.banned', until: T0 + 120_000 }]);
    c.advance(30_000);
    const [during] = await run(limiter, s, 1);
    expect(during?.outcome).toBe('key_banned');
    expect(during?.notices).toEqual([{ type: 'key.banned', until: T0 + 120_000 }]);
  });
});

test('Redis: a notice whose instance died before recording it is given to the next instance 30 s on', async () => {
  const c = clock();
  const prefix = redis.prefix();
  const instance = () => new RedisLimiter({ client: redis.client(), clock: c, prefix });
  const [first, second] = [instance(), instance()];
  const s = subject({ perMinute: 100, perDay: 5 }, [80], { threshold: 100, seconds: 60 });
  // The first instance decides the crossing, then is gone before anything is recorded.
  const crossing = (await run(first, s, 4)).at(-1);
  const notice: Notice = { type: 'quota.threshold', window: 'day', threshold: 80, period: DAY };
  expect(crossing?.notices).toEqual([notice]);
  expect(((await second.decide(s, 0)) as Decision).notices).toBeUndefined();
  c.advance(30_000);
  expect((await run(second, s, 1))[0]?.notices).toEqual([notice]);
  c.advance(30_000);
  expect((await run(second, s, 1))[0]?.notices).toEqual([{ type: 'quota.exhausted', window: 'day', period: DAY }]);
});

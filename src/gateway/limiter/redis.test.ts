import { describe, expect, test } from 'bun:test';
import { testRedis, testRedisUrl } from '../../../test/redis.ts';
import { replay } from '../../../test/replay.ts';
import { fakeClock } from '../../../test/testing.ts';
import type { Decision } from '../../core/decision.ts';
import type { Limits } from '../../keys/plans.ts';
import { createLogger } from '../../log.ts';
import { rateLimitHeaders } from '../rate-limit-headers.ts';
import { SlidingWindowLimiter, STATE_TTL_MS } from './in-process.ts';
import type { LimiterEvent, Subject } from './limiter.ts';
import { openRedisLimiter } from './open-redis.ts';
import { RedisLimiter } from './redis.ts';
import { DECIDE_SHA1 } from './redis-script.ts';

const { client, prefix } = testRedis();

function subject(id: string, limits: Limits, ban = { threshold: 60, seconds: 900 }): Subject {
  return { id, keyless: false, plan: 'free', label: id, limits, ban };
}

describe('RedisLimiter', () => {
  test('decides exactly as SlidingWindowLimiter: same outcomes, headers and ban events', async () => {
    const clock = fakeClock();
    const localEvents: string[] = [];
    const redisEvents: string[] = [];
    const record = (into: string[]) => (e: LimiterEvent) =>
      into.push(e.type === 'ban_start' ? `${e.subject.id} ban until ${e.until}` : `${e.subject.id} ban end`);
    const local = new SlidingWindowLimiter({ clock, onEvent: record(localEvents) });
    const shared = new RedisLimiter({ client: client(), clock, prefix: prefix(), onEvent: record(redisEvents) });
    const subjects = [
      { ...subject('key:tight', { perMinute: 5, perDay: 40 }, { threshold: 4, seconds: 90 }), thresholds: [50, 100] },
      { ...subject('key:daily', { perMinute: 30, perDay: 50 }, { threshold: 1, seconds: 1 }), thresholds: [80] },
      subject('key:free', { perMinute: 60, perDay: 1_000 }),
      subject(
        'addr:198.51.100.7',
        { perMinute: 3, perDay: 10_000 },
        { threshold: Number.POSITIVE_INFINITY, seconds: 900 },
      ),
    ];
    let notices = 0;
    const outcomes = await replay({
      steps: 4_000,
      seed: 7,
      clock,
      subjects,
      // Mostly bursts within a second, sometimes a pause, now and then hours or a step back.
      pause: (random) => {
        const r = random();
        if (r < 0.6) return Math.floor(random() * 300);
        if (r < 0.97) return Math.floor(random() * 20_000);
        if (r < 0.985) return -Math.floor(random() * 5_000);
        return 3_600_000;
      },
      expected: (s) => local.decide(s),
      actual: (s) => shared.decide(s),
      each: ({ decision, actual }) => {
        expect(rateLimitHeaders(actual)).toEqual(rateLimitHeaders(decision));
        notices += decision.notices?.length ?? 0;
      },
    });
    expect(redisEvents).toEqual(localEvents);
    // Notices (crossings, first refusals, bans, and each given once more) were compared too.
    expect(notices).toBeGreaterThan(100);
    // The sequence exercised every branch.
    expect(outcomes.admitted).toBeGreaterThan(500);
    expect(outcomes.rate_limited).toBeGreaterThan(100);
    expect(outcomes.key_banned).toBeGreaterThan(100);
    expect(localEvents.filter((e) => e.endsWith('ban end')).length).toBeGreaterThan(10);
  }, 60_000);

  test('costs, reads (cost 0) and the calendar month: decides exactly as SlidingWindowLimiter, over New Year', async () => {
    const clock = fakeClock(Date.UTC(2026, 11, 31, 22, 0, 0));
    const local = new SlidingWindowLimiter({ clock });
    const shared = new RedisLimiter({ client: client(), clock, prefix: prefix() });
    const subjects = [
      {
        ...subject('key:monthly', { perMinute: 20, perDay: 200, perMonth: 60 }, { threshold: 5, seconds: 120 }),
        thresholds: [80, 100],
      },
      subject('key:costly', { perMinute: 12, perDay: 10_000, perMonth: 100_000 }),
      subject('key:plain', { perMinute: 10, perDay: 100 }, { threshold: 0, seconds: 900 }),
    ];
    let reads = 0;
    let monthNotices = 0;
    const outcomes = await replay({
      steps: 3_000,
      seed: 11,
      clock,
      subjects,
      costs: [0, 1, 1, 1, 2, 5],
      pause: (random) => {
        const r = random();
        if (r < 0.6) return Math.floor(random() * 300);
        if (r < 0.98) return Math.floor(random() * 20_000);
        return 1_800_000;
      },
      expected: (s, cost) => local.decide(s, cost),
      actual: (s, cost) => shared.decide(s, cost),
      each: ({ decision, cost }) => {
        if (cost === 0) reads++;
        for (const n of decision.notices ?? []) if ('window' in n) monthNotices += n.window === 'month' ? 1 : 0;
      },
    });
    // Month notices were compared, in 2026 and 2027.
    expect(monthNotices).toBeGreaterThan(2);
    // The walk crossed into 2027, and the month's numbers were part of what was compared.
    expect(clock.now()).toBeGreaterThan(Date.UTC(2027, 0, 1));
    expect(outcomes.admitted).toBeGreaterThan(300);
    expect(outcomes.rate_limited).toBeGreaterThan(100);
    expect(outcomes.key_banned).toBeGreaterThan(20);
    expect(reads).toBeGreaterThan(300);
  }, 60_000);

  test('two instances, 100 concurrent requests of cost 5 against 250 a minute: exactly 50 admitted', async () => {
    const keyPrefix = prefix();
    const [a, b] = [client(), client()].map((c) => new RedisLimiter({ client: c, prefix: keyPrefix }));
    const s = subject('key:acme', { perMinute: 250, perDay: 10_000, perMonth: 1_000 });
    const decisions = await Promise.all(
      Array.from({ length: 100 }, (_, i) => ((i % 2 ? a : b) as RedisLimiter).decide(s, 5)),
    );
    expect(decisions.filter((d) => d.outcome === 'admitted')).toHaveLength(50);
    const read = await (a as RedisLimiter).decide(s, 0);
    expect(read.windows.map((w) => [w.name, w.remaining])).toEqual([
      ['minute', 0],
      ['day', 9_750],
      ['month', 750],
    ]);
  });

  test('two instances share one quota: 60 of 100 concurrent requests of a free key, alternating', async () => {
    const keyPrefix = prefix();
    const [a, b] = [client(), client()].map((c) => new RedisLimiter({ client: c, prefix: keyPrefix }));
    const s = subject('key:acme', { perMinute: 60, perDay: 1_000 });
    const decisions = await Promise.all(
      Array.from({ length: 100 }, (_, i) => ((i % 2 ? a : b) as RedisLimiter).decide(s)),
    );
    expect(decisions.filter((d) => d.outcome === 'admitted')).toHaveLength(60);
    const remaining = decisions.filter((d) => d.outcome === 'admitted').map((d) => d.windows[0]?.remaining);
    expect(remaining.sort((x, y) => (y ?? 0) - (x ?? 0))).toEqual(Array.from({ length: 60 }, (_, i) => 59 - i));
    // Redis's own clock: now is this machine's time, give or take the round trip.
    const now = (decisions[0] as Decision).now;
    expect(Math.abs(now - Date.now() / 1000)).toBeLessThan(2);
  });

  test('a flushed script cache is refilled with EVAL; address states expire, bans extend the expiry; key states do not', async () => {
    const redis = client();
    const keyPrefix = prefix();
    const clock = fakeClock();
    const limiter = new RedisLimiter({ client: redis, clock, prefix: keyPrefix });
    const s: Subject = {
      ...subject('addr:203.0.113.9', { perMinute: 1, perDay: 10 }, { threshold: 1, seconds: 600 }),
      keyless: true,
      plan: 'anonymous',
    };
    await redis.script('FLUSH');
    expect(await redis.script('EXISTS', DECIDE_SHA1)).toEqual([0]);
    expect((await limiter.decide(s)).outcome).toBe('admitted');
    expect(await redis.script('EXISTS', DECIDE_SHA1)).toEqual([1]);
    const ttl = await redis.pttl(`${keyPrefix}addr:203.0.113.9`);
    expect(ttl).toBeGreaterThan(STATE_TTL_MS - 5_000);
    expect(ttl).toBeLessThanOrEqual(STATE_TTL_MS);
    expect((await limiter.decide(s)).outcome).toBe('key_banned');
    const banned = await redis.pttl(`${keyPrefix}addr:203.0.113.9`);
    expect(banned).toBeGreaterThan(STATE_TTL_MS + 600_000 - 5_000);
    expect(banned).toBeLessThanOrEqual(STATE_TTL_MS + 600_000);
    // A consumer's state has no TTL: maxmemory-policy volatile-lru never evicts it.
    await limiter.decide(subject('key:acme', { perMinute: 1, perDay: 10 }));
    expect(await redis.pttl(`${keyPrefix}key:acme`)).toBe(-1);
  });

  test('a state of another layout is read as empty rather than failing', async () => {
    const redis = client();
    const keyPrefix = prefix();
    await redis.set(`${keyPrefix}key:acme`, 'not msgpack', 'PX', 60_000);
    const limiter = new RedisLimiter({ client: redis, prefix: keyPrefix });
    const d = await limiter.decide(subject('key:acme', { perMinute: 60, perDay: 1_000 }));
    expect(d.outcome).toBe('admitted');
    expect(d.outcome === 'admitted' && d.windows.map((w) => w.remaining)).toEqual([59, 999]);
  });
});

describe('openRedisLimiter', () => {
  test('an unreachable Redis does not stop the start: the limiter starts on local limits and says so', async () => {
    const lines: Record<string, unknown>[] = [];
    const limiter = await openRedisLimiter({
      url: 'redis://:secret@127.0.0.1:1',
      mode: 'open',
      fallback: new SlidingWindowLimiter(),
      log: createLogger({ write: (l) => lines.push(JSON.parse(l)) }),
    });
    expect(lines).toEqual([
      expect.objectContaining({
        level: 'warn',
        msg: 'rate limiter: Redis unreachable; each instance now enforces the limits on its own',
        redis: 'redis://:***@127.0.0.1:1',
        failMode: 'open',
        reason: expect.stringContaining('ECONNREFUSED'),
      }),
    ]);
    const d = await limiter.decide(subject('key:acme', { perMinute: 60, perDay: 1_000 }));
    expect(d.outcome).toBe('admitted');
    expect(limiter.status()).toMatchObject({ backend: 'local', ready: true, outages: 1, localDecisions: 1 });
    await limiter.close();
  });

  test('a reachable Redis is used from the first request', async () => {
    const lines: Record<string, unknown>[] = [];
    const limiter = await openRedisLimiter({
      url: testRedisUrl(),
      mode: 'closed',
      fallback: new SlidingWindowLimiter(),
      log: createLogger({ write: (l) => lines.push(JSON.parse(l)) }),
    });
    expect(lines.map((l) => l.msg)).toEqual(['rate limiter: limits and bans are shared through Redis']);
    const d = await limiter.decide(subject(`key:${crypto.randomUUID()}`, { perMinute: 60, perDay: 1_000 }));
    expect(d.outcome === 'admitted' && d.windows.map((w) => w.remaining)).toEqual([59, 999]);
    expect(limiter.status()).toMatchObject({ backend: 'redis', ready: true, outages: 0 });
    await limiter.close();
  });
});

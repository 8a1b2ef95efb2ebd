import { describe, expect, test } from 'bun:test';
import { Redis } from 'ioredis';
import { testRedis, testRedisUrl } from '../../../test/redis.ts';
import { replay } from '../../../test/replay.ts';
import { fakeClock } from '../../../test/testing.ts';
import { busiest, mulberry32 } from '../../../test/windows.ts';
import type { Limits } from '../../keys/plans.ts';
import { createLogger } from '../../log.ts';
import { FailoverLimiter } from './failover.ts';
import { SlidingWindowLimiter } from './in-process.ts';
import { LeaseLimiter } from './leases.ts';
import type { Subject } from './limiter.ts';
import { RedisLimiter } from './redis.ts';

const { client, prefix } = testRedis();

/**
 * 2026-11-22T12:00:00.253Z: steps of 10 ms never land on a whole second, whose term is an instant.
 */
const T0 = Date.UTC(2026, 10, 22, 12, 0, 0) + 253;

function subject(id: string, limits: Limits, ban = { threshold: 60, seconds: 900 }): Subject {
  return { id, keyless: false, plan: 'pro', label: id, limits, ban };
}

/** The walk one leased instance is replayed on against the in-process limiter. */
const LEASED_WALK = {
  steps: 6_000,
  subjects: [
    {
      ...subject('key:tight', { perMinute: 30, perDay: 200, perMonth: 400 }, { threshold: 10, seconds: 30 }),
      thresholds: [50, 100],
    },
    subject('key:busy', { perMinute: 600, perDay: 5_000 }),
    subject('key:plain', { perMinute: 100, perDay: 100_000 }, { threshold: 0, seconds: 900 }),
  ],
  costs: [0, 1, 1, 1, 1, 1, 2, 3],
  // Mostly tens of requests a second, with pauses of seconds and now and then of hours.
  pause: (random: () => number) => {
    const r = random();
    if (r < 0.9) return Math.floor(random() * 40);
    if (r < 0.995) return Math.floor(random() * 5_000);
    return 3_600_000;
  },
};

/** What a script run whose reply came too late rejects with (ioredis's command timeout). */
class LostReply extends Error {
  constructor() {
    super('Command timed out');
  }
}

/**
 * A connection on which Redis runs every script, but a reply that `lose` picks never comes back
 * in time: the run rejects once it has run (after `lateMs`, on a timer), as under a command
 * timeout while Redis, or the way back from it, is slow. It counts its runs (`runs`), and the
 * units of lost runs that a later run on it overlapped (`overlapped`): sent before the loss was
 * known, that run may be the one Redis records for the instance, and the lost one's units then
 * stay counted (docs/fleet.md, a slow Redis).
 */
function lossy(redis: Redis, lose: (reply: unknown) => boolean, lateMs = 0): Redis {
  let runs = 0;
  let overlapped = 0;
  /** Lost runs (id, units) that no later run has been sent since. */
  const unsettled = new Map<number, number>();
  return new Proxy(redis, {
    get(target, name, receiver) {
      if (name === 'runs') return runs;
      if (name === 'overlapped') return overlapped;
      if (name !== 'evalsha' && name !== 'eval') return Reflect.get(target, name, receiver);
      return async (...args: unknown[]) => {
        const run = ++runs;
        // A lease's run (ARGV[13], its id) overlaps the lost run (ARGV[12]) it does not hand back.
        const [backs, id] = args.slice(16, 18) as [string | undefined, number | undefined];
        if (id !== undefined) {
          for (const [lostId, units] of unsettled) {
            if (!(backs ?? '').split(',').includes(`${lostId}:*`)) overlapped += units;
            unsettled.delete(lostId);
          }
        }
        const reply = await (target[name] as (...a: unknown[]) => Promise<unknown>).apply(target, args);
        if (!lose(reply)) return reply;
        // The units the run counted (the reply's `granted`): overlapped by a run already sent, or
        // settled by the next one.
        const units = (reply as number[])[15] as number;
        if (runs > run) overlapped += units;
        else if (id !== undefined) unsettled.set(id, units);
        if (lateMs > 0) await Bun.sleep(lateMs);
        throw new LostReply();
      };
    },
  });
}

/**
 * The runs a `lossy` connection sent, and the units of its lost runs that later ones overlapped.
 */
const lossyStats = (redis: Redis) => redis as unknown as { runs: number; overlapped: number };

/**
 * An admitted run that started or ended no ban and gave no notice: its reply may be lost and handed
 * back whole.
 */
const quietAdmission = (reply: unknown) =>
  Array.isArray(reply) && reply[0] === 0 && reply[9] === 0 && (reply[14] as unknown[]).length === 0;

const lostAsUndefined = (err: unknown) => {
  if (err instanceof LostReply) return undefined;
  throw err;
};

/** `instances` lease limiters on one Redis and one fake clock, each with its own connection. */
function fleet(instances: number, clock: ReturnType<typeof fakeClock>) {
  const keyPrefix = prefix();
  return Array.from(
    { length: instances },
    (_, i) =>
      new LeaseLimiter({
        shared: new RedisLimiter({ client: client(), clock, prefix: keyPrefix }),
        clock,
        holder: `instance-${i}`,
      }),
  );
}

describe('LeaseLimiter', () => {
  test('one instance decides as SlidingWindowLimiter: grants, local decisions and hand-backs give the same answers', async () => {
    const clock = fakeClock(T0);
    const local = new SlidingWindowLimiter({ clock });
    const [leased] = fleet(1, clock) as [LeaseLimiter];
    const outcomes = await replay({
      ...LEASED_WALK,
      seed: 5,
      clock,
      expected: (s, cost) => local.decide(s, cost),
      actual: async (s, cost) => leased.decide(s, cost),
      each: async ({ random }) => {
        if (random() < 0.01) await leased.sweep();
      },
    });
    const { runs, unitsGranted, unitsHandedBack } = leased.stats();
    expect(outcomes.admitted).toBeGreaterThan(3_000);
    expect(outcomes.rate_limited).toBeGreaterThan(300);
    expect(outcomes.key_banned).toBeGreaterThan(100);
    // Grants, local decisions and hand-backs all took part in what was compared.
    expect(runs.grant).toBeGreaterThan(100);
    expect(runs.grant + runs.decision + runs.hand_back).toBeLessThan(4_000);
    expect(unitsGranted).toBeGreaterThan(2_000);
    expect(unitsHandedBack).toBeGreaterThan(100);
  }, 60_000);

  test('replies lost after Redis ran the script (5% of admissions): each run is handed back whole with the next, and one instance still decides as SlidingWindowLimiter', async () => {
    const clock = fakeClock(T0);
    const local = new SlidingWindowLimiter({ clock });
    const random = mulberry32(13);
    const keyPrefix = prefix();
    let lost = 0;
    const leased = new LeaseLimiter({
      shared: new RedisLimiter({
        client: lossy(client(), (reply) => quietAdmission(reply) && random() < 0.05 && ++lost > 0),
        clock,
        prefix: keyPrefix,
      }),
      clock,
      holder: 'instance-0',
    });
    const outcomes = await replay({
      ...LEASED_WALK,
      seed: 17,
      clock,
      expected: (s, cost) => local.decide(s, cost),
      // A request whose reply is lost is not decided here: as if it had never been sent.
      actual: (s, cost) => Promise.resolve(leased.decide(s, cost)).catch(lostAsUndefined),
      each: async ({ random: r }) => {
        if (r() < 0.01) await leased.sweep();
      },
    });
    const { runs, unitsGranted, unitsHandedBack } = leased.stats();
    console.log({ lost, outcomes, runs, unitsGranted, unitsHandedBack });
    expect(lost).toBeGreaterThan(50);
    expect(outcomes.admitted).toBeGreaterThan(3_000);
    expect(outcomes.rate_limited).toBeGreaterThan(300);
    expect(outcomes.key_banned).toBeGreaterThan(100);
    expect(runs.grant).toBeGreaterThan(100);
    expect(unitsHandedBack).toBeGreaterThan(100);
  }, 60_000);

  test('a hand-back applies once, to the run recorded under its id: sent again, or naming an older run, it changes nothing', async () => {
    const clock = fakeClock(T0);
    const shared = new RedisLimiter({ client: client(), clock, prefix: prefix() });
    const s = subject('key:once', { perMinute: 100, perDay: 1_000, perMonth: 5_000 });
    const lease = (run: number, wanted: number, backs: { run: number; units: number | 'all' }[] = []) =>
      shared.run(s, wanted === 0 ? 0 : 1, { holder: 'a', run, wanted, backs });
    // Run 1: a grant of 50 (half the minute's room), its reply taken as lost.
    expect((await lease(1, 60)).granted).toBe(50);
    // Run 2 hands run 1 back whole and counts its own request; sent again, run 1's hand-back finds
    // no record.
    const second = await lease(2, 1, [{ run: 1, units: 'all' }]);
    expect([second.handedBack, second.minute.count, second.day.count, second.month.count]).toEqual([50, 1, 1, 1]);
    const again = await lease(3, 0, [{ run: 1, units: 'all' }]);
    expect([again.handedBack, again.minute.count, again.day.count]).toEqual([0, 1, 1]);
    // Run 2 is recorded: its hand-back of 5 units gives back at most what it counted (1).
    clock.advance(10);
    const fourth = await lease(4, 0, [{ run: 2, units: 5 }]);
    expect([fourth.handedBack, fourth.minute.count, fourth.day.count, fourth.month.count]).toEqual([1, 0, 0, 0]);
    expect((await lease(5, 0, [{ run: 2, units: 'all' }])).handedBack).toBe(0);
    // Run 6 is recorded now: a hand-back naming an older run leaves its unit counted.
    expect((await lease(6, 1)).granted).toBe(1);
    const older = await lease(7, 0, [{ run: 4, units: 'all' }]);
    expect([older.handedBack, older.minute.count]).toEqual([0, 1]);
  });

  test('a run that times out: the 100 requests waiting for it fail with it, at once, on one script run; its units come back with the next run once Redis is timely', async () => {
    const clock = fakeClock(T0);
    let slow = true;
    const redis = lossy(client(), () => slow, 300);
    const leases = new LeaseLimiter({ shared: new RedisLimiter({ client: redis, clock, prefix: prefix() }), clock });
    const limiter = new FailoverLimiter({
      primary: leases,
      fallback: new SlidingWindowLimiter({ clock }),
      probe: async () => {
        if (slow) throw new LostReply();
      },
      log: createLogger({ level: 'error', write: () => {} }),
      name: 'redis',
      clock,
      probeIntervalMs: 60_000,
    });
    const s = subject('key:burst', { perMinute: 100_000, perDay: 20_000 });
    // 20 requests 10 ms apart while Redis is timely: the lease learns a rate of 100 a second.
    slow = false;
    for (let i = 0; i < 20; i++) {
      expect((await limiter.decide(s)).outcome).toBe('admitted');
      clock.advance(10);
    }
    // The next term: the burst's one run asks for a grant (Redis counts it; the reply is late).
    clock.advance(1_000 - (clock.now() % 1_000) + 10);
    await leases.sweep();
    const before = leases.stats();
    slow = true;
    const runsBefore = lossyStats(redis).runs;
    const answered = await Promise.all(Array.from({ length: 100 }, () => limiter.decide(s)));
    // One run for the burst, which asked for a grant for all 100 (Redis counted it: a late reply),
    // and every request answered by the in-process limiter as soon as that one timed out.
    expect(lossyStats(redis).runs - runsBefore).toBe(1);
    expect(answered.every((a) => a.outcome === 'admitted')).toBe(true);
    expect(limiter.status()).toMatchObject({ backend: 'local', outages: 1, localDecisions: 100 });
    // Redis timely again: the next run hands the lost one back whole, so the day shows only the
    // 21 requests Redis decided (a grant's unused units are this instance's, counted as remaining).
    slow = false;
    expect(await limiter.check()).toBe(true);
    clock.advance(10);
    const next = await limiter.decide(s);
    expect(next.outcome === 'admitted' && next.windows.map((w) => [w.name, w.remaining])).toEqual([
      ['minute', 100_000 - 21],
      ['day', 20_000 - 21],
    ]);
    const after = leases.stats();
    // The lost run was a grant (a term at the rate learnt), all of it handed back.
    expect(after.unitsHandedBack - before.unitsHandedBack).toBeGreaterThan(10);
    await limiter.close();
  });

  test('four instances, bursts of concurrent requests, a fifth of the admissions replies lost after Redis ran them: never over the minute or the day, and the day barely under', async () => {
    const clock = fakeClock(T0);
    const keyPrefix = prefix();
    const random = mulberry32(23);
    let lost = 0;
    const connections = Array.from({ length: 4 }, () =>
      lossy(client(), (reply) => quietAdmission(reply) && random() < 0.2 && ++lost > 0),
    );
    const instances = connections.map(
      (connection, i) =>
        new LeaseLimiter({
          shared: new RedisLimiter({ client: connection, clock, prefix: keyPrefix }),
          clock,
          holder: `instance-${i}`,
        }),
    );
    const s = subject('key:lossy', { perMinute: 1_000, perDay: 2_000 }, { threshold: 0, seconds: 30 });
    const log: [number, number][] = [];
    for (let step = 0; step < 3_000; step++) {
      clock.advance(Math.floor(random() * (step % 500 < 400 ? 30 : 400)));
      const burst = Array.from({ length: 1 + Math.floor(random() * 12) }, () => {
        const cost = 1 + Math.floor(random() * 3);
        const at = instances[Math.floor(random() * instances.length)] as LeaseLimiter;
        return Promise.resolve(at.decide(s, cost))
          .then((d) => {
            if (d.outcome === 'admitted') log.push([clock.now(), cost]);
          })
          .catch(lostAsUndefined);
      });
      await Promise.all(burst);
      if (step % 50 === 0) await Promise.all(instances.map((i) => i.sweep()));
    }
    const day = log.reduce((n, [, units]) => n + units, 0);
    // Which runs overlap a lost one depends on when Redis's replies arrive, not on the seed.
    const overlapped = connections.reduce((n, c) => n + lossyStats(c).overlapped, 0);
    console.log({ lost, overlapped, day, minute: busiest(log, 60_000), last: clock.now() - T0 });
    expect(lost).toBeGreaterThan(20);
    expect(clock.now() - T0).toBeLessThan(86_400_000);
    expect(busiest(log, 60_000)).toBeLessThanOrEqual(1_000);
    expect(day).toBeLessThanOrEqual(2_000);
    // The lost runs' units came back, but for those of runs a later one of their instance
    // overlapped (what docs/fleet.md says may stay counted): the rest of the day's quota was all
    // used, but for less than a request's cost per instance.
    expect(day).toBeGreaterThanOrEqual(2_000 - 4 * 3 - overlapped);
  }, 60_000);

  test('four instances, bursts of concurrent requests of costs 1 to 3: never more than the quota in any 60 s or day, and barely under', async () => {
    const clock = fakeClock(T0);
    const instances = fleet(4, clock);
    const s = subject('key:acme', { perMinute: 300, perDay: 2_000 }, { threshold: 0, seconds: 30 });
    const random = mulberry32(3);
    const log: [number, number][] = [];
    let falseRefusals = 0;
    for (let step = 0; step < 3_000; step++) {
      clock.advance(Math.floor(random() * (step % 500 < 400 ? 30 : 400)));
      const burst = Array.from({ length: 1 + Math.floor(random() * 12) }, () => {
        const cost = 1 + Math.floor(random() * 3);
        const at = instances[Math.floor(random() * instances.length)] as LeaseLimiter;
        return Promise.resolve(at.decide(s, cost)).then((d) => {
          if (d.outcome === 'admitted') log.push([clock.now(), cost]);
          else if (d.retryAfter === 1 && d.windows.every((w) => w.remaining > 0)) falseRefusals++;
        });
      });
      await Promise.all(burst);
      if (step % 50 === 0) await Promise.all(instances.map((i) => i.sweep()));
    }
    expect(busiest(log, 60_000)).toBeLessThanOrEqual(300);
    expect(busiest(log, 86_400_000)).toBeLessThanOrEqual(2_000);
    // Barely under: the first minute's quota was used within it, but for less than a request's cost
    // per instance.
    const first = (log[0] as [number, number])[0];
    const firstMinute = log.filter(([time]) => time < first + 60_000).reduce((sum, [, units]) => sum + units, 0);
    expect(firstMinute).toBeGreaterThanOrEqual(300 - 3 * 3);
    const runs = instances.map((i) => i.stats().runs);
    expect(runs.reduce((n, r) => n + r.grant, 0)).toBeGreaterThan(50);
    console.log(busiest(log, 60_000), firstMinute, log.length, falseRefusals, runs);
  }, 60_000);

  test('refused while another instance holds units, in its term or until it hands them back: Retry-After 1 and no ban; once they are back, refusals count', async () => {
    const clock = fakeClock(T0);
    const [a, b] = fleet(2, clock) as [LeaseLimiter, LeaseLimiter];
    const s = subject('key:shared', { perMinute: 10, perDay: 1_000 }, { threshold: 2, seconds: 600 });
    // A: a decision, then 10 ms on a grant for the rest of the second (half the room: 4 units).
    expect((await a.decide(s)).outcome).toBe('admitted');
    clock.advance(10);
    expect((await a.decide(s)).outcome).toBe('admitted');
    expect(a.stats().outstanding).toBe(1);
    // B takes the rest, one at a time, then is refused while A still holds 3 units.
    const seen: string[] = [];
    for (let i = 0; i < 10; i++) {
      const d = await b.decide(s);
      seen.push(d.outcome === 'admitted' ? 'ok' : `${d.outcome} ${d.retryAfter}`);
      clock.advance(10);
    }
    expect(seen).toEqual([...Array(5).fill('ok'), ...Array(5).fill('rate_limited 1')]);
    // A's term ends at the next whole second; until A hands its 3 units back they are still the
    // fleet's, so B is told to retry in a second, not at the window's end, and no ban starts.
    clock.advance(1_000 - (clock.now() % 1_000));
    const ended: string[] = [];
    for (let i = 0; i < 3; i++) {
      const d = await b.decide(s);
      ended.push(d.outcome === 'admitted' ? 'ok' : `${d.outcome} ${d.retryAfter}`);
      clock.advance(300);
    }
    expect(ended).toEqual(Array(3).fill('rate_limited 1'));
    await a.sweep();
    const after: string[] = [];
    for (let i = 0; i < 5; i++) {
      const d = await b.decide(s);
      after.push(d.outcome === 'admitted' ? 'ok' : `${d.outcome} ${d.retryAfter}`);
    }
    // Two refusals with nobody holding units reach the threshold of 2: the ban.
    expect(after).toEqual(['ok', 'ok', 'ok', 'rate_limited 60', 'key_banned 600']);
  });

  test('an instance that never hands back (dead): a second after its term ends its units stay counted and refusals are true ones', async () => {
    const clock = fakeClock(T0);
    const [a, b] = fleet(2, clock) as [LeaseLimiter, LeaseLimiter];
    const s = subject('key:dead', { perMinute: 10, perDay: 1_000 }, { threshold: 2, seconds: 600 });
    await a.decide(s);
    clock.advance(10);
    await a.decide(s);
    expect(a.stats().outstanding).toBe(1);
    for (let i = 0; i < 5; i++) expect((await b.decide(s)).outcome).toBe('admitted');
    const termEnd = clock.now() - (clock.now() % 1_000) + 1_000;
    clock.advance(termEnd + 999 - clock.now());
    expect(await b.decide(s)).toMatchObject({ outcome: 'rate_limited', retryAfter: 1 });
    clock.advance(1);
    // A's 3 units stay in the minute bucket they were booked in: free again a minute on.
    expect(await b.decide(s)).toMatchObject({ outcome: 'rate_limited', retryAfter: 59 });
    expect(await b.decide(s)).toMatchObject({ outcome: 'key_banned', retryAfter: 600 });
  });

  test('a term ends on the next whole second: the first request of each second runs the script, the others are decided locally', async () => {
    const clock = fakeClock(T0);
    const [leased] = fleet(1, clock) as [LeaseLimiter];
    const s = subject('key:steady', { perMinute: 100_000, perDay: 10_000_000 });
    const ranAt: number[] = [];
    for (let i = 0; i < 500; i++) {
      const before = totalRuns([leased]);
      await leased.decide(s);
      if (totalRuns([leased]) > before) ranAt.push(clock.now());
      clock.advance(10);
    }
    // Requests at .253, .263, ... .993 of each second, then .003 of the next: from the third
    // second on (the rate is known by then) one run at .003, none in between.
    const seconds = ranAt.filter((t) => t >= T0 + 2_000).map((t) => t - Math.floor(t / 1_000) * 1_000);
    expect(seconds).toEqual([3, 3, 3]);
  });

  test('Redis lost: the units a grant holds are spent until its term ends, then the failover decides (503 when closed)', async () => {
    const clock = fakeClock(T0);
    const redis = new Redis(testRedisUrl(), { enableOfflineQueue: false, maxRetriesPerRequest: 0 });
    await new Promise((ready) => redis.once('ready', ready));
    const leases = new LeaseLimiter({ shared: new RedisLimiter({ client: redis, clock, prefix: prefix() }), clock });
    const limiter = new FailoverLimiter({
      primary: leases,
      fallback: new SlidingWindowLimiter({ clock }),
      probe: () => redis.ping(),
      mode: 'closed',
      log: createLogger({ level: 'error', write: () => {} }),
      name: 'redis',
      clock,
    });
    // As openRedisLimiter does: a lost connection marks the limiter down at once.
    redis.on('close', () => limiter.markDown('Connection is closed.'));
    const s = subject('key:lost', { perMinute: 10_000, perDay: 100_000 });
    // Requests 10 ms apart: the second asks for a grant (6 units at this rate), the next two are
    // local.
    for (let i = 0; i < 4; i++) {
      expect((await limiter.decide(s)).outcome).toBe('admitted');
      clock.advance(10);
    }
    const held = leases.stats().outstanding;
    await redis.quit();
    for (let i = 0; i < 200 && limiter.status().backend !== 'none'; i++) await Bun.sleep(10);
    expect(limiter.status().backend).toBe('none');
    const outcomes: string[] = [];
    for (let i = 0; i < 3; i++) {
      outcomes.push((await limiter.decide(s)).outcome);
      clock.advance(10);
    }
    // The term ends at the next whole second: from then on, nothing is held.
    clock.advance(1_000 - (clock.now() % 1_000));
    outcomes.push((await limiter.decide(s)).outcome);
    expect(held).toBe(1);
    expect(outcomes).toEqual(['admitted', 'admitted', 'admitted', 'unavailable']);
    await limiter.close();
  });

  test('a key far from its limit, 100 requests a second on each of four instances: at most 0.02 script runs a request', async () => {
    const clock = fakeClock(T0);
    const instances = fleet(4, clock);
    const s = subject('key:big', { perMinute: 100_000, perDay: 10_000_000 });
    let runsBefore = 0;
    let requests = 0;
    for (let ms = 0; ms < 30_000; ms += 10) {
      clock.advance(10);
      if (ms === 5_000) runsBefore = totalRuns(instances);
      const decisions = await Promise.all(instances.map((i) => i.decide(s)));
      expect(decisions.every((d) => d.outcome === 'admitted')).toBe(true);
      if (ms >= 5_000) requests += instances.length;
    }
    const perRequest = (totalRuns(instances) - runsBefore) / requests;
    console.log(
      perRequest,
      instances.map((i) => i.stats()),
    );
    expect(perRequest).toBeLessThanOrEqual(0.02);
  }, 60_000);
});

function totalRuns(instances: readonly LeaseLimiter[]): number {
  let n = 0;
  for (const i of instances) for (const r of Object.values(i.stats().runs)) n += r;
  return n;
}

import { describe, expect, test } from 'bun:test';
import type { Decision } from '../../core/decision.ts';
import type { Limits } from '../../keys/plans.ts';
import { SlidingWindowLimiter } from './in-process.ts';
import { KeylessTable } from './keyless.ts';
import type { LimiterEvent, Subject } from './limiter.ts';

/** 2023-11-14T22:13:20Z, a whole second. */
const T0 = 1_700_000_000_000;
const T0S = T0 / 1000;
const NO_BAN = { threshold: Number.POSITIVE_INFINITY, seconds: 900 };

function clockAt(start = T0) {
  let t = start;
  return {
    now: () => t,
    set: (ms: number) => {
      t = ms;
    },
    advance: (ms: number) => {
      t += ms;
    },
  };
}

function subject(id: string, limits: Limits = { perMinute: 60, perDay: 1000 }, ban = NO_BAN): Subject {
  return { id, keyless: false, plan: 'free', label: id, limits, ban };
}

function address(id: string, limits: Limits = { perMinute: 60, perDay: 1000 }, ban = NO_BAN): Subject {
  return { id, keyless: true, plan: 'anonymous', label: id, limits, ban };
}

function setup(options: { keyless?: { columns?: number; seed?: number } } = {}) {
  const clock = clockAt();
  const events: LimiterEvent[] = [];
  const limiter = new SlidingWindowLimiter({ clock, onEvent: (e) => events.push(e), ...options });
  return { clock, events, limiter };
}

const brief = (d: Decision) => [d.outcome, d.retryAfter, ...d.windows.map((w) => [w.remaining, w.reset])];

describe('SlidingWindowLimiter: windows', () => {
  test('a fresh free subject counts down 59, 58, ...; the 61st waits exactly until the first leaves', () => {
    const { clock, limiter } = setup();
    const s = subject('key:acme');
    const remaining: number[] = [];
    for (let i = 0; i < 60; i++) {
      const d = limiter.decide(s);
      expect(d.outcome).toBe('admitted');
      remaining.push(d.windows[0]?.remaining ?? -1);
      if (i === 0) expect(brief(d)).toEqual(['admitted', 0, [59, T0S + 60], [999, T0S + 86_400]]);
      clock.advance(500);
    }
    expect(remaining).toEqual(Array.from({ length: 60 }, (_, i) => 59 - i));

    clock.set(T0 + 30_000);
    const refused = limiter.decide(s);
    expect(brief(refused)).toEqual(['rate_limited', 30, [0, T0S + 60], [940, T0S + 86_400]]);
    expect(refused.now).toBe(T0S + 30);

    clock.set(T0 + 59_999);
    expect(brief(limiter.decide(s))).toEqual(['rate_limited', 1, [0, T0S + 60], [940, T0S + 86_400]]);
    clock.set(T0 + 30_000 + refused.retryAfter * 1000);
    expect(brief(limiter.decide(s))).toEqual(['admitted', 0, [0, T0S + 61], [939, T0S + 86_400]]);
    // The request at T0 + 0.5 s sits in the bucket ending at T0 + 1 s: held until T0 + 61 s.
    clock.set(T0 + 60_200);
    expect(brief(limiter.decide(s))).toEqual(['rate_limited', 1, [0, T0S + 61], [939, T0S + 86_400]]);
  });

  test('refused requests consume neither window', () => {
    const { clock, limiter } = setup();
    const s = subject('key:a', { perMinute: 3, perDay: 100 });
    for (let i = 0; i < 3; i++) expect(limiter.decide(s).outcome).toBe('admitted');
    for (let i = 0; i < 20; i++) expect(limiter.decide(s).retryAfter).toBe(60);
    clock.advance(60_000);
    const again = [0, 1, 2].map(() => limiter.decide(s));
    expect(again.map((d) => d.outcome)).toEqual(['admitted', 'admitted', 'admitted']);
    expect(again[2]?.windows[1]?.remaining).toBe(94);
  });

  test('the day window binds once the day quota is used, and retryAfter reaches across the day', () => {
    const { clock, limiter } = setup();
    const s = subject('key:a', { perMinute: 60, perDay: 100 });
    let last: Decision | undefined;
    for (let minute = 0; minute < 2; minute++) {
      for (let i = 0; i < 50; i++) {
        clock.set(T0 + minute * 60_000 + i * 1000);
        last = limiter.decide(s);
        expect(last.outcome).toBe('admitted');
      }
    }
    // Day buckets are re-anchored on the first request: it alone sits in the bucket ending at T0.
    expect(brief(last as Decision)).toEqual(['admitted', 0, [10, T0S + 120], [0, T0S + 86_400]]);
    clock.set(T0 + 120_000);
    expect(brief(limiter.decide(s))).toEqual(['rate_limited', 86_280, [11, T0S + 121], [0, T0S + 86_400]]);
    clock.set(T0 + 86_400_000);
    expect(limiter.decide(s).outcome).toBe('admitted');
    // The other 99 sit in the bucket ending at T0 + 15 min.
    expect(brief(limiter.decide(s))).toEqual(['rate_limited', 900, [59, T0S + 86_460], [0, T0S + 87_300]]);
  });

  test('a clock that steps back does not reopen a window', () => {
    const { clock, limiter } = setup();
    const s = subject('key:a', { perMinute: 1, perDay: 10 });
    limiter.decide(s);
    clock.advance(-3_600_000);
    expect(brief(limiter.decide(s))).toEqual(['rate_limited', 60, [0, T0S + 60], [9, T0S + 86_400]]);
  });

  test("a keyless clients' table whose columns are not a power of two up to 65,536 is refused at construction", () => {
    for (const columns of [0, 3, 131_072]) {
      expect(() => new SlidingWindowLimiter({ keyless: { columns } })).toThrow(TypeError);
    }
  });
});

describe('SlidingWindowLimiter: bans', () => {
  const BAN = { threshold: 3, seconds: 900 };

  test('the threshold-th refusal within a minute bans; the ban ends on time; events once each', () => {
    const { clock, events, limiter } = setup();
    const s = subject('key:noisy', { perMinute: 2, perDay: 1000 }, BAN);
    const other = subject('key:quiet', { perMinute: 2, perDay: 1000 }, BAN);
    const outcomes = Array.from({ length: 5 }, () => limiter.decide(s));
    expect(outcomes.map((d) => [d.outcome, d.retryAfter])).toEqual([
      ['admitted', 0],
      ['admitted', 0],
      ['rate_limited', 60],
      ['rate_limited', 60],
      ['key_banned', 900],
    ]);
    expect(events).toEqual([{ type: 'ban_start', subject: s, until: T0 + 900_000 }]);
    expect(limiter.decide(other).outcome).toBe('admitted');

    clock.advance(100_000);
    expect([limiter.decide(s).outcome, limiter.decide(s).retryAfter]).toEqual(['key_banned', 800]);
    expect(limiter.decide(other).outcome).toBe('admitted');
    clock.set(T0 + 899_500);
    expect(brief(limiter.decide(s))).toEqual(['key_banned', 1, [2, T0S + 899], [998, T0S + 86_400]]);
    expect(events).toHaveLength(1);

    clock.set(T0 + 900_000);
    expect(limiter.decide(s).outcome).toBe('admitted');
    expect(limiter.decide(s).outcome).toBe('admitted');
    expect(limiter.decide(s).outcome).toBe('rate_limited');
    expect(events).toEqual([
      { type: 'ban_start', subject: s, until: T0 + 900_000 },
      { type: 'ban_end', subject: s },
    ]);
  });

  test('a ban starting mid-second ends on a whole second: Retry-After is the ban length, never one more', () => {
    const { clock, events, limiter } = setup();
    const s = subject('key:a', { perMinute: 1, perDay: 1000 }, { threshold: 1, seconds: 900 });
    limiter.decide(s);
    clock.advance(500);
    // Reset = the ban's end = the Date of this answer (T0S) + 900, and waiting 900 s is enough.
    expect(brief(limiter.decide(s))).toEqual(['key_banned', 900, [0, T0S + 60], [999, T0S + 86_400]]);
    expect(events).toEqual([{ type: 'ban_start', subject: s, until: T0 + 900_000 }]);
    clock.set(T0 + 899_999);
    expect(limiter.decide(s).retryAfter).toBe(1);
    clock.set(T0 + 900_000);
    expect(limiter.decide(s).outcome).toBe('admitted');
  });

  test('--ban-seconds 3: waiting the Retry-After of any banned answer is enough, and at most 1 s more than needed', () => {
    for (const offset of [0, 1, 499, 999]) {
      for (const later of [0, 1, 700, 1_000, 1_999]) {
        const { clock, limiter } = setup();
        const s = subject('key:a', { perMinute: 1, perDay: 1000 }, { threshold: 2, seconds: 3 });
        limiter.decide(s);
        clock.set(T0 + offset);
        expect(limiter.decide(s).outcome).toBe('rate_limited');
        const start = limiter.decide(s);
        expect([start.outcome, start.retryAfter]).toEqual(['key_banned', 3]);
        clock.set(T0 + offset + later);
        const answer = limiter.decide(s);
        const answeredAt = T0 + offset + later;
        clock.set(answeredAt + answer.retryAfter * 1_000);
        expect(limiter.decide(s).outcome).not.toBe('key_banned');
        // The ban ends on the whole second T0 + 3 s: Retry-After never points past it by 1 s or
        // more.
        expect(answeredAt + answer.retryAfter * 1_000 - (T0 + 3_000)).toBeLessThan(1_000);
      }
    }
  });

  test('refusals spread over more than a minute do not ban', () => {
    const { clock, events, limiter } = setup();
    const s = subject('key:a', { perMinute: 10, perDay: 1 }, BAN);
    expect(limiter.decide(s).outcome).toBe('admitted');
    for (const at of [1, 40, 80]) {
      clock.set(T0 + at * 1000);
      expect(limiter.decide(s).outcome).toBe('rate_limited');
    }
    clock.set(T0 + 81_000);
    expect(limiter.decide(s).outcome).toBe('key_banned');
    expect(events.map((e) => e.type)).toEqual(['ban_start']);
  });

  test('a ban seen expired only when its entry goes stale still reports its end, once', () => {
    const { clock, events, limiter } = setup();
    const s = address('addr:a', { perMinute: 1, perDay: 1000 }, { threshold: 1, seconds: 60 });
    limiter.decide(s);
    expect(limiter.decide(s).outcome).toBe('key_banned');
    clock.advance(3 * 86_400_000);
    expect(limiter.decide(s).outcome).toBe('admitted');
    expect(events.map((e) => e.type)).toEqual(['ban_start', 'ban_end']);
  });
});

describe('SlidingWindowLimiter: keyless clients', () => {
  const L = { perMinute: 2, perDay: 6 };

  test('a keyless client alone in its cells counts down like a key, in 10 s and 1 h buckets', () => {
    const { clock, limiter } = setup({ keyless: { seed: 1 } });
    const s = address('addr:203.0.113.7');
    // T0 ends a 10 s bucket; the day's 1 h bucket ends at T0 + 2,800 s.
    expect(brief(limiter.decide(s))).toEqual(['admitted', 0, [59, T0S + 60], [999, T0S + 2_800 + 86_400]]);
    for (let i = 1; i < 60; i++) {
      clock.advance(500);
      expect(limiter.decide(s).windows[0]?.remaining).toBe(59 - i);
    }
    clock.set(T0 + 30_000);
    expect(brief(limiter.decide(s))).toEqual(['rate_limited', 30, [0, T0S + 60], [940, T0S + 2_800 + 86_400]]);
    // The requests of (T0, T0 + 10 s] leave at T0 + 70 s: a keyless client's minute holds for 60-70
    // s.
    clock.set(T0 + 60_000);
    expect(brief(limiter.decide(s))).toEqual(['admitted', 0, [0, T0S + 70], [939, T0S + 2_800 + 86_400]]);
    expect(limiter.decide(address('addr:203.0.113.8')).windows[0]?.remaining).toBe(59);
  });

  test('addresses that share both cells share counts and bans; a key beside them keeps its own, headers and all', () => {
    const { clock, events, limiter } = setup({ keyless: { columns: 1 } });
    const fresh = setup();
    const ban = { threshold: 2, seconds: 900 };
    const [a, b] = ['addr:a', 'addr:b'].map((id) => address(id, L, ban)) as [Subject, Subject];
    const key = subject('key:acme', L, ban);
    const keyed: Decision[] = [];
    const alone: Decision[] = [];
    const both = () => {
      keyed.push(limiter.decide(key));
      alone.push(fresh.limiter.decide(key));
    };
    expect([a, a].map((s) => limiter.decide(s).outcome)).toEqual(['admitted', 'admitted']);
    both();
    // b never sent anything, yet is refused: a filled the cells they share.
    expect(limiter.decide(b).outcome).toBe('rate_limited');
    expect(limiter.decide(a).outcome).toBe('key_banned');
    expect(limiter.decide(b).outcome).toBe('key_banned');
    expect(events).toEqual([{ type: 'ban_start', subject: a, until: T0 + 900_000 }]);
    both();
    clock.advance(1_000);
    fresh.clock.advance(1_000);
    both();
    expect(keyed).toEqual(alone);
    expect(keyed.map((d) => d.outcome)).toEqual(['admitted', 'admitted', 'rate_limited']);
    // The one cell of each row has a keyless client's minute quota counted: saturated.
    expect([limiter.full, fresh.limiter.full]).toEqual([true, false]);
    clock.advance(900_000);
    expect(limiter.decide(b).outcome).toBe('admitted');
    expect(events.map((e) => e.type)).toEqual(['ban_start', 'ban_end']);
  });

  test('an address alone in one of its cells is counted exactly, however full the other', () => {
    const options = { columns: 2, seed: 7 };
    const { limiter } = setup({ keyless: options });
    const cells = new KeylessTable(T0, options);
    const victim = cells.cellsOf('addr:victim');
    // Addresses in the victim's row 0 cell but not its row 1 cell.
    const neighbours = Array.from({ length: 40 }, (_, i) => `addr:other-${i}`).filter((id) => {
      const { a, b } = cells.cellsOf(id);
      return a === victim.a && b !== victim.b;
    });
    expect(neighbours.length).toBeGreaterThan(2);
    for (const id of neighbours) limiter.decide(address(id, L));
    expect(brief(limiter.decide(address('addr:victim', L)))).toEqual([
      'admitted',
      0,
      [1, T0S + 60],
      [5, T0S + 2_800 + 86_400],
    ]);
  });

  test('a flood of 100,000 keyless clients allocates nothing: the table was made at the first', () => {
    const { limiter } = setup({ keyless: { seed: 3 } });
    const keylessSubjects = Array.from({ length: 100_000 }, (_, i) => address(`addr:2001:db8:${i.toString(16)}::/56`));
    limiter.decide(keylessSubjects[0] as Subject);
    Bun.gc(true);
    const before = process.memoryUsage().heapUsed;
    for (const s of keylessSubjects) limiter.decide(s);
    Bun.gc(true);
    expect((process.memoryUsage().heapUsed - before) / 100_000).toBeLessThan(8);
    // 100,000 addresses in 65,536 cells: 1 - e^(-100,000 / 65,536) of them used.
    expect(Math.abs(limiter.keylessCells / limiter.capacity - (1 - Math.exp(-100_000 / 65_536)))).toBeLessThan(0.01);
  });
});

describe('SlidingWindowLimiter: property, against an exact log', () => {
  const WINDOWS = [
    { index: 0, ms: 60_000, bucketMs: 1_000, quota: (l: Limits) => l.perMinute },
    { index: 1, ms: 86_400_000, bucketMs: 900_000, quota: (l: Limits) => l.perDay },
  ] as const;

  /** mulberry32: small, seeded, good enough to scatter arrival times. */
  function prng(seed: number): () => number {
    let a = seed >>> 0;
    return () => {
      a = (a + 0x6d2b79f5) >>> 0;
      let t = a;
      t = Math.imul(t ^ (t >>> 15), t | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
    };
  }

  /** Admitted requests in (from, to] of a sorted log. */
  function countIn(log: readonly number[], from: number, to: number): number {
    const upper = (x: number) => {
      let lo = 0;
      let hi = log.length;
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if ((log[mid] as number) <= x) lo = mid + 1;
        else hi = mid;
      }
      return lo;
    };
    return upper(to) - upper(from);
  }

  test.each([1, 2, 3])(
    'seed %d: over 4 simulated days no window over-admits, refusals are justified, retries are exact',
    (seed) => {
      const rand = prng(seed);
      const clock = clockAt(T0 + Math.floor(rand() * 1000));
      const events: LimiterEvent[] = [];
      const limiter = new SlidingWindowLimiter({ clock, onEvent: (e) => events.push(e) });
      const subjects = [
        subject('s:small', { perMinute: 5, perDay: 40 }),
        subject('s:free', { perMinute: 60, perDay: 1000 }),
        subject('s:bans', { perMinute: 3, perDay: 25 }, { threshold: 4, seconds: 120 }),
        subject('s:large', { perMinute: 150, perDay: 3000 }),
      ];
      const admitted: number[][] = subjects.map(() => []);
      const refusals: number[][] = subjects.map(() => []);
      /** Per subject, the epoch ms from which its last 429 promised admission. */
      const promised: (number | undefined)[] = subjects.map(() => undefined);
      const pending: { t: number; who: number }[] = [];
      const end = T0 + 4 * 86_400_000;
      let next = clock.now();
      let burst = { who: 0, left: 0 };
      let decisions = 0;
      // expect() per decision would dominate the run time: collect the first few failures instead.
      const failures: string[] = [];
      const check = (ok: boolean, what: string, t: number, d: Decision) => {
        if (!ok && failures.length < 5) failures.push(`${what} at ${t} for ${JSON.stringify(d)}`);
      };

      while (next < end || pending.length > 0) {
        let t: number;
        let who: number;
        const retry = pending[0];
        if (retry && (retry.t <= next || next >= end)) {
          pending.shift();
          ({ t, who } = retry);
          if (t >= end) continue;
        } else {
          if (burst.left === 0) {
            burst = { who: Math.floor(rand() * subjects.length), left: 1 + Math.floor(rand() ** 2 * 200) };
          }
          t = next;
          who = burst.who;
          burst.left--;
          const r = rand();
          if (burst.left > 0) next += r < 0.1 ? 0 : Math.floor(rand() * 400);
          else next += Math.floor(r < 0.6 ? rand() * 30_000 : r < 0.9 ? rand() * 300_000 : rand() * 7_200_000);
        }
        clock.set(t);
        const s = subjects[who] as Subject;
        const seen = events.length;
        const d = limiter.decide(s);
        decisions++;
        const log = admitted[who] as number[];
        if (d.outcome === 'admitted') log.push(t);
        if (d.outcome === 'rate_limited') (refusals[who] as number[]).push(t);
        // A ban starts on the 4th refusal counted over 60-61 s: three 429s, then this one.
        const banRefusals = refusals[2] as number[];
        for (const e of events.slice(seen)) {
          if (e.type === 'ban_end') check(d.outcome !== 'key_banned', 'ban_end while banned', t, d);
          else check(d.outcome === 'key_banned' && countIn(banRefusals, t - 61_000, t) >= 3, 'early ban', t, d);
        }
        if (who === 2 && d.outcome === 'rate_limited') check(countIn(banRefusals, t - 59_000, t) <= 3, 'no ban', t, d);

        // Each window's count is between the exact counts over W and over W + b.
        for (const w of WINDOWS) {
          const state = d.windows[w.index];
          const quota = w.quota(s.limits);
          if (!state) throw new Error('missing window');
          check(state.remaining <= Math.max(0, quota - countIn(log, t - w.ms, t)), 'counts less than W', t, d);
          check(
            state.remaining >= Math.max(0, quota - countIn(log, t - w.ms - w.bucketMs, t)),
            'counts more than W+b',
            t,
            d,
          );
          check(state.reset >= d.now && state.reset <= Math.ceil(t / 1000) + w.ms / 1000, 'reset out of range', t, d);
        }
        check(d.now === Math.floor(t / 1000), 'now', t, d);

        const promise = promised[who];
        if (d.outcome === 'key_banned') {
          check(s.id === 's:bans', 'banned without bans', t, d);
          promised[who] = undefined;
        } else if (promise !== undefined && t < promise) {
          // Nothing was admitted since the 429, so the promise stands, to the millisecond.
          check(d.outcome === 'rate_limited', 'admitted before the promise', t, d);
        } else if (promise !== undefined) {
          check(d.outcome === 'admitted', 'refused after the promise', t, d);
          promised[who] = undefined;
        }
        if (d.outcome === 'rate_limited') {
          const zero = d.windows.filter((w) => w.remaining === 0);
          check(Math.max(...zero.map((w) => w.reset)) === d.now + d.retryAfter, 'reset != now + retryAfter', t, d);
          // Admission resumes on the whole second now + retryAfter, and not a millisecond sooner.
          const resumes = (d.now + d.retryAfter) * 1000;
          check(promise === undefined || resumes === promise, 'promise moved', t, d);
          promised[who] = resumes;
          const until = t + d.retryAfter * 1000;
          // Some clients retry right on time, some a second early.
          const r = rand();
          const at = r < 0.3 ? until : r < 0.4 && d.retryAfter > 1 ? until - 1000 : undefined;
          if (at !== undefined) {
            const i = pending.findIndex((p) => p.t > at);
            pending.splice(i < 0 ? pending.length : i, 0, { t: at, who });
          }
        }
      }

      expect(failures).toEqual([]);
      for (const [who, s] of subjects.entries()) {
        const log = admitted[who] as number[];
        for (const w of WINDOWS) {
          // Two-pointer sweep: the most admitted in any (t - W, t].
          let most = 0;
          for (let i = 0, j = 0; j < log.length; j++) {
            while ((log[i] as number) <= (log[j] as number) - w.ms) i++;
            most = Math.max(most, j - i + 1);
          }
          expect(most).toBeLessThanOrEqual(w.quota(s.limits));
          expect(most).toBeGreaterThanOrEqual(Math.min(w.quota(s.limits), 1));
        }
        expect((refusals[who] as number[]).length).toBeGreaterThan(0);
      }
      expect(decisions).toBeGreaterThan(20_000);

      // Bans happened, and each start is followed by one end.
      expect(events.filter((e) => e.type === 'ban_start').length).toBeGreaterThan(0);
      expect(events.map((e) => e.type).join(' ')).toMatch(/^(ban_start ban_end ?)*(ban_start)?$/);
    },
  );
});

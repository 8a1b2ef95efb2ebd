import { describe, expect, test } from 'bun:test';
import type { Decision, Outcome, WindowState } from '../core/decision.ts';
import type { Limits } from '../keys/plans.ts';
import { SlidingWindowLimiter } from './limiter/in-process.ts';
import type { Subject } from './limiter/limiter.ts';
import { bindingWindow, rateLimitHeaders } from './rate-limit-headers.ts';

const T0 = 1_700_000_000_000;
const T0S = T0 / 1000;
const FREE_POLICY = '"minute";q=60;w=60, "day";q=1000;w=86400';

function setup(limits: Limits = { perMinute: 60, perDay: 1000 }, ban = { threshold: 1_000, seconds: 900 }) {
  let t = T0;
  const limiter = new SlidingWindowLimiter({ clock: { now: () => t } });
  const s: Subject = { id: 'key:acme', keyless: false, plan: 'free', label: 'acme', limits, ban };
  return {
    at: (ms: number) => {
      t = T0 + ms;
    },
    decide: () => limiter.decide(s),
  };
}

/** A hand-made decision at T0S: windows as [limit, remaining, seconds until reset]. */
function decision(outcome: Outcome, retryAfter: number, minute: number[], day: number[]): Decision {
  const window = (name: 'minute' | 'day', seconds: number, [limit = 0, remaining = 0, t = 0]: number[]) =>
    ({ name, seconds, limit, remaining, reset: T0S + t }) satisfies WindowState;
  return { outcome, now: T0S, retryAfter, windows: [window('minute', 60, minute), window('day', 86_400, day)] };
}

describe('rateLimitHeaders from the limiter', () => {
  test('a fresh free key: limit 60, remaining 59, the minute binds', () => {
    const { decide } = setup();
    expect(rateLimitHeaders(decide())).toEqual({
      'X-RateLimit-Limit': '60',
      'X-RateLimit-Remaining': '59',
      'X-RateLimit-Reset': String(T0S + 60),
      'RateLimit-Policy': FREE_POLICY,
      RateLimit: '"minute";r=59;t=60, "day";r=999;t=86400',
    });
    expect(rateLimitHeaders(decide())['X-RateLimit-Remaining']).toBe('58');
  });

  test('the 61st request in a minute: 429 headers, Reset = now + Retry-After', () => {
    const { at, decide } = setup();
    for (let i = 0; i < 60; i++) decide();
    at(30_400);
    expect(rateLimitHeaders(decide())).toEqual({
      'X-RateLimit-Limit': '60',
      'X-RateLimit-Remaining': '0',
      'X-RateLimit-Reset': String(T0S + 60),
      'RateLimit-Policy': FREE_POLICY,
      RateLimit: '"minute";r=0;t=30, "day";r=940;t=86370',
      'Retry-After': '30',
    });
  });

  test('the day binds once its remaining is the smaller, admitted and refused', () => {
    const { at, decide } = setup({ perMinute: 60, perDay: 100 });
    const policy = '"minute";q=60;w=60, "day";q=100;w=86400';
    for (let i = 0; i < 95; i++) {
      at(Math.floor(i / 50) * 60_000 + (i % 50) * 1000);
      decide();
    }
    // At 104 s, the 96th: the minute holds 51 (45..49 s and 60..104 s), the day 96.
    expect(rateLimitHeaders(decide())).toEqual({
      'X-RateLimit-Limit': '100',
      'X-RateLimit-Remaining': '4',
      'X-RateLimit-Reset': String(T0S + 86_400),
      'RateLimit-Policy': policy,
      RateLimit: '"minute";r=9;t=1, "day";r=4;t=86296',
    });
    for (let i = 0; i < 4; i++) decide();
    at(120_000);
    expect(rateLimitHeaders(decide())).toEqual({
      'X-RateLimit-Limit': '100',
      'X-RateLimit-Remaining': '0',
      'X-RateLimit-Reset': String(T0S + 86_400),
      'RateLimit-Policy': policy,
      RateLimit: '"minute";r=11;t=1, "day";r=0;t=86280',
      'Retry-After': '86280',
    });
  });

  test('banned: every window says r=0, Reset is the end of the ban, reported on the day window', () => {
    const { decide } = setup({ perMinute: 1, perDay: 1000 }, { threshold: 1, seconds: 900 });
    decide();
    expect(rateLimitHeaders(decide())).toEqual({
      'X-RateLimit-Limit': '1000',
      'X-RateLimit-Remaining': '0',
      'X-RateLimit-Reset': String(T0S + 900),
      'RateLimit-Policy': '"minute";q=1;w=60, "day";q=1000;w=86400',
      RateLimit: '"minute";r=0;t=900, "day";r=0;t=86400',
      'Retry-After': '900',
    });
  });
});

describe('bindingWindow', () => {
  test('fewest remaining; a tie goes to the shorter window', () => {
    expect(bindingWindow(decision('admitted', 0, [10, 3, 20], [10, 3, 80_000])).name).toBe('minute');
    expect(bindingWindow(decision('admitted', 0, [10, 3, 20], [10, 2, 80_000])).name).toBe('day');
    expect(bindingWindow(decision('admitted', 0, [10, 0, 20], [10, 0, 80_000])).name).toBe('minute');
  });

  test('a 429 reports the window Retry-After waits for; equal waits go to the shorter', () => {
    const both = decision('rate_limited', 5_000, [60, 0, 20], [100, 0, 5_000]);
    expect(bindingWindow(both).name).toBe('day');
    expect(rateLimitHeaders(both)).toMatchObject({
      'X-RateLimit-Limit': '100',
      'X-RateLimit-Reset': String(T0S + 5_000),
      'Retry-After': '5000',
    });
    expect(bindingWindow(decision('rate_limited', 20, [60, 0, 20], [100, 0, 20])).name).toBe('minute');
  });

  test('a ban reports the shortest window that covers it', () => {
    expect(bindingWindow(decision('key_banned', 30, [60, 5, 10], [100, 50, 80_000])).name).toBe('minute');
    expect(bindingWindow(decision('key_banned', 61, [60, 5, 10], [100, 50, 80_000])).name).toBe('day');
    expect(bindingWindow(decision('key_banned', 100_000, [60, 5, 10], [100, 50, 80_000])).name).toBe('day');
  });
});

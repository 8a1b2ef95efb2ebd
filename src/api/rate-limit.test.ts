import { describe, expect, test } from 'bun:test';
import { testApp } from '../../test/testing.ts';

/** 2026-11-22T12:00:00Z, the test clock's start. */
const T0 = Date.UTC(2026, 10, 22, 12, 0, 0) / 1000;

const rateLimitHeaders = (res: Response) => ({
  limit: res.headers.get('x-ratelimit-limit'),
  remaining: res.headers.get('x-ratelimit-remaining'),
  reset: res.headers.get('x-ratelimit-reset'),
  policy: res.headers.get('ratelimit-policy'),
  state: res.headers.get('ratelimit'),
  retryAfter: res.headers.get('retry-after'),
});

describe('GET /v1/rate_limit', () => {
  test('50 reads in a row leave every window as it was: the same body and headers each time', async () => {
    const t = testApp({ keys: [{ name: 'acme', plan: 'pro' }] });
    for (let i = 0; i < 19; i++) await t.app.request('/v1/pets', { headers: t.auth() });
    const reads = [];
    for (let i = 0; i < 50; i++) {
      const res = await t.app.request('/v1/rate_limit', { headers: t.auth() });
      reads.push({ status: res.status, body: await res.json(), headers: rateLimitHeaders(res) });
    }
    const expected = {
      status: 200,
      body: {
        consumer: 'acme',
        plan: 'pro',
        windows: [
          { name: 'minute', limit: 300, remaining: 281, reset: T0 + 60 },
          { name: 'day', limit: 10_000, remaining: 9_981, reset: T0 + 86_400 },
        ],
        ban: null,
      },
      headers: {
        limit: '300',
        remaining: '281',
        reset: String(T0 + 60),
        policy: '"minute";q=300;w=60, "day";q=10000;w=86400',
        state: '"minute";r=281;t=60, "day";r=9981;t=86400',
        retryAfter: null,
      },
    };
    expect(reads).toEqual(Array.from({ length: 50 }, () => expected));
  });

  test('its numbers are the ones the requests around it show: a read after a GET equals its headers', async () => {
    const t = testApp();
    const before = await (await t.app.request('/v1/rate_limit', { headers: t.auth() })).json();
    const list = await t.app.request('/v1/pets', { headers: t.auth() });
    const after = await t.app.request('/v1/rate_limit', { headers: t.auth() });
    const body = (await after.json()) as { windows: { remaining: number; reset: number }[] };
    // Before anything was spent: every window full, nothing to wait for.
    expect(before.windows).toEqual([
      { name: 'minute', limit: 60, remaining: 60, reset: T0 },
      { name: 'day', limit: 1000, remaining: 1000, reset: T0 },
    ]);
    expect(rateLimitHeaders(list)).toMatchObject({ remaining: '59', state: '"minute";r=59;t=60, "day";r=999;t=86400' });
    expect(body.windows.map((w) => [w.remaining, w.reset])).toEqual([
      [59, T0 + 60],
      [999, T0 + 86_400],
    ]);
    expect(rateLimitHeaders(after)).toEqual(rateLimitHeaders(list));
    const next = await t.app.request('/v1/pets', { headers: t.auth() });
    expect(rateLimitHeaders(next).state).toBe('"minute";r=58;t=60, "day";r=998;t=86400');
  });

  test('a banned key reads its ban: 200, the ban end, r=0 in the headers and no Retry-After', async () => {
    const t = testApp({ keys: [{ name: 'acme', plan: 'free', limits: { perMinute: 2, perDay: 100 } }] });
    const statuses = [];
    for (let i = 0; i < 5; i++) statuses.push((await t.app.request('/v1/pets', { headers: t.auth() })).status);
    // Two admitted, then two refusals: the second reaches the threshold (the per-minute quota) and
    // bans.
    expect(statuses).toEqual([200, 200, 429, 429, 429]);
    t.clock.advance(10_000);
    const res = await t.app.request('/v1/rate_limit', { headers: t.auth() });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      consumer: 'acme',
      plan: 'free',
      windows: [
        { name: 'minute', limit: 2, remaining: 0, reset: T0 + 60 },
        { name: 'day', limit: 100, remaining: 98, reset: T0 + 86_400 },
      ],
      ban: { until: T0 + 900 },
    });
    // As on every answer during a ban: the binding window is the shortest that outlasts it.
    expect(rateLimitHeaders(res)).toEqual({
      limit: '100',
      remaining: '0',
      reset: String(T0 + 900),
      policy: '"minute";q=2;w=60, "day";q=100;w=86400',
      state: '"minute";r=0;t=890, "day";r=0;t=86390',
      retryAfter: null,
    });
    // Reading it neither extends the ban nor counts as a refusal: the pets are still refused until
    // then.
    expect((await t.app.request('/v1/pets', { headers: t.auth() })).headers.get('retry-after')).toBe('890');
  });

  test('any valid key may read it, whatever its scopes', async () => {
    const t = testApp({ keys: [{ name: 'writer', plan: 'free', scopes: ['pets:write'] }] });
    const res = await t.app.request('/v1/rate_limit', { headers: t.auth() });
    expect([res.status, ((await res.json()) as { consumer: string }).consumer]).toEqual([200, 'writer']);
  });

  test('without a valid key: 401, counted against the client address like any other 401', async () => {
    const t = testApp();
    const first = await t.app.request('/v1/rate_limit');
    const second = await t.app.request('/v1/rate_limit', { headers: { Authorization: 'Bearer psk_guess' } });
    const third = await t.app.request('/v1/pets');
    expect([first.status, second.status, third.status]).toEqual([401, 401, 401]);
    expect([first, second, third].map((r) => r.headers.get('x-ratelimit-remaining'))).toEqual(['59', '58', '57']);
  });

  test('HEAD answers its headers without a body, spending nothing either', async () => {
    const t = testApp();
    const head = await t.app.request('/v1/rate_limit', { method: 'HEAD', headers: t.auth() });
    const get = await t.app.request('/v1/rate_limit', { headers: t.auth() });
    expect([head.status, await head.text(), head.headers.get('x-ratelimit-remaining')]).toEqual([200, '', '60']);
    expect(get.headers.get('x-ratelimit-remaining')).toBe('60');
  });
});

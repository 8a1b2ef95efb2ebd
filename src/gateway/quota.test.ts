import { describe, expect, test } from 'bun:test';
import { testApp } from '../../test/testing.ts';
import { createLogger } from '../log.ts';
import { Metrics } from '../metrics/registry.ts';

const T0 = Date.UTC(2026, 10, 22, 12, 0, 0) / 1000;
const json = { 'Content-Type': 'application/json' };
const PET = '{"name":"Rex","categoryId":1}';

const seen = (res: Response) => ({
  status: res.status,
  remaining: res.headers.get('x-ratelimit-remaining'),
  state: res.headers.get('ratelimit'),
});

describe('costs per operation', () => {
  test('createPet at 5 of 12 a minute: two 201s, a third POST refused whole while GETs pass until the minute is spent', async () => {
    const t = testApp({
      keys: [{ name: 'acme', plan: 'free', limits: { perMinute: 12, perDay: 1000 }, costs: { createPet: 5 } }],
    });
    const post = () => t.app.request('/v1/pets', { method: 'POST', headers: { ...t.auth(), ...json }, body: PET });
    const get = () => t.app.request('/v1/pets', { headers: t.auth() });
    const answers = [];
    for (const send of [post, post, post, get, get, get, post]) answers.push(seen(await send()));
    expect(answers).toEqual([
      { status: 201, remaining: '7', state: '"minute";r=7;t=60, "day";r=995;t=86400' },
      { status: 201, remaining: '2', state: '"minute";r=2;t=60, "day";r=990;t=86400' },
      // Refused whole: 5 does not fit in 2, and nothing is spent (r stays 2).
      { status: 429, remaining: '0', state: '"minute";r=2;t=60, "day";r=990;t=86400' },
      { status: 200, remaining: '1', state: '"minute";r=1;t=60, "day";r=989;t=86400' },
      { status: 200, remaining: '0', state: '"minute";r=0;t=60, "day";r=988;t=86400' },
      { status: 429, remaining: '0', state: '"minute";r=0;t=60, "day";r=988;t=86400' },
      { status: 429, remaining: '0', state: '"minute";r=0;t=60, "day";r=988;t=86400' },
    ]);
    const pets = (await (await get()).json()) as unknown[] | { code: string };
    expect(pets).toMatchObject({ code: 'rate_limited' });
    t.clock.advance(61_000);
    expect(((await (await get()).json()) as unknown[]).length).toBe(2);
  });

  test('at exactly 10 a minute and a cost of 5, two creates spend the whole minute', async () => {
    const t = testApp({
      keys: [{ name: 'acme', plan: 'free', limits: { perMinute: 10, perDay: 1000 }, costs: { createPet: 5 } }],
    });
    const post = () => t.app.request('/v1/pets', { method: 'POST', headers: { ...t.auth(), ...json }, body: PET });
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await post()).status);
    statuses.push((await t.app.request('/v1/pets', { headers: t.auth() })).status);
    expect(statuses).toEqual([201, 201, 429, 429]);
  });

  test('getRateLimit costs 0 whatever the costs say, and an operation not named costs 1', async () => {
    const t = testApp({ keys: [{ name: 'acme', plan: 'free', costs: { createPet: 3 } }] });
    await t.app.request('/v1/pets/1', { headers: t.auth() });
    const res = await t.app.request('/v1/rate_limit', { headers: t.auth() });
    expect(res.headers.get('x-ratelimit-remaining')).toBe('59');
  });
});

describe('the calendar month (UTC)', () => {
  const LAST_SECOND = Date.UTC(2026, 10, 30, 23, 59, 59);
  const DECEMBER = Date.UTC(2026, 11, 1) / 1000;

  test('at 23:59:59 UTC on 30 November a spent month waits one second, to 00:00 UTC on the 1st', async () => {
    const t = testApp({
      start: LAST_SECOND,
      keys: [{ name: 'acme', plan: 'pro', limits: { perMinute: 300, perDay: 10_000, perMonth: 3 } }],
    });
    const get = () => t.app.request('/v1/pets', { headers: t.auth() });
    const answers = [];
    for (let i = 0; i < 4; i++) {
      const res = await get();
      answers.push({
        ...seen(res),
        reset: res.headers.get('x-ratelimit-reset'),
        retry: res.headers.get('retry-after'),
      });
    }
    const now = LAST_SECOND / 1000;
    const state = (r: number, day: number) =>
      `"minute";r=${300 - (3 - r)};t=60, "day";r=${day};t=86400, "month";r=${r};t=1`;
    expect(answers).toEqual([
      { status: 200, remaining: '2', state: state(2, 9999), reset: String(DECEMBER), retry: null },
      { status: 200, remaining: '1', state: state(1, 9998), reset: String(DECEMBER), retry: null },
      { status: 200, remaining: '0', state: state(0, 9997), reset: String(DECEMBER), retry: null },
      { status: 429, remaining: '0', state: state(0, 9997), reset: String(now + 1), retry: '1' },
    ]);
    const policy = (await get()).headers.get('ratelimit-policy');
    // November has 30 days: w is its length in seconds.
    expect(policy).toBe('"minute";q=300;w=60, "day";q=10000;w=86400, "month";q=3;w=2592000');
    t.clock.advance(1_000);
    const december = await t.app.request('/v1/rate_limit', { headers: t.auth() });
    expect(((await december.json()) as { windows: unknown[] }).windows[2]).toEqual({
      name: 'month',
      limit: 3,
      remaining: 3,
      reset: Date.UTC(2027, 0, 1) / 1000,
    });
    const next = await get();
    expect([next.status, next.headers.get('ratelimit-policy')]).toEqual([
      200,
      '"minute";q=300;w=60, "day";q=10000;w=86400, "month";q=3;w=2678400',
    ]);
  });
});

describe('report-only limits ("enforce": false)', () => {
  test('100 requests over a limit of 10: none refused, 90 counted as would-be refusals, headers at 0, one log line a minute', async () => {
    const lines: Record<string, unknown>[] = [];
    const metrics = new Metrics({ version: 'test', runtime: 'bun' });
    const t = testApp({
      keys: [{ name: 'trial', plan: 'free', limits: { perMinute: 10, perDay: 1000 }, enforce: false }],
      log: createLogger({ write: (l) => lines.push(JSON.parse(l)), level: 'warn' }),
      metrics,
    });
    const answers = [];
    for (let i = 0; i < 100; i++) {
      const res = await t.app.request('/v1/pets', { headers: t.auth() });
      answers.push({ status: res.status, remaining: res.headers.get('x-ratelimit-remaining') });
    }
    expect(answers.filter((a) => a.status !== 200)).toEqual([]);
    expect(answers.slice(8, 12).map((a) => a.remaining)).toEqual(['1', '0', '0', '0']);
    expect(answers.at(-1)).toEqual({ status: 200, remaining: '0' });
    const counted = (await metrics.render()).split('\n').filter((l) => l.startsWith('petstore_ratelimit_would_refuse'));
    expect(counted).toEqual(['petstore_ratelimit_would_refuse_total{consumer="trial",window="minute"} 90']);
    const logged = () => lines.filter((l) => l.msg === 'report-only limit exceeded; the request was served');
    expect(logged().map((l) => [l.consumer, l.window])).toEqual([['trial', 'minute']]);
    // Counted as if enforced: the quota is back a minute later; and a minute on, logged again.
    t.clock.advance(61_000);
    const back = await t.app.request('/v1/pets', { headers: t.auth() });
    expect(back.headers.get('x-ratelimit-remaining')).toBe('9');
    for (let i = 0; i < 10; i++) await t.app.request('/v1/pets', { headers: t.auth() });
    expect(logged()).toHaveLength(2);
    // 90 refusals would have banned an enforced key (threshold 10): none of the 111 was refused,
    // and no ban is on.
    const quota = await (await t.app.request('/v1/rate_limit', { headers: t.auth() })).json();
    expect(quota).toMatchObject({ consumer: 'trial', ban: null, windows: [{ name: 'minute', remaining: 0 }, {}] });
  });

  test('a report-only answer carries the numbers as if enforced, without Retry-After', async () => {
    const t = testApp({
      keys: [{ name: 'trial', plan: 'free', limits: { perMinute: 1, perDay: 1000 }, enforce: false }],
    });
    await t.app.request('/v1/pets', { headers: t.auth() });
    t.clock.advance(20_000);
    const res = await t.app.request('/v1/pets', { headers: t.auth() });
    expect([res.status, res.headers.get('x-ratelimit-reset'), res.headers.get('retry-after')]).toEqual([
      200,
      String(T0 + 60),
      null,
    ]);
  });
});

import { describe, expect, test } from 'bun:test';
import { fakeClock, testApp, tokenFor } from '../../test/testing.ts';
import { createApp } from '../app.ts';
import { TrustedProxies } from '../core/addresses.ts';
import { parseKeys } from '../keys/file.ts';
import { hashToken } from '../keys/records.ts';
import { KeyTable } from '../keys/table.ts';
import { createLogger } from '../log.ts';
import { MemoryStore } from '../store/memory-store.ts';
import { SlidingWindowLimiter } from './limiter/in-process.ts';

const T0 = Date.UTC(2026, 10, 22, 12, 0, 0) / 1000;

function limitHeaders(res: Response) {
  return {
    limit: res.headers.get('x-ratelimit-limit'),
    remaining: res.headers.get('x-ratelimit-remaining'),
    reset: res.headers.get('x-ratelimit-reset'),
    retryAfter: res.headers.get('retry-after'),
  };
}

describe('rate-limit headers on every status', () => {
  test('a fresh free key counts down 59, 58, 57 with Limit 60 and Reset one minute ahead', async () => {
    const t = testApp();
    const seen = [];
    for (let i = 0; i < 3; i++) seen.push(limitHeaders(await t.app.request('/v1/pets', { headers: t.auth() })));
    expect(seen).toEqual([
      { limit: '60', remaining: '59', reset: String(T0 + 60), retryAfter: null },
      { limit: '60', remaining: '58', reset: String(T0 + 60), retryAfter: null },
      { limit: '60', remaining: '57', reset: String(T0 + 60), retryAfter: null },
    ]);
    const res = await t.app.request('/v1/pets', { headers: t.auth() });
    expect(res.headers.get('ratelimit-policy')).toBe('"minute";q=60;w=60, "day";q=1000;w=86400');
    expect(res.headers.get('ratelimit')).toBe('"minute";r=56;t=60, "day";r=996;t=86400');
  });

  const statuses: Array<[number, string, RequestInit]> = [
    [200, '/v1/pets', {}],
    [
      201,
      '/v1/pets',
      { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{"name":"a","categoryId":1}' },
    ],
    [400, '/v1/pets?limit=0', {}],
    [404, '/v1/pets/99', {}],
    [405, '/v1/pets', { method: 'DELETE' }],
    [413, '/v1/pets', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: 'x'.repeat(70_000) }],
    [415, '/v1/pets', { method: 'POST', headers: { 'Content-Type': 'text/plain' }, body: 'x' }],
  ];
  test.each(statuses)('%i carries X-RateLimit-* and counts against the key', async (status, path, init) => {
    const t = testApp();
    await t.app.request('/v1/pets', { headers: t.auth() });
    const res = await t.app.request(path, { ...init, headers: { ...t.auth(), ...(init.headers as object) } });
    expect(res.status).toBe(status);
    expect(limitHeaders(res)).toEqual({ limit: '60', remaining: '58', reset: String(T0 + 60), retryAfter: null });
  });

  test('401 carries the per-address counters', async () => {
    const t = testApp();
    const res = await t.app.request('/v1/pets', { headers: { Authorization: 'Bearer psk_guess' } });
    expect(res.status).toBe(401);
    expect(limitHeaders(res)).toEqual({ limit: '60', remaining: '59', reset: String(T0 + 60), retryAfter: null });
  });
});

describe('over the limit', () => {
  test('the 61st request in a minute is a 429 whose Retry-After is honoured exactly', async () => {
    const t = testApp();
    for (let i = 0; i < 60; i++) {
      t.clock.advance(500);
      expect((await t.app.request('/v1/pets', { headers: t.auth() })).status).toBe(200);
    }
    // 60 requests at T0+0.5 s ... T0+30 s; now T0+30 s.
    const refused = await t.app.request('/v1/pets', { headers: t.auth() });
    expect(refused.status).toBe(429);
    expect(refused.headers.get('content-type')).toBe('application/json');
    expect(await refused.json()).toEqual({
      code: 'rate_limited',
      message: 'Rate limit exceeded; retry in 31 seconds.',
      status: 429,
    });
    expect(limitHeaders(refused)).toEqual({ limit: '60', remaining: '0', reset: String(T0 + 61), retryAfter: '31' });

    t.clock.advance(30_999);
    expect((await t.app.request('/v1/pets', { headers: t.auth() })).status).toBe(429);
    t.clock.advance(1);
    const again = await t.app.request('/v1/pets', { headers: t.auth() });
    expect(again.status).toBe(200);
    // The requests at T0+0.5 s and T0+1 s shared the bucket that ended at T0+1 s: both left.
    expect(again.headers.get('x-ratelimit-remaining')).toBe('1');
  });

  test('each refusal names its own wait, however often the same wait comes back', async () => {
    const t = testApp({
      keys: [
        { name: 'small', plan: 'free', limits: { perMinute: 1, perDay: 100 }, ban: { threshold: 100, seconds: 60 } },
      ],
    });
    expect((await t.app.request('/v1/pets', { headers: t.auth() })).status).toBe(200);
    const waits: [string | null, unknown][] = [];
    for (const step of [1_000, 0, 10_000, 0, 1_000]) {
      t.clock.advance(step);
      const res = await t.app.request('/v1/pets', { headers: t.auth() });
      waits.push([res.headers.get('retry-after'), ((await res.json()) as { message: unknown }).message]);
    }
    expect(waits).toEqual([
      ['59', 'Rate limit exceeded; retry in 59 seconds.'],
      ['59', 'Rate limit exceeded; retry in 59 seconds.'],
      ['49', 'Rate limit exceeded; retry in 49 seconds.'],
      ['49', 'Rate limit exceeded; retry in 49 seconds.'],
      ['48', 'Rate limit exceeded; retry in 48 seconds.'],
    ]);
  });

  test('refused requests do not consume quota', async () => {
    const t = testApp({ keys: [{ name: 'small', plan: 'free', limits: { perMinute: 2, perDay: 100 } }] });
    await t.app.request('/v1/pets', { headers: t.auth() });
    await t.app.request('/v1/pets', { headers: t.auth() });
    expect((await t.app.request('/v1/pets', { headers: t.auth() })).status).toBe(429);
    t.clock.advance(60_000);
    const res = await t.app.request('/v1/pets', { headers: t.auth() });
    expect(res.status).toBe(200);
    expect(res.headers.get('ratelimit')).toBe('"minute";r=1;t=60, "day";r=97;t=86340');
  });

  test('a key that keeps pushing is banned for 15 minutes; another key is not affected', async () => {
    const lines: string[] = [];
    const t = testApp({
      keys: [
        { name: 'pushy', plan: 'free', limits: { perMinute: 3, perDay: 1000 } },
        { name: 'calm', plan: 'free' },
      ],
      log: createLogger({ write: (l) => lines.push(l) }),
    });
    const pushy = t.auth('pushy');
    for (let i = 0; i < 3; i++) expect((await t.app.request('/v1/pets', { headers: pushy })).status).toBe(200);
    const codes = [];
    for (let i = 0; i < 3; i++) {
      const res = await t.app.request('/v1/pets', { headers: pushy });
      codes.push(((await res.json()) as { code: string }).code);
    }
    expect(codes).toEqual(['rate_limited', 'rate_limited', 'key_banned']);

    const banned = await t.app.request('/v1/pets', { headers: pushy });
    expect(banned.status).toBe(429);
    expect(await banned.json()).toEqual({
      code: 'key_banned',
      message: 'Too many requests after being limited; banned for 900 more seconds.',
      status: 429,
    });
    expect(banned.headers.get('retry-after')).toBe('900');
    expect(banned.headers.get('x-ratelimit-reset')).toBe(String(T0 + 900));

    expect((await t.app.request('/v1/pets', { headers: t.auth('calm') })).status).toBe(200);

    t.clock.advance(600_000);
    expect((await t.app.request('/v1/pets', { headers: pushy })).headers.get('retry-after')).toBe('300');
    t.clock.advance(300_000);
    expect((await t.app.request('/v1/pets', { headers: pushy })).status).toBe(200);
  });

  test('the number of refusals and the ban length are configurable per key', async () => {
    const t = testApp({
      keys: [
        { name: 'k', plan: 'pro', limits: { perMinute: 1, perDay: 10 }, ban: { seconds: 60, threshold: 1 } } as never,
      ],
    });
    await t.app.request('/v1/pets', { headers: t.auth() });
    const res = await t.app.request('/v1/pets', { headers: t.auth() });
    expect(((await res.json()) as { code: string }).code).toBe('key_banned');
    expect(res.headers.get('retry-after')).toBe('60');
  });
});

describe('callers without a valid key', () => {
  function appWith(trust: string[]) {
    const clock = fakeClock();
    const table = new KeyTable(
      parseKeys(
        JSON.stringify({ keys: [{ name: 'acme', plan: 'free', sha256: hashToken(tokenFor('acme')).toString('hex') }] }),
      ),
    );
    const proxies = new TrustedProxies(trust);
    const app = createApp({
      store: new MemoryStore(),
      keyTable: () => table,
      limiter: new SlidingWindowLimiter({ clock }),
      clock,
      clientAddress: (c) => proxies.clientAddress(c.req.header('x-test-peer') ?? '', c.req.header('x-forwarded-for')),
    });
    const from = (peer: string, xff?: string) =>
      app.request('/v1/pets', {
        headers: { Authorization: 'Bearer psk_guess', 'X-Test-Peer': peer, ...(xff ? { 'X-Forwarded-For': xff } : {}) },
      });
    return { app, from };
  }

  test('are limited per address with the free plan: the 61st guess is a 429, not a 401', async () => {
    const { from } = appWith([]);
    for (let i = 0; i < 60; i++) expect((await from('198.51.100.7')).status).toBe(401);
    const res = await from('198.51.100.7');
    expect(res.status).toBe(429);
    expect(((await res.json()) as { code: string }).code).toBe('rate_limited');
    expect((await from('198.51.100.8')).status).toBe(401);
  });

  test('X-Forwarded-For is ignored unless the peer is a trusted proxy', async () => {
    const { from } = appWith([]);
    for (let i = 0; i < 60; i++) await from('10.0.0.1', `203.0.113.${i}`);
    expect((await from('10.0.0.1', '203.0.113.250')).status).toBe(429);
  });

  test('from a trusted proxy, each forwarded client has its own counters', async () => {
    const { from } = appWith(['10.0.0.0/8']);
    for (let i = 0; i < 60; i++) await from('10.0.0.1', '203.0.113.1');
    expect((await from('10.0.0.1', '203.0.113.1')).status).toBe(429);
    const other = await from('10.0.0.1', '203.0.113.2');
    expect(other.status).toBe(401);
    expect(other.headers.get('x-ratelimit-remaining')).toBe('59');
  });

  test('never lock out a valid key from their address: not without a key, not with bad tokens, not banned', async () => {
    const { app, from } = appWith([]);
    const keyless = () => app.request('/v1/pets', { headers: { 'X-Test-Peer': '198.51.100.9' } });
    const keyed = () =>
      app.request('/v1/pets', {
        headers: { Authorization: `Bearer ${tokenFor('acme')}`, 'X-Test-Peer': '198.51.100.9' },
      });
    expect((await keyless()).status).toBe(401);
    expect((await keyed()).headers.get('x-ratelimit-remaining')).toBe('59');
    // 60 checked bad tokens, 59 refused, the 60th refusal bans the address.
    const codes: string[] = [];
    for (let i = 0; i < 121; i++) {
      codes.push(((await (await from('198.51.100.9')).json()) as { code: string }).code);
    }
    expect(codes.at(-1)).toBe('key_banned');
    expect((await keyless()).status).toBe(429);
    const res = await keyed();
    expect([res.status, res.headers.get('x-ratelimit-remaining')]).toEqual([200, '58']);
  });

  test('IPv6 callers are counted by /56, however the address is written', async () => {
    const { from } = appWith([]);
    const seen: (string | null)[] = [];
    for (const peer of [
      '2001:db8:0:1::1',
      '2001:DB8:0:ff::2%eth0',
      '2001:db8:0:100::1',
      '::ffff:192.0.2.1',
      '192.0.2.1',
    ]) {
      seen.push((await from(peer)).headers.get('x-ratelimit-remaining'));
    }
    expect(seen).toEqual(['59', '58', '59', '59', '58']);
  });
});

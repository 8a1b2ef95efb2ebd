import { afterAll, beforeAll, expect, test } from 'bun:test';
import { type Running, spawnServer, tokenOf, writeKeysFile } from '../../test/harness.ts';

let server: Running;
beforeAll(async () => {
  server = await spawnServer({
    args: [
      '--keys',
      writeKeysFile([
        { name: 'freebie', plan: 'free' },
        { name: 'other', plan: 'free' },
        {
          name: 'metered',
          plan: 'free',
          limits: { perMinute: 12, perDay: 1000, perMonth: 5000 },
          costs: { createPet: 5 },
        },
      ]),
    ],
  });
});
afterAll(async () => {
  await server.stop();
});

test('a real free key: 60 admitted with Remaining 59..0, the 61st is a 429 with Retry-After', async () => {
  const auth = { Authorization: `Bearer ${tokenOf('freebie')}` };
  const remaining: string[] = [];
  const started = Math.floor(Date.now() / 1000);
  for (let i = 0; i < 60; i++) {
    const res = await fetch(`${server.url}/v1/pets`, { headers: auth });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-ratelimit-limit')).toBe('60');
    remaining.push(res.headers.get('x-ratelimit-remaining') as string);
  }
  expect(remaining).toEqual(Array.from({ length: 60 }, (_, i) => String(59 - i)));

  const refused = await fetch(`${server.url}/v1/pets`, { headers: auth });
  const now = Math.floor(Date.now() / 1000);
  expect(refused.status).toBe(429);
  expect(refused.headers.get('content-type')).toBe('application/json');
  const body = (await refused.json()) as { code: string; status: number };
  expect([body.code, body.status]).toEqual(['rate_limited', 429]);
  const retryAfter = Number(refused.headers.get('retry-after'));
  expect(retryAfter).toBeGreaterThanOrEqual(1);
  expect(retryAfter).toBeLessThanOrEqual(61);
  expect(refused.headers.get('x-ratelimit-remaining')).toBe('0');
  const reset = Number(refused.headers.get('x-ratelimit-reset'));
  // Reset is now + Retry-After, where "now" is the server's second of the decision.
  expect(reset - retryAfter).toBeGreaterThanOrEqual(started);
  expect(reset - retryAfter).toBeLessThanOrEqual(now);
  expect(refused.headers.get('ratelimit-policy')).toBe('"minute";q=60;w=60, "day";q=1000;w=86400');

  const other = await fetch(`${server.url}/v1/pets`, { headers: { Authorization: `Bearer ${tokenOf('other')}` } });
  expect(other.status).toBe(200);
  expect(other.headers.get('x-ratelimit-remaining')).toBe('59');
});

test('a key with a month and costs: its quota read for free, creates at 5 refused whole when 2 are left', async () => {
  const auth = { Authorization: `Bearer ${tokenOf('metered')}` };
  const quota = async () => {
    const res = await fetch(`${server.url}/v1/rate_limit`, { headers: auth });
    const body = (await res.json()) as { windows: { name: string; limit: number; remaining: number; reset: number }[] };
    const date = new Date(res.headers.get('date') as string);
    const nextMonth = Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + 1, 1) / 1000;
    return { status: res.status, body, nextMonth, remaining: res.headers.get('x-ratelimit-remaining') };
  };
  const fresh = await quota();
  expect(fresh.body.windows.map(({ name, limit, remaining }) => [name, limit, remaining])).toEqual([
    ['minute', 12, 12],
    ['day', 1000, 1000],
    ['month', 5000, 5000],
  ]);
  expect(fresh.body.windows[2]?.reset).toBe(fresh.nextMonth);
  const create = () =>
    fetch(`${server.url}/v1/pets`, {
      method: 'POST',
      headers: { ...auth, 'Content-Type': 'application/json' },
      body: '{"name":"Rex","categoryId":1}',
    }).then((r) => r.status);
  expect([await create(), await create(), await create()]).toEqual([201, 201, 429]);
  const spent = await quota();
  expect([spent.status, spent.remaining]).toEqual([200, '2']);
  expect(spent.body.windows.map((w) => w.remaining)).toEqual([2, 990, 4990]);
});

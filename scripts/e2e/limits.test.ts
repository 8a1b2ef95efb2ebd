import { afterAll, beforeAll, expect, test } from 'bun:test';
import { type Running, startServer, tokenOf, writeKeysFile } from '../../test/harness.ts';

let server: Running;
beforeAll(async () => {
  server = await startServer({
    args: [
      '--keys',
      writeKeysFile([
        { name: 'freebie', plan: 'free' },
        { name: 'other', plan: 'free' },
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

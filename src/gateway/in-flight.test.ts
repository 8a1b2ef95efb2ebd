import { describe, expect, test } from 'bun:test';
import { fakeStore } from '../../test/fake-store.ts';
import { fakeClock, tokenFor } from '../../test/testing.ts';
import { createApp } from '../app.ts';
import { parseKeys } from '../keys/file.ts';
import { hashToken } from '../keys/records.ts';
import { KeyTable } from '../keys/table.ts';
import { MemoryStore } from '../store/memory-store.ts';
import { SlidingWindowLimiter } from './limiter/in-process.ts';
import type { RateLimiter } from './limiter/limiter.ts';

describe('requests one consumer has in flight (--max-in-flight)', () => {
  /** A store whose creates wait until `release()`, so requests stay in flight. */
  function blockingStore() {
    const waiting: Array<() => void> = [];
    const { store } = fakeStore({
      replace: (memory) => ({
        create: async (pet) => {
          await new Promise<void>((resolve) => waiting.push(resolve));
          return memory.create(pet);
        },
      }),
    });
    const release = () => {
      for (const go of waiting.splice(0)) go();
    };
    return { store, waiting, release };
  }

  function appWith(maxInFlight: number) {
    const clock = fakeClock();
    const { store, waiting, release } = blockingStore();
    const entries = ['busy', 'calm'].map((name) => ({
      name,
      plan: 'pro',
      sha256: hashToken(tokenFor(name)).toString('hex'),
    }));
    const table = new KeyTable(parseKeys(JSON.stringify({ keys: entries })));
    const app = createApp({
      store,
      keyTable: () => table,
      limiter: new SlidingWindowLimiter({ clock }),
      clock,
      maxInFlight,
      clientAddress: () => '192.0.2.1',
    });
    const auth = (name: string) => ({ Authorization: `Bearer ${tokenFor(name)}` });
    const post = (name: string) =>
      app.request('/v1/pets', {
        method: 'POST',
        headers: { ...auth(name), 'Content-Type': 'application/json' },
        body: '{"name":"Rex","categoryId":1}',
      });
    return { app, auth, post, waiting, release };
  }

  const settle = async (waiting: unknown[], n: number) => {
    for (let i = 0; i < 100 && waiting.length < n; i++) await Bun.sleep(1);
    expect(waiting.length).toBe(n);
  };

  test('reading the quota takes a slot too: refused while the cap is held, answered once a slot is free', async () => {
    const { app, auth, post, waiting, release } = appWith(1);
    const held = post('busy');
    while (waiting.length < 1) await Bun.sleep(1);
    const refused = await app.request('/v1/rate_limit', { headers: auth('busy') });
    expect([refused.status, ((await refused.json()) as { code: string }).code]).toEqual([
      429,
      'too_many_concurrent_requests',
    ]);
    release();
    expect((await held).status).toBe(201);
    const read = await app.request('/v1/rate_limit', { headers: auth('busy') });
    expect([read.status, read.headers.get('x-ratelimit-remaining')]).toEqual([200, '299']);
  });

  test('with 2 in flight the third is a 429 too_many_concurrent_requests, Retry-After 1', async () => {
    const { app, auth, post, waiting, release } = appWith(2);
    const first = [post('busy'), post('busy')];
    await settle(waiting, 2);

    const refused = await app.request('/v1/pets', { headers: auth('busy') });
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(await refused.json()).toEqual({
      code: 'too_many_concurrent_requests',
      message: "This consumer's keys already have 2 requests in flight; retry when one is done.",
      status: 429,
    });
    // Refused before the limiter decided: the headers are the latest admission's (300 - 2),
    // and it consumed no quota, like every 429.
    expect(refused.headers.get('x-ratelimit-limit')).toBe('300');
    expect(refused.headers.get('x-ratelimit-remaining')).toBe('298');
    expect(refused.headers.get('x-ratelimit-reset')).toBe(String(Date.UTC(2026, 10, 22, 12, 1, 0) / 1000));

    expect((await app.request('/v1/pets', { headers: auth('calm') })).status).toBe(200);

    release();
    expect((await Promise.all(first)).map((r) => r.status)).toEqual([201, 201]);
    const next = await app.request('/v1/pets', { headers: auth('busy') });
    expect(next.status).toBe(200);
    expect(next.headers.get('x-ratelimit-remaining')).toBe('297');
  });

  test('a request that fails still frees its place', async () => {
    const { app, auth } = appWith(1);
    for (let i = 0; i < 3; i++) {
      expect((await app.request('/v1/pets?limit=0', { headers: auth('busy') })).status).toBe(400);
    }
    expect((await app.request('/v1/pets', { headers: auth('busy') })).status).toBe(200);
  });

  test('callers without a key are not counted: they never pass the gateway', async () => {
    const { app, post, waiting, release } = appWith(1);
    const held = post('busy');
    await settle(waiting, 1);
    expect((await app.request('/v1/pets')).status).toBe(401);
    release();
    expect((await held).status).toBe(201);
  });

  test('a slow limiter: the slot is taken before it is asked, so of 5 sent at once exactly 2 wait for it', async () => {
    const clock = fakeClock();
    const real = new SlidingWindowLimiter({ clock });
    // The real limiter behind a gate, as Redis behind a slow network: nothing is decided until
    // `open()`.
    const gate: Array<() => void> = [];
    const asked: string[] = [];
    const slow: RateLimiter = {
      decide: async (subject) => {
        asked.push(subject.id);
        await new Promise<void>((resolve) => gate.push(resolve));
        return real.decide(subject);
      },
    };
    const entries = [{ name: 'busy', plan: 'pro', sha256: hashToken(tokenFor('busy')).toString('hex') }];
    const records = parseKeys(JSON.stringify({ keys: entries }));
    const table = new KeyTable(records);
    const subject = `key:${records[0]?.consumer.id}`;
    const app = createApp({ store: new MemoryStore(), keyTable: () => table, limiter: slow, clock, maxInFlight: 2 });
    const post = () =>
      app.request('/v1/pets', {
        method: 'POST',
        headers: { Authorization: `Bearer ${tokenFor('busy')}`, 'Content-Type': 'application/json' },
        body: '{"name":"Rex","categoryId":1}',
      });
    const sent = Array.from({ length: 5 }, post);
    const refused = await Promise.all(sent.slice(2));
    // Answered while the first two still wait for the limiter, which was asked twice only.
    expect(refused.map((r) => r.status)).toEqual([429, 429, 429]);
    expect(asked).toEqual([subject, subject]);
    expect(subject).toMatch(/^key:con_[0-9a-f]{32}$/);
    const body = (await refused[0]?.json()) as { code: string };
    expect(body.code).toBe('too_many_concurrent_requests');
    // Nothing decided yet: the headers show the key's full quotas, consuming none.
    expect(refused[0]?.headers.get('x-ratelimit-limit')).toBe('300');
    expect(refused[0]?.headers.get('x-ratelimit-remaining')).toBe('300');
    for (const go of gate.splice(0)) go();
    expect((await Promise.all(sent.slice(0, 2))).map((r) => r.status)).toEqual([201, 201]);
    const next = post();
    for (let i = 0; i < 100 && gate.length === 0; i++) await Bun.sleep(1);
    for (const go of gate.splice(0)) go();
    const after = await next;
    expect([after.status, after.headers.get('x-ratelimit-remaining')]).toEqual([201, '297']);
  });
});

import { describe, expect, test } from 'bun:test';
import { fakeClock } from '../../test/testing.ts';
import { createApp } from '../app.ts';
import { parseKeys } from '../keys/file.ts';
import { hashToken } from '../keys/records.ts';
import { KeyTable } from '../keys/table.ts';
import { silentLogger } from '../log.ts';
import { MemoryStore } from '../store/memory-store.ts';
import { SlidingWindowLimiter } from './limiter/in-process.ts';

const T0 = Date.UTC(2026, 10, 22, 12, 0, 0);
const iso = (ms: number) => new Date(ms).toISOString();
const sha = (token: string) => hashToken(token).toString('hex');

/** One free consumer `acme` with the given keys (token -> extra fields), on a fake clock. */
function app(keys: Record<string, object>) {
  const clock = fakeClock(T0);
  const store = new MemoryStore();
  const file = {
    consumers: [
      {
        name: 'acme',
        plan: 'free',
        keys: Object.entries(keys).map(([token, extra]) => ({ sha256: sha(token), ...extra })),
      },
    ],
  };
  const table = new KeyTable(parseKeys(JSON.stringify(file)));
  const limiter = new SlidingWindowLimiter({ clock });
  const a = createApp({
    store,
    keyTable: () => table,
    limiter,
    clock,
    log: silentLogger,
    clientAddress: () => '192.0.2.1',
  });
  const get = (token: string) => a.request('/v1/pets', { headers: { Authorization: `Bearer ${token}` } });
  const post = (token: string) =>
    a.request('/v1/pets', {
      method: 'POST',
      headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
      body: '{"name":"Rex","categoryId":1}',
    });
  return { clock, store, get, post, request: a.request.bind(a) };
}

describe('keys of one consumer', () => {
  test('share one quota: 30 on each use up the free 60, and the 61st is 429 on either', async () => {
    const t = app({ psk_one: {}, psk_two: {} });
    const remaining: string[] = [];
    for (let i = 0; i < 30; i++) {
      remaining.push((await t.get('psk_one')).headers.get('x-ratelimit-remaining') ?? '');
      remaining.push((await t.get('psk_two')).headers.get('x-ratelimit-remaining') ?? '');
    }
    expect(remaining).toEqual(Array.from({ length: 60 }, (_, i) => String(59 - i)));
    expect((await t.get('psk_one')).status).toBe(429);
    expect((await t.get('psk_two')).status).toBe(429);
  });
});

describe('scopes', () => {
  test('a read-only key creating a pet gets 403 insufficient_scope with the rate-limit headers, and nothing is stored', async () => {
    const t = app({ psk_reader: { scopes: ['pets:read'] } });
    expect((await t.get('psk_reader')).status).toBe(200);
    const res = await t.post('psk_reader');
    expect(res.status).toBe(403);
    expect(await res.json()).toEqual({
      code: 'insufficient_scope',
      message: 'The API key lacks the scope pets:write that this operation needs.',
      status: 403,
    });
    expect(res.headers.get('www-authenticate')).toBe(
      'Bearer realm="petstore", error="insufficient_scope", scope="pets:write"',
    );
    // The refused request used one of the quota (so probing scopes is not free).
    expect(res.headers.get('x-ratelimit-remaining')).toBe('58');
    expect(await t.store.list({ limit: 100 })).toEqual([]);
  });

  test('a write-only key may create but not list or get', async () => {
    const t = app({ psk_writer: { scopes: ['pets:write'] } });
    expect((await t.post('psk_writer')).status).toBe(201);
    const list = await t.get('psk_writer');
    expect(list.status).toBe(403);
    expect(list.headers.get('www-authenticate')).toContain('scope="pets:read"');
    const one = await t.request('/v1/pets/1', { headers: { Authorization: 'Bearer psk_writer' } });
    expect(one.status).toBe(403);
  });

  test('a key without scopes has both', async () => {
    const t = app({ psk_all: {} });
    expect((await t.post('psk_all')).status).toBe(201);
    expect((await t.get('psk_all')).status).toBe(200);
  });
});

describe('expiry', () => {
  test('a key is refused from its expiresAt on, with no reload, as a failed authentication, in the words of an unknown key', async () => {
    const t = app({ psk_old: { expiresAt: iso(T0 + 60_000) }, psk_plain: {} });
    expect((await t.get('psk_old')).status).toBe(200);
    t.clock.advance(59_999);
    expect((await t.get('psk_old')).status).toBe(200);
    t.clock.advance(1);
    const res = await t.get('psk_old');
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe('Bearer realm="petstore", error="invalid_token"');
    expect(await res.json()).toEqual({
      code: 'unauthorized',
      message: 'The API key is malformed or unknown.',
      status: 401,
    });
    // Counted against the client address (a fresh per-address window), not the consumer.
    expect(res.headers.get('x-ratelimit-remaining')).toBe('59');
    // The consumer's minute window holds only the request at T0 + 59.999 s.
    expect((await t.get('psk_plain')).headers.get('x-ratelimit-remaining')).toBe('58');
  });

  test('a key is refused before its notBefore and admitted from it on', async () => {
    const t = app({ psk_next: { notBefore: iso(T0 + 1_000) } });
    const res = await t.get('psk_next');
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe('Bearer realm="petstore", error="invalid_token"');
    t.clock.advance(1_000);
    expect((await t.get('psk_next')).status).toBe(200);
  });
});

describe('a consumer made again under the same name', () => {
  const FIRST = `con_${'1'.repeat(32)}`;
  const AGAIN = `con_${'2'.repeat(32)}`;

  /**
   * An app whose keys are `acme` with `id` and one key `token`, swapped by `load` as a reload does.
   */
  function reloading() {
    const clock = fakeClock(T0);
    const tableOf = (id: string, token: string) =>
      new KeyTable(
        parseKeys(
          JSON.stringify({
            consumers: [
              { id, name: 'acme', plan: 'free', ban: { seconds: 600, threshold: 2 }, keys: [{ sha256: sha(token) }] },
            ],
          }),
        ),
      );
    let table = tableOf(FIRST, 'psk_first');
    const a = createApp({
      store: new MemoryStore(),
      keyTable: () => table,
      limiter: new SlidingWindowLimiter({ clock }),
      clock,
      log: silentLogger,
      clientAddress: () => '192.0.2.1',
    });
    const get = async (token: string) => {
      const res = await a.request('/v1/pets', { headers: { Authorization: `Bearer ${token}` } });
      const body = (await res.json()) as { code?: string };
      return [res.status, body.code ?? 'ok', res.headers.get('x-ratelimit-remaining')];
    };
    return { get, load: (id: string, token: string) => (table = tableOf(id, token)) };
  }

  test('starts with fresh windows and no ban, as the limiter counts a consumer by its id', async () => {
    const t = reloading();
    for (let i = 0; i < 60; i++) await t.get('psk_first');
    // The second refusal within the minute starts the consumer's ban.
    expect(await t.get('psk_first')).toEqual([429, 'rate_limited', '0']);
    expect(await t.get('psk_first')).toEqual([429, 'key_banned', '0']);
    // Deleted, and made again as `acme` with a new id and key: nothing of the first is counted.
    t.load(AGAIN, 'psk_again');
    expect(await t.get('psk_again')).toEqual([200, 'ok', '59']);
  });

  test('the same consumer reloaded, with a new key, keeps its windows and its ban', async () => {
    const t = reloading();
    for (let i = 0; i < 62; i++) await t.get('psk_first');
    expect(await t.get('psk_first')).toEqual([429, 'key_banned', '0']);
    t.load(FIRST, 'psk_rotated');
    expect(await t.get('psk_rotated')).toEqual([429, 'key_banned', '0']);
  });
});

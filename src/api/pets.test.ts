import { describe, expect, test } from 'bun:test';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import YAML from 'yaml';
import { failingStore, fakeStore } from '../../test/fake-store.ts';
import { fakeClock, testApp, tokenFor } from '../../test/testing.ts';
import { createApp } from '../app.ts';
import { MAX_ID, NAME_MAX_LENGTH } from '../core/pet-records.ts';
import { SlidingWindowLimiter } from '../gateway/gateway.ts';
import { parseKeys } from '../keys/file.ts';
import { hashToken } from '../keys/records.ts';
import { KeyTable } from '../keys/table.ts';
import { createLogger } from '../log.ts';
import { MIN_COMPRESSED_BYTES } from '../pipeline/compress.ts';
import { IDEMPOTENCY_TTL_MS } from '../store/idempotency.ts';
import { StoreUnavailableError } from '../store/store-error.ts';
import { listPets } from './pets.ts';
import { IDEMPOTENCY_KEY_PATTERN } from './schemas.ts';

type TestApp = ReturnType<typeof testApp>;

function post(t: TestApp, body: unknown, key?: string, caller = 'acme') {
  return t.app.request('/v1/pets', {
    method: 'POST',
    headers: {
      ...t.auth(caller),
      'Content-Type': 'application/json',
      ...(key === undefined ? {} : { 'Idempotency-Key': key }),
    },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

describe('createPet with Idempotency-Key', () => {
  test('a retry with the same body answers the first 201 and stores nothing more', async () => {
    const t = testApp();
    const first = await post(t, { name: 'Rex', categoryId: 1 }, 'order-7f3a');
    expect(first.status).toBe(201);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    // Same request: field order, whitespace and an explicit default do not make it another one.
    const retry = await post(t, '{ "status": "available", "categoryId": 1, "name": "Rex" }', 'order-7f3a');
    expect(retry.status).toBe(201);
    expect(retry.headers.get('location')).toBe('pets/1');
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(retry.headers.get('x-ratelimit-remaining')).toBe('58');
    expect(await retry.json()).toEqual(await first.json());
    expect(await t.store.list({ limit: 10 })).toEqual([{ id: 1, name: 'Rex', categoryId: 1, status: 'available' }]);
  });

  test('the same key with another body is a 409 with the Error body, and stores nothing', async () => {
    const t = testApp();
    await post(t, { name: 'Rex', categoryId: 1 }, 'k');
    const res = await post(t, { name: 'Tom', categoryId: 1 }, 'k');
    expect(res.status).toBe(409);
    expect(res.headers.get('content-type')).toBe('application/json');
    expect(res.headers.get('x-ratelimit-limit')).toBe('60');
    expect(await res.json()).toEqual({
      code: 'idempotency_key_reused',
      message: 'This Idempotency-Key was used in the last 24 hours with a different request body; use a new key.',
      status: 409,
    });
    expect(await t.store.list({ limit: 10 })).toHaveLength(1);
  });

  test('keys belong to the API key that sent them, and expire after 24 h', async () => {
    const t = testApp({
      keys: [
        { name: 'acme', plan: 'free' },
        { name: 'shop', plan: 'pro' },
      ],
    });
    expect((await post(t, { name: 'Rex', categoryId: 1 }, 'k', 'acme')).headers.get('location')).toBe('pets/1');
    expect((await post(t, { name: 'Rex', categoryId: 1 }, 'k', 'shop')).headers.get('location')).toBe('pets/2');
    t.clock.advance(IDEMPOTENCY_TTL_MS - 1);
    expect((await post(t, { name: 'Rex', categoryId: 1 }, 'k', 'acme')).headers.get('location')).toBe('pets/1');
    t.clock.advance(1);
    const fresh = await post(t, { name: 'Tom', categoryId: 1 }, 'k', 'acme');
    expect(fresh.status).toBe(201);
    expect(fresh.headers.get('location')).toBe('pets/3');
  });

  test('a request refused with 400 does not use up its key', async () => {
    const t = testApp();
    expect((await post(t, { name: '', categoryId: 1 }, 'k')).status).toBe(400);
    expect((await post(t, { name: 'Tom', categoryId: 1 }, 'k')).status).toBe(201);
  });

  test.each([
    ['', 'empty'],
    ['x'.repeat(256), '256 characters'],
    ['two words', 'a space'],
    ['caf\u00e9', 'not ASCII'],
  ])('400 for a key that is %j (%s), naming the header', async (key) => {
    const t = testApp();
    const res = await post(t, { name: 'Rex', categoryId: 1 }, key);
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({
      code: 'invalid_request',
      message: 'Idempotency-Key: must be 1 to 255 visible ASCII characters (! to ~, no spaces).',
      status: 400,
    });
    expect(await t.store.list({ limit: 10 })).toEqual([]);
  });

  test('the contract documents the header with the pattern the server checks', () => {
    const doc = YAML.parse(readFileSync(join(import.meta.dir, '../../contract/openapi.yaml'), 'utf8'));
    const parameter = doc.components.parameters.IdempotencyKey;
    expect(parameter).toMatchObject({ name: 'Idempotency-Key', in: 'header', required: false });
    expect(parameter.schema.pattern).toBe(IDEMPOTENCY_KEY_PATTERN.source);
    expect(parameter.example).toMatch(IDEMPOTENCY_KEY_PATTERN);
    expect(doc.paths['/pets'].post.parameters).toEqual([{ $ref: '#/components/parameters/IdempotencyKey' }]);
  });

  test('255 visible characters, punctuation included, are a valid key', async () => {
    const t = testApp();
    const key = `${'!~"#'.repeat(63)}abc`;
    expect(key).toHaveLength(255);
    expect((await post(t, { name: 'Rex', categoryId: 1 }, key)).status).toBe(201);
    expect((await post(t, { name: 'Rex', categoryId: 1 }, key)).headers.get('idempotent-replayed')).toBe('true');
  });
});

describe('a store that cannot serve', () => {
  const store = failingStore(() => new StoreUnavailableError('store pet: disk I/O error at /var/lib/secret'));

  const clock = fakeClock();
  const keys = new KeyTable(
    parseKeys(
      JSON.stringify({ keys: [{ name: 'acme', plan: 'free', sha256: hashToken(tokenFor('acme')).toString('hex') }] }),
    ),
  );
  const lines: Record<string, unknown>[] = [];
  const app = createApp({
    store,
    keyTable: () => keys,
    limiter: new SlidingWindowLimiter({ clock }),
    clock,
    log: createLogger({ write: (l) => lines.push(JSON.parse(l)) }),
  });
  const auth = { Authorization: `Bearer ${tokenFor('acme')}` };

  test.each([
    ['GET', '/v1/pets', undefined],
    ['POST', '/v1/pets', undefined],
    ['POST', '/v1/pets', 'retry-1'],
    ['GET', '/v1/pets/1', undefined],
  ])('%s %s (Idempotency-Key %p) is a 503 service_unavailable with Retry-After: 1', async (method, path, key) => {
    lines.length = 0;
    const res = await app.request(path, {
      method,
      headers: {
        ...auth,
        'X-Request-Id': 'req-503',
        ...(method === 'POST' ? { 'Content-Type': 'application/json' } : {}),
        ...(key ? { 'Idempotency-Key': key } : {}),
      },
      body: method === 'POST' ? JSON.stringify({ name: 'Rex', categoryId: 1 }) : undefined,
    });
    expect(res.status).toBe(503);
    expect(res.headers.get('content-type')).toBe('application/json');
    expect(res.headers.get('retry-after')).toBe('1');
    expect(res.headers.get('x-ratelimit-limit')).toBe('60');
    expect(res.headers.get('ratelimit-policy')).toBe('"minute";q=60;w=60, "day";q=1000;w=86400');
    // The client learns nothing of the store's internals; the log has them.
    expect(await res.json()).toEqual({
      code: 'service_unavailable',
      message: 'The pet store is temporarily unavailable; retry shortly.',
      status: 503,
    });
    const logged = lines.find((l) => l.msg === 'store unavailable');
    expect(logged).toMatchObject({ level: 'warn', error: expect.stringContaining('disk I/O error') });
    expect(lines.some((l) => l.msg === 'unhandled error')).toBe(false);
  });
});

describe('listPets: what a page read, for the answer memo', () => {
  const pet = (id: number) => ({ id, name: `p${id}`, categoryId: 1, status: 'available' as const });
  const pageOf = async (rows: number[], query: { limit: number; cursor?: string; status?: 'available' }) => {
    const { store } = fakeStore({ replace: () => ({ list: async () => rows.map(pet) }) });
    const input = {
      query,
      params: {},
      headers: {},
      body: undefined,
      owner: 'addr:127.0.0.1',
      quota: undefined,
      keyHolder: undefined,
    };
    return (await listPets(input, { store, clock: fakeClock(0), orderHoldMs: 1000 })).reads;
  };

  test('a full page depends on every id from its cursor to its last row: a create committed late lands in it', async () => {
    // After pet 9, pets 11 and 12 read: pet 10's create may still commit (PostgreSQL gives ids
    // before commits).
    expect(await pageOf([11, 12], { limit: 1, cursor: (9).toString(36) })).toEqual({
      ids: [10, 11, 12],
      statuses: false,
    });
  });

  test('the last page depends on every create; a page of one status on any status', async () => {
    expect(await pageOf([11], { limit: 1, cursor: (9).toString(36) })).toEqual({
      ids: [11],
      members: true,
      statuses: false,
    });
    expect(await pageOf([3, 5], { limit: 1, status: 'available' })).toEqual({ ids: [1, 2, 3, 4, 5], statuses: true });
  });

  test('a full page over a wide gap of removed pets depends on every create instead of naming each id', async () => {
    expect(await pageOf([1, 5_000], { limit: 1 })).toEqual({ ids: [1, 5_000], members: true, statuses: false });
  });
});

describe("a pet's answer is never compressed", () => {
  // A pet's strong ETag names one sequence of bytes (src/core/preconditions.ts): that holds only
  // while its body stays under the compression threshold, whatever the pet holds.
  test('the longest body a pet can have is under MIN_COMPRESSED_BYTES and sent as is', async () => {
    const t = testApp();
    // 100 control characters, each written \uXXXX in JSON: the widest a name gets.
    const name = '\u0001'.repeat(NAME_MAX_LENGTH);
    const created = await post(t, { name, categoryId: MAX_ID, status: 'available' });
    expect(created.status).toBe(201);
    const res = await t.app.request('/v1/pets/1', {
      method: 'PATCH',
      headers: { ...t.auth('acme'), 'Content-Type': 'application/json', 'Accept-Encoding': 'gzip, br' },
      body: '{}',
    });
    const body = await res.text();
    expect([res.status, res.headers.get('content-encoding'), res.headers.get('etag')]).toEqual([200, null, '"1-1"']);
    expect(body).toBe(`{"id":1,"name":"${'\\u0001'.repeat(100)}","categoryId":9007199254740991,"status":"available"}`);
    expect(Buffer.byteLength(body)).toBe(669);
    expect(Buffer.byteLength(body)).toBeLessThan(MIN_COMPRESSED_BYTES);
  });
});

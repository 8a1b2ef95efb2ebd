import { describe, expect, test } from 'bun:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { testApp } from '../../test/testing.ts';
import { hashToken } from '../keys/records.ts';
import { silentLogger } from '../log.ts';
import { SqliteStore } from '../store/sqlite/sqlite.ts';
import { loadSqlite, type SqliteOpener } from '../store/sqlite/sqlite-driver.ts';

type App = ReturnType<typeof testApp>;
const JSON_HEADERS = { 'Content-Type': 'application/json' };

const addPet = async (t: App, status = 'available') =>
  t.app.request('/v1/pets', {
    method: 'POST',
    headers: { ...t.auth(), ...JSON_HEADERS },
    body: JSON.stringify({ name: 'Rex', categoryId: 1, status }),
  });
const order = (t: App, petId: unknown, who?: string, key?: string) =>
  t.app.request('/v1/store/orders', {
    method: 'POST',
    headers: { ...t.auth(who), ...JSON_HEADERS, ...(key ? { 'Idempotency-Key': key } : {}) },
    body: JSON.stringify({ petId }),
  });
const call = (t: App, path: string, who?: string, method = 'GET') =>
  t.app.request(`/v1/store/orders${path}`, { method, headers: t.auth(who) });
const petStatus = async (t: App, id: number) =>
  ((await (await t.app.request(`/v1/pets/${id}`, { headers: t.auth() })).json()) as { status: string }).status;

const TWO = [
  { name: 'a', plan: 'free' as const },
  { name: 'b', plan: 'free' as const },
];

describe('POST /v1/store/orders', () => {
  test('201 with the order and its Location; the pet is pending; a second order is 409 pet_unavailable', async () => {
    const t = testApp({ orderHoldMs: 60_000 });
    await addPet(t);
    const res = await order(t, 1);
    const body = (await res.json()) as Record<string, unknown>;
    expect(res.status).toBe(201);
    expect(body).toEqual({
      id: expect.stringMatching(/^ord_[0-9a-f]{32}$/),
      petId: 1,
      status: 'placed',
      placedAt: '2026-11-22T12:00:00.000Z',
      holdUntil: '2026-11-22T12:01:00.000Z',
    });
    expect(res.headers.get('location')).toBe(`orders/${body.id}`);
    expect(await petStatus(t, 1)).toBe('pending');
    const again = await order(t, 1);
    expect([again.status, await again.json()]).toEqual([
      409,
      { code: 'pet_unavailable', message: 'Pet 1 is not available: it is pending or sold.', status: 409 },
    ]);
  });

  test('a missing pet is 404 pet_not_found; a bad petId is 400 naming it; nothing is stored', async () => {
    const t = testApp();
    const missing = await order(t, 7);
    expect([missing.status, await missing.json()]).toEqual([
      404,
      { code: 'pet_not_found', message: 'No pet has id 7; an order needs an existing pet.', status: 404 },
    ]);
    const bad = await order(t, 'seven');
    expect([bad.status, ((await bad.json()) as { message: string }).message]).toEqual([
      400,
      'petId: must be an integer from 1 to 9007199254740991.',
    ]);
    expect(await (await call(t, '')).json()).toEqual([]);
  });

  test('a retry with the same Idempotency-Key answers the first 201; another pet with it is 409', async () => {
    const t = testApp();
    await addPet(t);
    await addPet(t);
    const first = await order(t, 1, undefined, 'buy-1');
    const retry = await order(t, 1, undefined, 'buy-1');
    expect([retry.status, retry.headers.get('idempotent-replayed'), await retry.json()]).toEqual([
      201,
      'true',
      await first.json(),
    ]);
    expect((await order(t, 2, undefined, 'buy-1')).status).toBe(409);
    expect(await petStatus(t, 2)).toBe('available');
  });

  test('a key without orders:write gets 403 naming it', async () => {
    const t = testApp({ keys: [{ name: 'reader', plan: 'free', scopes: ['pets:read', 'pets:write', 'orders:read'] }] });
    await addPet(t);
    const res = await order(t, 1);
    expect([res.status, res.headers.get('www-authenticate')]).toEqual([
      403,
      'Bearer realm="petstore", error="insufficient_scope", scope="orders:write"',
    ]);
    expect(await petStatus(t, 1)).toBe('available');
  });
});

describe('complete and cancel', () => {
  test('complete sells the pet; repeating answers 200 unchanged; cancelling it then is 409 order_closed', async () => {
    const t = testApp();
    await addPet(t);
    const { id } = (await (await order(t, 1)).json()) as { id: string };
    const done = await call(t, `/${id}/complete`, undefined, 'POST');
    expect([done.status, ((await done.json()) as { status: string }).status]).toEqual([200, 'completed']);
    expect(await petStatus(t, 1)).toBe('sold');
    const again = await call(t, `/${id}/complete`, undefined, 'POST');
    expect([again.status, ((await again.json()) as { status: string }).status]).toEqual([200, 'completed']);
    const cancel = await call(t, `/${id}/cancel`, undefined, 'POST');
    expect([cancel.status, await cancel.json()]).toEqual([
      409,
      { code: 'order_closed', message: `Order ${id} is completed: only a placed order can be cancelled.`, status: 409 },
    ]);
  });

  test('cancel makes the pet available again, and orderable', async () => {
    const t = testApp();
    await addPet(t);
    const { id } = (await (await order(t, 1)).json()) as { id: string };
    expect((await call(t, `/${id}/cancel`, undefined, 'POST')).status).toBe(200);
    expect(await petStatus(t, 1)).toBe('available');
    expect((await order(t, 1)).status).toBe(201);
  });
});

describe('a pet on order', () => {
  test('its status cannot be patched nor the pet removed (409 pet_on_order); its name can; once closed, it can', async () => {
    const t = testApp({ experimental: true });
    await addPet(t);
    const { id } = (await (await order(t, 1)).json()) as { id: string };
    const patch = (body: object) =>
      t.app.request('/v1/pets/1', {
        method: 'PATCH',
        headers: { ...t.auth(), 'Content-Type': 'application/merge-patch+json' },
        body: JSON.stringify(body),
      });
    const held = await patch({ status: 'sold' });
    expect([held.status, ((await held.json()) as { code: string }).code]).toEqual([409, 'pet_on_order']);
    const removed = await t.app.request('/v1/pets/1', { method: 'DELETE', headers: t.auth() });
    expect([removed.status, ((await removed.json()) as { code: string }).code]).toEqual([409, 'pet_on_order']);
    const renamed = await patch({ name: 'Max' });
    expect([renamed.status, ((await renamed.json()) as { status: string }).status]).toEqual([200, 'pending']);
    await call(t, `/${id}/cancel`, undefined, 'POST');
    expect((await patch({ status: 'sold' })).status).toBe(200);
    const inventory = await t.app.request('/v1/store/inventory', { headers: t.auth() });
    expect(await inventory.json()).toEqual({ available: 0, pending: 0, sold: 1 });
  });
});

describe('isolation', () => {
  test("consumer b gets 404 on a's order for get, complete and cancel, and never lists it", async () => {
    const t = testApp({ keys: TWO });
    await addPet(t);
    const { id } = (await (await order(t, 1, 'a')).json()) as { id: string };
    for (const [path, method] of [
      [`/${id}`, 'GET'],
      [`/${id}/complete`, 'POST'],
      [`/${id}/cancel`, 'POST'],
    ] as const) {
      const res = await call(t, path, 'b', method);
      expect([res.status, await res.json()]).toEqual([
        404,
        { code: 'not_found', message: `You have no order with id ${id}.`, status: 404 },
      ]);
    }
    expect(await (await call(t, '', 'b')).json()).toEqual([]);
    expect(((await (await call(t, '', 'a')).json()) as { id: string }[]).map((o) => o.id)).toEqual([id]);
    expect(await petStatus(t, 1)).toBe('pending');
  });

  test("a consumer made again under a's name with a new key sees nothing of a's, and its Idempotency-Key replays nothing", async () => {
    const t = testApp({ keys: TWO });
    await addPet(t);
    const placed = await order(t, 1, 'a', 'k');
    const { id } = (await placed.json()) as { id: string };
    // a deleted from the keys file and written again under its name with another key.
    const token = 'psk_test-token-for-a-made-again';
    t.reload({ consumers: [{ name: 'a', plan: 'free', keys: [{ sha256: hashToken(token).toString('hex') }] }] });
    const again = { Authorization: `Bearer ${token}` };
    for (const [path, method] of [
      [`/${id}`, 'GET'],
      [`/${id}/complete`, 'POST'],
      [`/${id}/cancel`, 'POST'],
    ] as const) {
      const res = await t.app.request(`/v1/store/orders${path}`, { method, headers: again });
      expect([res.status, ((await res.json()) as { code: string }).code]).toEqual([404, 'not_found']);
    }
    expect(await (await t.app.request('/v1/store/orders', { headers: again })).json()).toEqual([]);
    const retried = await t.app.request('/v1/store/orders', {
      method: 'POST',
      headers: { ...again, ...JSON_HEADERS, 'Idempotency-Key': 'k' },
      body: JSON.stringify({ petId: 1 }),
    });
    // Not a's 201 replayed: a's order still holds the pet.
    expect([retried.status, ((await retried.json()) as { code: string }).code]).toEqual([409, 'pet_unavailable']);
  });
});

describe('the hold', () => {
  test('past --order-hold the order reads expired and the pet is available, even on a memoised page', async () => {
    const t = testApp({ orderHoldMs: 2_000 });
    await addPet(t);
    const { id } = (await (await order(t, 1)).json()) as { id: string };
    // A page asked twice is memoised (src/pipeline/memo.ts); it must not outlive the hold it shows.
    for (let i = 0; i < 2; i++) await t.app.request('/v1/pets', { headers: t.auth() });
    t.clock.advance(2_000);
    const page = (await (await t.app.request('/v1/pets', { headers: t.auth() })).json()) as { status: string }[];
    expect(page.map((p) => p.status)).toEqual(['available']);
    const res = await call(t, `/${id}`);
    expect(((await res.json()) as { status: string }).status).toBe('expired');
    expect((await call(t, `/${id}/complete`, undefined, 'POST')).status).toBe(409);
    expect((await order(t, 1)).status).toBe(201);
  });

  test('on SQLite, where the expiry is a batched write, a read of the pet past the hold shows it available at the version a PATCH meets', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'petstore-hold-'));
    const opener = (await loadSqlite()) as SqliteOpener;
    const t = testApp({
      orderHoldMs: 2_000,
      storeOn: (clock) => SqliteStore.open({ path: join(dir, 'pets.db'), open: opener, log: silentLogger, clock }),
    });
    try {
      await addPet(t);
      await order(t, 1);
      t.clock.advance(2_000);
      const read = await t.app.request('/v1/pets/1', { headers: t.auth() });
      expect([read.status, await read.json(), read.headers.get('etag')]).toEqual([
        200,
        { id: 1, name: 'Rex', categoryId: 1, status: 'available' },
        '"1-3"',
      ]);
      const patch = await t.app.request('/v1/pets/1', {
        method: 'PATCH',
        headers: { ...t.auth(), ...JSON_HEADERS, 'If-Match': '"1-3"' },
        body: JSON.stringify({ name: 'Max' }),
      });
      expect([patch.status, patch.headers.get('etag')]).toEqual([200, '"1-4"']);
    } finally {
      await t.store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('GET /v1/store/orders', () => {
  test('pages exactly as listPets: limit, cursor, Link rel="next"; filtered by status', async () => {
    const t = testApp();
    for (let i = 0; i < 3; i++) await addPet(t);
    const ids: string[] = [];
    for (let pet = 1; pet <= 3; pet++) ids.push(((await (await order(t, pet)).json()) as { id: string }).id);
    ids.sort();
    await call(t, `/${ids[0]}/cancel`, undefined, 'POST');
    const first = await call(t, '?limit=2');
    expect(((await first.json()) as { id: string }[]).map((o) => o.id)).toEqual(ids.slice(0, 2));
    expect(first.headers.get('link')).toBe(`<orders?limit=2&cursor=${ids[1]}>; rel="next"`);
    const next = await call(t, `?limit=2&cursor=${ids[1]}`);
    expect([((await next.json()) as { id: string }[]).map((o) => o.id), next.headers.get('link')]).toEqual([
      ids.slice(2),
      null,
    ]);
    const cancelled = (await (await call(t, '?status=cancelled')).json()) as { id: string }[];
    expect(cancelled.map((o) => o.id)).toEqual(ids.slice(0, 1));
    const bad = await call(t, '?status=sold');
    expect([bad.status, ((await bad.json()) as { message: string }).message]).toEqual([
      400,
      'status: must be one of placed, completed, cancelled, expired.',
    ]);
  });
});

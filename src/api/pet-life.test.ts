import { describe, expect, test } from 'bun:test';
import { testApp } from '../../test/testing.ts';

type TestApp = ReturnType<typeof testApp>;

function create(t: TestApp, body: unknown, headers: Record<string, string> = {}) {
  return t.app.request('/v1/pets', {
    method: 'POST',
    headers: { ...t.auth(), 'Content-Type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
}

function get(t: TestApp, id: number, headers: Record<string, string> = {}) {
  return t.app.request(`/v1/pets/${id}`, { headers: { ...t.auth(), ...headers } });
}

describe("a pet's strong ETag", () => {
  test('create and getPet carry the same strong tag, from the id and version; If-None-Match gives 304', async () => {
    const t = testApp();
    const made = await create(t, { name: 'Rex', categoryId: 1 });
    expect(made.status).toBe(201);
    expect(made.headers.get('etag')).toBe('"1-1"');
    const read = await get(t, 1);
    expect(read.headers.get('etag')).toBe('"1-1"');
    expect(await read.json()).toEqual({ id: 1, name: 'Rex', categoryId: 1, status: 'available' });
    const again = await get(t, 1, { 'If-None-Match': '"1-1"' });
    expect(again.status).toBe(304);
    expect(again.headers.get('etag')).toBe('"1-1"');
    // Memoised and asked again: the same tag, not a weak one of the body.
    expect((await get(t, 1)).headers.get('etag')).toBe('"1-1"');
  });

  test('a create is never answered 304, whatever If-None-Match says', async () => {
    const t = testApp();
    await create(t, { name: 'Rex', categoryId: 1 });
    const second = await create(t, { name: 'Rex', categoryId: 1 }, { 'If-None-Match': '*' });
    expect(second.status).toBe(201);
    expect(second.headers.get('etag')).toBe('"2-1"');
  });

  test('list pages keep their weak tags of the body', async () => {
    const t = testApp();
    await create(t, { name: 'Rex', categoryId: 1 });
    const page = await t.app.request('/v1/pets', { headers: t.auth() });
    expect(page.headers.get('etag')).toMatch(/^W\/"[0-9a-f]{16}"$/);
  });
});

function patch(t: TestApp, id: number, body: unknown, headers: Record<string, string> = {}) {
  return t.app.request(`/v1/pets/${id}`, {
    method: 'PATCH',
    headers: { ...t.auth(), 'Content-Type': 'application/merge-patch+json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

describe('updatePet: PATCH /v1/pets/{petId}', () => {
  test('a merge patch changes the members sent; 200 with the whole pet and a new tag that getPet then shows', async () => {
    const t = testApp();
    await create(t, { name: 'Rex', categoryId: 1 });
    const res = await patch(t, 1, { name: 'Max', status: 'pending' }, { 'If-Match': '"1-1"' });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ id: 1, name: 'Max', categoryId: 1, status: 'pending' });
    expect(res.headers.get('etag')).toBe('"1-2"');
    expect(res.headers.get('deprecation')).toBeNull();
    const read = await get(t, 1);
    expect(read.headers.get('etag')).toBe('"1-2"');
    expect(await read.json()).toEqual({ id: 1, name: 'Max', categoryId: 1, status: 'pending' });
    // The old tag no longer gives 304.
    expect((await get(t, 1, { 'If-None-Match': '"1-1"' })).status).toBe(200);
    const page = await t.app.request('/v1/pets?status=pending', { headers: t.auth() });
    expect(await page.json()).toEqual([{ id: 1, name: 'Max', categoryId: 1, status: 'pending' }]);
  });

  test('application/json is read as well; {} changes nothing and answers the current tag', async () => {
    const t = testApp();
    await create(t, { name: 'Rex', categoryId: 1 });
    const res = await patch(t, 1, { categoryId: 7 }, { 'Content-Type': 'application/json' });
    expect([res.status, res.headers.get('etag')]).toEqual([200, '"1-2"']);
    const same = await patch(t, 1, {});
    expect([same.status, same.headers.get('etag')]).toEqual([200, '"1-2"']);
    expect(await same.json()).toEqual({ id: 1, name: 'Rex', categoryId: 7, status: 'available' });
    // The same values again: no change, the version stays.
    expect((await patch(t, 1, { categoryId: 7, status: 'available' })).headers.get('etag')).toBe('"1-2"');
  });

  test('a stale If-Match is a 412 that changes nothing; *, a list and the current tag pass', async () => {
    const t = testApp();
    await create(t, { name: 'Rex', categoryId: 1 });
    await patch(t, 1, { name: 'Max' });
    for (const stale of ['"1-1"', 'W/"1-2"', '"2-2"', 'garbage']) {
      const res = await patch(t, 1, { name: 'Lost' }, { 'If-Match': stale });
      expect(res.status).toBe(412);
      expect(await res.json()).toEqual({
        code: 'precondition_failed',
        message:
          'Pet 1 has changed since the ETag sent in If-Match; nothing was changed. ' +
          'Read its current ETag (PATCH with {} changes nothing and answers it), then decide again.',
        status: 412,
      });
    }
    expect(await (await get(t, 1)).json()).toMatchObject({ name: 'Max' });
    expect((await patch(t, 1, { name: 'A' }, { 'If-Match': '"1-1", "1-2"' })).headers.get('etag')).toBe('"1-3"');
    expect((await patch(t, 1, { name: 'B' }, { 'If-Match': '*' })).headers.get('etag')).toBe('"1-4"');
    // A missing pet is a 404 whatever If-Match says (RFC 9110 section 13.2.1).
    const missing = await patch(t, 9, { name: 'B' }, { 'If-Match': '*' });
    expect([missing.status, (await missing.json()).message]).toEqual([404, 'No pet has id 9.']);
  });

  test('the body is checked as a create is: unknown members, null and bad values name the field', async () => {
    const t = testApp();
    await create(t, { name: 'Rex', categoryId: 1 });
    const cases: [unknown, string][] = [
      [{ owner: 'me' }, 'owner: is not a field of the body; its fields are name, categoryId, status.'],
      [{ name: null }, 'name: must be a string of 1 to 100 characters without the NUL character U+0000.'],
      [{ categoryId: null }, 'categoryId: must be an integer from 1 to 9007199254740991.'],
      [{ status: null }, 'status: must be one of available, pending, sold.'],
      [{ status: 'lost' }, 'status: must be one of available, pending, sold.'],
      [{ name: '' }, 'name: must be a string of 1 to 100 characters without the NUL character U+0000.'],
      [[{ op: 'replace' }], 'body: must be a JSON object.'],
    ];
    for (const [body, message] of cases) {
      const res = await patch(t, 1, body);
      expect([res.status, await res.json()]).toEqual([400, { code: 'invalid_request', message, status: 400 }]);
    }
    const wrongType = await patch(t, 1, { name: 'Max' }, { 'Content-Type': 'text/plain' });
    expect(wrongType.status).toBe(415);
    expect(wrongType.headers.get('accept-patch')).toBe('application/merge-patch+json, application/json');
    expect((await wrongType.json()).message).toBe(
      'The request body must be application/merge-patch+json or application/json.',
    );
    expect((await get(t, 1)).headers.get('etag')).toBe('"1-1"');
  });

  test('status moves only along the transitions; sold is final, and the 409 names what is allowed', async () => {
    const t = testApp();
    await create(t, { name: 'Rex', categoryId: 1, status: 'sold' });
    const res = await patch(t, 1, { status: 'available', name: 'Max' });
    expect([res.status, await res.json()]).toEqual([
      409,
      {
        code: 'invalid_transition',
        message: 'status: a sold pet cannot become available; sold is final: its status never changes.',
        status: 409,
      },
    ]);
    // A sold pet's name may still be corrected.
    expect(await (await patch(t, 1, { name: 'Max', status: 'sold' })).json()).toMatchObject({ name: 'Max' });
  });

  test('a key with pets:read only may not change a pet', async () => {
    const t = testApp({ keys: [{ name: 'reader', plan: 'free', scopes: ['pets:read'] }] });
    const res = await t.app.request('/v1/pets/1', {
      method: 'PATCH',
      headers: { ...t.auth('reader'), 'Content-Type': 'application/json' },
      body: '{}',
    });
    expect(res.status).toBe(403);
  });
});

describe('deletePet: DELETE /v1/pets/{petId}', () => {
  const del = (t: TestApp, id: number, headers: Record<string, string> = {}) =>
    t.app.request(`/v1/pets/${id}`, { method: 'DELETE', headers: { ...t.auth(), ...headers } });

  test('204; then getPet is 404, no list shows it, and its id is never given again', async () => {
    const t = testApp();
    await create(t, { name: 'Rex', categoryId: 1 });
    await create(t, { name: 'Tom', categoryId: 2 });
    // Memoised first: the removal is seen at once all the same.
    await get(t, 1);
    await get(t, 1);
    expect((await del(t, 1, { 'If-Match': '"1-2"' })).status).toBe(412);
    const res = await del(t, 1, { 'If-Match': '"1-1"' });
    expect(res.status).toBe(204);
    expect(await res.text()).toBe('');
    expect(res.headers.get('x-ratelimit-remaining')).toBe('54');
    const gone = await get(t, 1);
    expect([gone.status, (await gone.json()).message]).toEqual([404, 'No pet has id 1.']);
    const page = await t.app.request('/v1/pets', { headers: t.auth() });
    expect(await page.json()).toEqual([{ id: 2, name: 'Tom', categoryId: 2, status: 'available' }]);
    expect((await del(t, 1)).status).toBe(404);
    expect((await patch(t, 1, { name: 'Ghost' })).status).toBe(404);
    expect((await create(t, { name: 'Max', categoryId: 1 })).headers.get('location')).toBe('pets/3');
  });
});

describe('createPet retried with its Idempotency-Key', () => {
  test('answers the original 201 as sent after the pet was changed, and after it was removed', async () => {
    const t = testApp();
    const key = { 'Idempotency-Key': 'order-1' };
    const first = await create(t, { name: 'Rex', categoryId: 1 }, key);
    const sent = { body: await first.text(), etag: first.headers.get('etag'), location: first.headers.get('location') };
    expect(sent).toEqual({
      body: '{"id":1,"name":"Rex","categoryId":1,"status":"available"}',
      etag: '"1-1"',
      location: 'pets/1',
    });
    const retried = async () => {
      const res = await create(t, { name: 'Rex', categoryId: 1 }, key);
      expect(res.status).toBe(201);
      expect(res.headers.get('idempotent-replayed')).toBe('true');
      return { body: await res.text(), etag: res.headers.get('etag'), location: res.headers.get('location') };
    };
    await patch(t, 1, { name: 'Max', status: 'sold' });
    expect(await retried()).toEqual(sent);
    await t.app.request('/v1/pets/1', { method: 'DELETE', headers: t.auth() });
    expect(await retried()).toEqual(sent);
    expect(await (await t.app.request('/v1/pets', { headers: t.auth() })).json()).toEqual([]);
    // Keys are the consumer's own: another consumer's same key is another request.
    const other = testApp({
      keys: [
        { name: 'acme', plan: 'free' },
        { name: 'zeta', plan: 'free' },
      ],
    });
    await create(other, { name: 'Rex', categoryId: 1 }, key);
    const theirs = await other.app.request('/v1/pets', {
      method: 'POST',
      headers: { ...other.auth('zeta'), 'Content-Type': 'application/json', ...key },
      body: JSON.stringify({ name: 'Rex', categoryId: 1 }),
    });
    expect([theirs.status, theirs.headers.get('location'), theirs.headers.get('idempotent-replayed')]).toEqual([
      201,
      'pets/2',
      null,
    ]);
  });
});

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
    // Kept by the memo and asked again: the same tag, not a weak one of the body.
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

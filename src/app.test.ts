import { describe, expect, test } from 'bun:test';
import { testApp } from '../test/testing.ts';

function post(app: ReturnType<typeof testApp>, body: string, headers: Record<string, string> = {}) {
  return app.app.request('/v1/pets', {
    method: 'POST',
    headers: { ...app.auth(), 'Content-Type': 'application/json', ...headers },
    body,
  });
}

async function expectError(res: Response, status: number, code: string, message?: string | RegExp) {
  expect(res.status).toBe(status);
  expect(res.headers.get('content-type')).toBe('application/json');
  const body = (await res.json()) as { code: string; message: string; status: number };
  expect(Object.keys(body).sort()).toEqual(['code', 'message', 'status']);
  expect(body.code).toBe(code);
  expect(body.status).toBe(status);
  if (message instanceof RegExp) expect(body.message).toMatch(message);
  else if (message !== undefined) expect(body.message).toBe(message);
  return body;
}

describe('createPet', () => {
  test('201 with the stored pet, status defaulting to available, ids increasing', async () => {
    const t = testApp();
    const first = await post(t, JSON.stringify({ name: 'Rex', categoryId: 3 }));
    expect(first.status).toBe(201);
    expect(first.headers.get('content-type')).toBe('application/json');
    expect(first.headers.get('location')).toBe('pets/1');
    expect(await first.json()).toEqual({ id: 1, name: 'Rex', categoryId: 3, status: 'available' });
    const second = await post(t, JSON.stringify({ name: 'Tom', categoryId: 9007199254740991, status: 'sold' }));
    expect(await second.json()).toEqual({ id: 2, name: 'Tom', categoryId: 9007199254740991, status: 'sold' });
  });

  test.each([
    ['{"name":', 'body: must be a JSON object; this is not valid JSON.'],
    ['', 'body: must be a JSON object; this is not valid JSON.'],
    ['[]', 'body: must be a JSON object.'],
    ['"Rex"', 'body: must be a JSON object.'],
    ['null', 'body: must be a JSON object.'],
    [
      '{"categoryId":1}',
      'name: is required; must be a string of 1 to 100 characters without the NUL character U+0000.',
    ],
    ['{"name":"Rex"}', 'categoryId: is required; must be an integer from 1 to 9007199254740991.'],
    ['{"name":"","categoryId":1}', 'name: must be a string of 1 to 100 characters without the NUL character U+0000.'],
    [
      JSON.stringify({ name: 'x'.repeat(101), categoryId: 1 }),
      'name: must be a string of 1 to 100 characters without the NUL character U+0000.',
    ],
    ['{"name":"Rex","categoryId":0}', 'categoryId: must be an integer from 1 to 9007199254740991.'],
    ['{"name":"Rex","categoryId":1.5}', 'categoryId: must be an integer from 1 to 9007199254740991.'],
    ['{"name":"Rex","categoryId":"1"}', 'categoryId: must be an integer from 1 to 9007199254740991.'],
    ['{"name":"Rex","categoryId":9007199254740993}', 'categoryId: must be an integer from 1 to 9007199254740991.'],
    ['{"name":"Rex","categoryId":1,"status":"lost"}', 'status: must be one of available, pending, sold.'],
    [
      '{"name":"Rex","categoryId":1,"owner":"me"}',
      'owner: is not a field of the body; its fields are name, categoryId, status.',
    ],
    [
      '{"name":"a\\u0000b","categoryId":1}',
      'name: must be a string of 1 to 100 characters without the NUL character U+0000.',
    ],
    [
      '{"name":"Rex","categoryId":1,"id":5}',
      'id: is not a field of the body; its fields are name, categoryId, status.',
    ],
  ])('400 for %s, and nothing is stored', async (body, message) => {
    const t = testApp();
    await expectError(await post(t, body), 400, 'invalid_request', message);
    expect(await t.store.list({ limit: 10 })).toEqual([]);
  });

  test('a name of 100 astral characters is 100 characters, not 200', async () => {
    const t = testApp();
    const res = await post(t, JSON.stringify({ name: '🐶'.repeat(100), categoryId: 1 }));
    expect(res.status).toBe(201);
  });

  test.each([
    [{ 'Content-Type': 'text/plain' }],
    [{ 'Content-Type': 'application/x-www-form-urlencoded' }],
    [{ 'Content-Type': 'application/vnd.api+json' }],
  ])('415 for a body that is not application/json (%j)', async (headers) => {
    const t = testApp();
    await expectError(
      await post(t, '{"name":"Rex","categoryId":1}', headers),
      415,
      'unsupported_media_type',
      'The request body must be application/json.',
    );
    expect(await t.store.list({ limit: 10 })).toEqual([]);
  });

  test('415 when there is no Content-Type at all', async () => {
    const t = testApp();
    const res = await t.app.request('/v1/pets', {
      method: 'POST',
      headers: t.auth(),
      body: '{"name":"Rex","categoryId":1}',
    });
    await expectError(res, 415, 'unsupported_media_type');
  });

  test('application/json with a charset is accepted', async () => {
    const t = testApp();
    const res = await post(t, '{"name":"Rex","categoryId":1}', { 'Content-Type': 'application/json; charset=utf-8' });
    expect(res.status).toBe(201);
  });

  test('413 for a body over 64 KiB, and nothing is stored', async () => {
    const t = testApp();
    const body = JSON.stringify({ name: 'Rex', categoryId: 1, pad: 'x'.repeat(64 * 1024) });
    await expectError(await post(t, body), 413, 'payload_too_large', 'The request body is larger than 65536 bytes.');
    expect(await t.store.list({ limit: 10 })).toEqual([]);
  });
});

describe('listPets', () => {
  async function seed(t: ReturnType<typeof testApp>, n: number) {
    for (let i = 1; i <= n; i++) {
      await t.store.create({ name: `pet${i}`, categoryId: 1, status: i % 3 === 0 ? 'sold' : 'available' });
    }
  }

  test('200 with pets in ascending id order, 20 by default, and a Link to the next page', async () => {
    const t = testApp();
    await seed(t, 25);
    const res = await t.app.request('/v1/pets', { headers: t.auth() });
    expect(res.status).toBe(200);
    const page = (await res.json()) as Array<{ id: number }>;
    expect(page.map((p) => p.id)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    expect(res.headers.get('link')).toBe('<pets?limit=20&cursor=k>; rel="next"');
    const next = await t.app.request('/v1/pets?limit=20&cursor=k', { headers: t.auth() });
    expect(((await next.json()) as Array<{ id: number }>).map((p) => p.id)).toEqual([21, 22, 23, 24, 25]);
    expect(next.headers.get('link')).toBeNull();
  });

  test('status filter and limit are kept in the next link', async () => {
    const t = testApp();
    await seed(t, 12);
    const res = await t.app.request('/v1/pets?status=sold&limit=2', { headers: t.auth() });
    expect(await res.json()).toEqual([
      { id: 3, name: 'pet3', categoryId: 1, status: 'sold' },
      { id: 6, name: 'pet6', categoryId: 1, status: 'sold' },
    ]);
    expect(res.headers.get('link')).toBe('<pets?limit=2&status=sold&cursor=6>; rel="next"');
    const last = await t.app.request('/v1/pets?status=sold&limit=2&cursor=6', { headers: t.auth() });
    expect(((await last.json()) as Array<{ id: number }>).map((p) => p.id)).toEqual([9, 12]);
    expect(last.headers.get('link')).toBeNull();
  });

  test('an exactly full last page has no next link', async () => {
    const t = testApp();
    await seed(t, 4);
    const res = await t.app.request('/v1/pets?limit=4', { headers: t.auth() });
    expect(((await res.json()) as unknown[]).length).toBe(4);
    expect(res.headers.get('link')).toBeNull();
  });

  test('a cursor past the end gives an empty page', async () => {
    const t = testApp();
    await seed(t, 3);
    const res = await t.app.request('/v1/pets?cursor=zzzzzzzzzzz', { headers: t.auth() });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual([]);
  });

  test.each([
    ['limit=0', 'limit: must be an integer from 1 to 100.'],
    ['limit=101', 'limit: must be an integer from 1 to 100.'],
    ['limit=abc', 'limit: must be an integer from 1 to 100.'],
    ['limit=1.5', 'limit: must be an integer from 1 to 100.'],
    ['limit=', 'limit: must be an integer from 1 to 100.'],
    ['limit=1&limit=2', 'limit: must be given once, as an integer from 1 to 100.'],
    ['status=lost', 'status: must be one of available, pending, sold.'],
    ['cursor=ABC', 'cursor: must be the cursor of a Link header (1 to 11 characters of 0-9 and a-z).'],
  ])('400 for ?%s', async (query, message) => {
    const t = testApp();
    await expectError(await t.app.request(`/v1/pets?${query}`, { headers: t.auth() }), 400, 'invalid_request', message);
  });
});

describe('getPet (deprecated)', () => {
  test('200 with the pet and the deprecation headers', async () => {
    const t = testApp();
    await t.store.create({ name: 'Rex', categoryId: 3, status: 'pending' });
    const res = await t.app.request('/v1/pets/1', { headers: t.auth() });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ id: 1, name: 'Rex', categoryId: 3, status: 'pending' });
    expect(res.headers.get('deprecation')).toBe('@1767225600');
    expect(res.headers.get('sunset')).toBe('Thu, 05 Dec 2030 00:00:00 GMT');
    expect(res.headers.get('link')).toBe('<../pets>; rel="successor-version"');
  });

  test('404 for an unknown id, still with the deprecation headers', async () => {
    const t = testApp();
    const res = await t.app.request('/v1/pets/42', { headers: t.auth() });
    await expectError(res, 404, 'not_found', 'No pet has id 42.');
    expect(res.headers.get('sunset')).toBe('Thu, 05 Dec 2030 00:00:00 GMT');
  });

  test.each([
    ['abc', 'petId: must be an integer from 1 to 9007199254740991.'],
    ['0', 'petId: must be an integer from 1 to 9007199254740991.'],
    ['-1', 'petId: must be an integer from 1 to 9007199254740991.'],
    ['9007199254740992', 'petId: must be an integer from 1 to 9007199254740991.'],
    ['99999999999999999999', 'petId: must be an integer from 1 to 9007199254740991.'],
  ])('400 for petId %s', async (id, message) => {
    const t = testApp();
    await expectError(await t.app.request(`/v1/pets/${id}`, { headers: t.auth() }), 400, 'invalid_request', message);
  });
});

describe('errors outside the operations', () => {
  test('404 with the Error body for an unknown path under /v1', async () => {
    const t = testApp();
    await expectError(
      await t.app.request('/v1/owners', { headers: t.auth() }),
      404,
      'not_found',
      'No resource exists at this path.',
    );
  });

  test('404 with the Error body outside /v1', async () => {
    const t = testApp();
    await expectError(await t.app.request('/nope'), 404, 'not_found');
  });

  test.each([
    ['DELETE', '/v1/pets', 'GET, POST'],
    ['PUT', '/v1/pets', 'GET, POST'],
    ['PUT', '/v1/pets/1', 'GET, PATCH, DELETE'],
    ['POST', '/v1/pets/1', 'GET, PATCH, DELETE'],
  ])('405 with Allow for %s %s', async (method, path, allow) => {
    const t = testApp();
    const res = await t.app.request(path, { method, headers: t.auth() });
    await expectError(res, 405, 'method_not_allowed', `${method} is not allowed here; use ${allow}.`);
    expect(res.headers.get('allow')).toBe(allow);
  });

  test('API responses are not cached or sniffed', async () => {
    const t = testApp();
    const res = await t.app.request('/v1/pets', { headers: t.auth() });
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
  });

  test('/healthz answers without a key', async () => {
    const t = testApp();
    const res = await t.app.request('/healthz');
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: 'ok' });
  });
});

describe('authentication', () => {
  test.each([
    [undefined, 'Bearer realm="petstore"', 'An API key is required: send Authorization: Bearer <API_KEY>.'],
    ['Bearer psk_wrong', 'Bearer realm="petstore", error="invalid_token"', 'The API key is malformed or unknown.'],
    ['Basic YWxhZGRpbjpvcGVuc2VzYW1l', 'Bearer realm="petstore", error="invalid_token"', undefined],
    ['psk_test-token-for-acme', 'Bearer realm="petstore", error="invalid_token"', undefined],
    ['Bearer', 'Bearer realm="petstore", error="invalid_token"', undefined],
    ['Bearer a b', 'Bearer realm="petstore", error="invalid_token"', undefined],
  ])('401 with WWW-Authenticate for Authorization %p', async (authorization, challenge, message) => {
    const t = testApp();
    const headers: Record<string, string> = authorization === undefined ? {} : { Authorization: authorization };
    const res = await t.app.request('/v1/pets', {
      method: 'POST',
      headers: { ...headers, 'Content-Type': 'application/json' },
      body: '{"name":"Rex","categoryId":1}',
    });
    await expectError(res, 401, 'unauthorized', message);
    expect(res.headers.get('www-authenticate')).toBe(challenge);
    expect(await t.store.list({ limit: 10 })).toEqual([]);
  });

  test.each(['bearer', 'BEARER', 'BeArEr'])('the scheme word %s is accepted', async (scheme) => {
    const t = testApp();
    const res = await t.app.request('/v1/pets', { headers: { Authorization: `${scheme}  psk_test-token-for-acme` } });
    expect(res.status).toBe(200);
  });

  test('401 comes before 404 and 405, so unknown callers learn nothing of the paths', async () => {
    const t = testApp();
    await expectError(await t.app.request('/v1/owners'), 401, 'unauthorized');
    await expectError(await t.app.request('/v1/pets', { method: 'DELETE' }), 401, 'unauthorized');
  });
});

import { describe, expect, test } from 'bun:test';
import { testApp } from '../../test/testing.ts';
import { NewPet } from '../core/pet-records.ts';
import { createLogger } from '../log.ts';
import { IdempotencyHeaders, ListQuery, MUST_BE, PetParams } from './schemas.ts';

describe('bodyOnGet: a body sent with GET is held to the rules of any body', () => {
  const get = (path: string, headers: Record<string, string>, body: string) =>
    testApp().app.request(path, { method: 'GET', headers: { ...testApp().auth(), ...headers }, body });

  test.each(['/v1/pets', '/v1/pets/1'])('413 on GET %s with a body over 64 KiB', async (path) => {
    const res = await get(path, { 'Content-Type': 'application/json' }, `"${'x'.repeat(64 * 1024)}"`);
    expect(res.status).toBe(413);
    expect(await res.json()).toEqual({
      code: 'payload_too_large',
      message: 'The request body is larger than 65536 bytes.',
      status: 413,
    });
  });

  test.each(['/v1/pets', '/v1/pets/1'])('415 on GET %s with a text/plain body', async (path) => {
    const res = await get(path, { 'Content-Type': 'text/plain' }, 'hello');
    expect(res.status).toBe(415);
    expect(await res.json()).toEqual({
      code: 'unsupported_media_type',
      message: 'The request body must be application/json.',
      status: 415,
    });
  });

  test('a small JSON body on GET is ignored', async () => {
    const res = await get('/v1/pets', { 'Content-Type': 'application/json' }, '{}');
    expect(res.status).toBe(200);
  });
});

describe('requireJson: the body is read as RFC 8259 asks', () => {
  const post = (t: ReturnType<typeof testApp>, body: BodyInit) =>
    t.app.request('/v1/pets', {
      method: 'POST',
      headers: { ...t.auth(), 'Content-Type': 'application/json' },
      body,
    });
  const bytes = (...parts: Array<string | number[]>) =>
    Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p) : Buffer.from(p))));

  test('bytes that are not UTF-8 are a 400, not a name full of U+FFFD; nothing is stored', async () => {
    const t = testApp();
    const res = await post(t, bytes('{"name":"', [0xff, 0xfe, 0xc3], '","categoryId":1}'));
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({
      code: 'invalid_request',
      message: 'body: must be UTF-8; this has bytes that are not UTF-8.',
      status: 400,
    });
    expect(await (await t.app.request('/v1/pets', { headers: t.auth() })).json()).toEqual([]);
  });

  test.each([
    ['a lone high surrogate', '{"name":"\\ud800x","categoryId":1}'],
    ['a lone low surrogate', '{"name":"\\udc00","categoryId":1}'],
    ['a reversed pair', '{"name":"\\ude00\\ud83d","categoryId":1}'],
    ['a lone surrogate in a key', '{"name":"a","categoryId":1,"\\ud800":1}'],
  ])('%s is a 400: no UTF-8 response could give it back unchanged', async (_, body) => {
    const res = await post(testApp(), body);
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({
      code: 'invalid_request',
      message: 'body: must not hold an unpaired UTF-16 surrogate escape such as \\ud800.',
      status: 400,
    });
  });

  test('an escaped surrogate pair is one emoji and round-trips', async () => {
    const res = await post(testApp(), '{"name":"\\ud83d\\ude00 \\u00e9","categoryId":1}');
    expect(res.status).toBe(201);
    expect(((await res.json()) as { name: string }).name).toBe('😀 é');
  });

  test('deep nesting within 64 KiB is a 400, not a stack overflow', async () => {
    const t = testApp();
    for (const body of ['['.repeat(30_000) + ']'.repeat(30_000), `${'{"a":'.repeat(9_000)}1${'}'.repeat(9_000)}`]) {
      const res = await post(t, body);
      expect(res.status).toBe(400);
      expect(((await res.json()) as { code: string }).code).toBe('invalid_request');
    }
  });

  test('malformed and empty bodies keep their message', async () => {
    for (const body of ['{"name":', '']) {
      expect(await (await post(testApp(), body)).json()).toEqual({
        code: 'invalid_request',
        message: 'body: must be a JSON object; this is not valid JSON.',
        status: 400,
      });
    }
  });
});

test('a client that hangs up mid-body is a 400 in the logs, not a 500 "unhandled error"', async () => {
  const lines: string[] = [];
  const t = testApp({ log: createLogger({ write: (l) => lines.push(l) }) });
  const hangUp = new AbortController();
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(new TextEncoder().encode('{"name":"Re'));
    },
    pull(controller) {
      hangUp.abort();
      controller.error(new DOMException('The connection was closed.', 'AbortError'));
    },
  });
  const res = await t.app.request(
    new Request('http://petstore/v1/pets', {
      method: 'POST',
      headers: { ...t.auth(), 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' },
      body,
      signal: hangUp.signal,
      duplex: 'half',
    } as RequestInit),
  );
  expect(res.status).toBe(400);
  expect(lines.map((l) => JSON.parse(l).level)).toEqual(['info']);
});

describe('integers in the path and query', () => {
  test('1.0 and 1.000 are the integer 1, as JSON Schema counts them; 1.5, 1e0 and 0x1 are not integers', async () => {
    const t = testApp();
    const created = await t.app.request('/v1/pets', {
      method: 'POST',
      headers: { ...t.auth(), 'Content-Type': 'application/json' },
      body: JSON.stringify({ name: 'Rex', categoryId: 1 }),
    });
    expect(created.status).toBe(201);
    const status = async (path: string) => (await t.app.request(path, { headers: t.auth() })).status;
    expect(await status('/v1/pets/1.0')).toBe(200);
    expect(await status('/v1/pets/1.000')).toBe(200);
    expect(await status('/v1/pets?limit=2.0')).toBe(200);
    for (const path of ['/v1/pets/1.5', '/v1/pets/1e0', '/v1/pets/0x1', '/v1/pets?limit=1.5']) {
      expect([path, await status(path)]).toEqual([path, 400]);
    }
  });
});

describe('every request field has its words in MUST_BE', () => {
  test.each([
    ['ListQuery', ListQuery, ['limit', 'status', 'cursor']],
    ['NewPet', NewPet, ['name', 'categoryId', 'status']],
    ['PetParams', PetParams, ['petId']],
    ['IdempotencyHeaders', IdempotencyHeaders, ['Idempotency-Key']],
  ] as const)('%s', (_, schema, named) => {
    const fields = Object.keys(schema.entries).map((f) => (f === 'idempotency-key' ? 'Idempotency-Key' : f));
    expect(fields).toEqual([...named]);
    for (const field of fields) expect([field, typeof MUST_BE[field]]).toEqual([field, 'string']);
  });
});

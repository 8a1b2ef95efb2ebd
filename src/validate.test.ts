import { describe, expect, test } from 'bun:test';
import { testApp } from './testing.ts';

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

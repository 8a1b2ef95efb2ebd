import { describe, expect, test } from 'bun:test';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { type Context, Hono } from 'hono';
import { answerHeaders } from '../core/reply.ts';
import { answer } from './answer.ts';

const big = Array.from({ length: 40 }, (_, id) => ({ id, name: `Pet ${id}`, categoryId: 1, status: 'available' }));
const plain = JSON.stringify(big);

const json = (c: Context, value: unknown, status = 200) =>
  answer(c, { status, body: JSON.stringify(value), type: 'application/json' });

describe('representation', () => {
  const app = new Hono();
  app.get('/big', (c) => json(c, big));
  app.get('/small', (c) => json(c, { id: 1 }));
  app.get('/error', (c) => json(c, { code: 'not_found', filler: 'x'.repeat(2000) }, 404));
  // 400 two-byte letters: 802 bytes, under 1 KiB; 600: 1,202 bytes, over it.
  app.get('/accents/:n', (c) => json(c, 'é'.repeat(Number(c.req.param('n')))));

  test('JSON of 1 KiB or more: br or gzip as accepted, decoding to the same bytes', async () => {
    const br = await app.request('/big', { headers: { 'Accept-Encoding': 'gzip, br' } });
    expect([br.headers.get('content-encoding'), br.headers.get('vary')]).toEqual(['br', 'Accept-Encoding']);
    const brBytes = new Uint8Array(await br.arrayBuffer());
    expect(br.headers.get('content-length')).toBe(String(brBytes.length));
    expect(brotliDecompressSync(brBytes).toString()).toBe(plain);
    const gz = await app.request('/big', { headers: { 'Accept-Encoding': 'gzip' } });
    expect(gz.headers.get('content-encoding')).toBe('gzip');
    expect(gunzipSync(new Uint8Array(await gz.arrayBuffer())).toString()).toBe(plain);
  });

  test('without Accept-Encoding, small, or an error: sent as is', async () => {
    const none = await app.request('/big');
    expect([none.headers.get('content-encoding'), none.headers.get('vary'), await none.text()]).toEqual([
      null,
      'Accept-Encoding',
      plain,
    ]);
    const small = await app.request('/small', { headers: { 'Accept-Encoding': 'br' } });
    expect([small.headers.get('content-encoding'), await small.text()]).toEqual([null, '{"id":1}']);
    const error = await app.request('/error', { headers: { 'Accept-Encoding': 'br' } });
    expect(error.headers.get('content-encoding')).toBeNull();
    expect(((await error.json()) as { code: string }).code).toBe('not_found');
  });

  test("HEAD: the GET's headers with its Content-Length, compressed or not, and no body", async () => {
    for (const ae of [{}, { 'Accept-Encoding': 'br' }] as Record<string, string>[]) {
      const get = await app.request('/big', { headers: ae });
      const head = await app.request('/big', { method: 'HEAD', headers: ae });
      const length = (await get.arrayBuffer()).byteLength;
      expect(head.headers.get('content-length')).toBe(String(length));
      expect(head.headers.get('content-encoding')).toBe(get.headers.get('content-encoding'));
      expect(head.body).toBeNull();
    }
  });

  test('the threshold counts bytes, not characters', async () => {
    const under = await app.request('/accents/400', { headers: { 'Accept-Encoding': 'gzip' } });
    const over = await app.request('/accents/600', { headers: { 'Accept-Encoding': 'gzip' } });
    expect([under.headers.get('content-encoding'), await under.json()]).toEqual([null, 'é'.repeat(400)]);
    expect(over.headers.get('content-encoding')).toBe('gzip');
    expect(gunzipSync(new Uint8Array(await over.arrayBuffer())).toString()).toBe(JSON.stringify('é'.repeat(600)));
  });
});

describe('conditional answers', () => {
  const app = new Hono();
  app.get('/x', (c) => {
    answerHeaders(c)['X-Kept'] = 'yes';
    return answer(c, { status: 200, body: '{"id":1}', type: 'application/json', etag: 'W/"t"' });
  });

  test('200 with the body and the ETag; 304 without a body, headers kept', async () => {
    const full = await app.request('/x');
    expect([full.status, full.headers.get('etag'), await full.text()]).toEqual([200, 'W/"t"', '{"id":1}']);
    const cached = await app.request('/x', { headers: { 'If-None-Match': 'W/"t"' } });
    expect([cached.status, cached.headers.get('etag'), cached.headers.get('x-kept'), await cached.text()]).toEqual([
      304,
      'W/"t"',
      'yes',
      '',
    ]);
    expect(cached.headers.get('vary')).toBe('Accept-Encoding');
    expect(cached.headers.get('content-type')).toBeNull();
  });

  test('HEAD carries a Date (RFC 9110 section 6.6.1), the length and no body', async () => {
    const head = await app.request('/x', { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.headers.get('content-length')).toBe('8');
    expect(Math.abs(Date.parse(head.headers.get('date') ?? '') - Date.now())).toBeLessThan(5_000);
    expect(head.headers.get('date')).toMatch(/^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT$/);
    expect(head.body).toBeNull();
  });
});

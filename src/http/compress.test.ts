import { describe, expect, test } from 'bun:test';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { type Context, Hono } from 'hono';
import { systemClock } from '../clock.ts';
import { onError } from './errors.ts';
import { silentLogger } from '../log.ts';
import { exchange } from '../middleware/exchange.ts';
import { answer } from './answer.ts';
import { encode, preferredCoding } from './compress.ts';

describe('preferredCoding', () => {
  test.each([
    ['gzip', 'gzip'],
    ['GZip', 'gzip'],
    ['deflate, gzip;q=0.5', 'gzip'],
    ['x-gzip', 'gzip'],
    ['gzip, deflate, br', 'br'],
    ['br;q=0.1, gzip', 'br'],
    ['*', 'br'],
    ['br;q=0, *', 'gzip'],
    ['gzip;q=0', undefined],
    ['gzip;q=0, br;q=0, *', undefined],
    ['*;q=0', undefined],
    ['deflate, identity', undefined],
    ['', undefined],
    [undefined, undefined],
  ])('%p -> %p', (header, expected) => {
    expect(preferredCoding(header)).toBe(expected as 'br' | 'gzip' | undefined);
  });
});

const big = Array.from({ length: 40 }, (_, id) => ({ id, name: `Pet ${id}`, categoryId: 1, status: 'available' }));
const plain = JSON.stringify(big);

/** Answers JSON with Hono's `c.json` (represented afterwards by the outer layer) or with `answer()`. */
const byHono = (c: Context, value: unknown, status = 200) => c.json(value, status as 200);
const byAnswer = (c: Context, value: unknown, status = 200) =>
  answer(c, status, JSON.stringify(value), 'application/json');

describe.each([
  ['Hono answers, represented by the outer layer', byHono],
  ['answer()', byAnswer],
])('representation: %s', (_, json) => {
  const app = new Hono();
  app.use(exchange({ log: silentLogger, clock: systemClock, onError: onError(() => {}) }));
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

describe('encode', () => {
  test('round-trips', () => {
    const bytes = new TextEncoder().encode(plain);
    expect(gunzipSync(encode(bytes, 'gzip')).toString()).toBe(plain);
    expect(brotliDecompressSync(encode(bytes, 'br')).toString()).toBe(plain);
  });
});

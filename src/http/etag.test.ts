import { describe, expect, test } from 'bun:test';
import { createHash } from 'node:crypto';
import { Hono } from 'hono';
import { answerHeaders } from './answer.ts';
import { conditional, notModified, weakEtag } from './etag.ts';

describe('weakEtag', () => {
  test('weak, base64url, and changes with any part', () => {
    const tag = weakEtag('[{"id":1}]');
    expect(tag).toMatch(/^W\/"[A-Za-z0-9_-]{27}"$/);
    expect(weakEtag('[{"id":1}]')).toBe(tag);
    expect(weakEtag('[{"id":1}]', '<pets?cursor=1>; rel="next"')).not.toBe(tag);
    expect(weakEtag('[{"id":2}]')).not.toBe(tag);
  });

  test('a kept tag is the one a fresh hash gives, also after others pushed it out', () => {
    const sha1 = (text: string) => `W/"${createHash('sha1').update(text).digest('base64url')}"`;
    const link = '<pets?limit=1&cursor=1>; rel="next"';
    expect(weakEtag('[{"id":1}]', link)).toBe(sha1(`[{"id":1}]\n${link}\n`));
    expect(weakEtag('[{"id":1}]', link)).toBe(sha1(`[{"id":1}]\n${link}\n`));
    expect(weakEtag('[{"id":1}]')).toBe(sha1('[{"id":1}]\n'));
    for (let id = 100; id < 300; id++) weakEtag(`[{"id":${id}}]`);
    expect(weakEtag('[{"id":1}]', link)).toBe(sha1(`[{"id":1}]\n${link}\n`));
    expect(weakEtag('[{"id":150}]')).toBe(sha1('[{"id":150}]\n'));
  });
});

describe('notModified', () => {
  test.each([
    ['W/"a"', 'W/"a"', true],
    ['"a"', 'W/"a"', true],
    ['W/"b", W/"a"', 'W/"a"', true],
    ['*', 'W/"a"', true],
    ['W/"b"', 'W/"a"', false],
    ['"A"', 'W/"a"', false],
    ['', 'W/"a"', false],
    [undefined, 'W/"a"', false],
  ])('If-None-Match %p against %p -> %p', (header, etag, expected) => {
    expect(notModified(header, etag)).toBe(expected);
  });
});

describe('conditional', () => {
  const app = new Hono();
  app.get('/x', (c) => {
    answerHeaders(c)['X-Kept'] = 'yes';
    return conditional(c, '{"id":1}', 'W/"t"', 'application/json');
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
  });
});

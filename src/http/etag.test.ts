import { describe, expect, test } from 'bun:test';
import { createHash } from 'node:crypto';
import { notModified, weakEtag } from './etag.ts';

describe('weakEtag', () => {
  test('weak, base64url, and changes with any part', () => {
    const tag = weakEtag('[{"id":1}]');
    expect(tag).toMatch(/^W\/"[A-Za-z0-9_-]{27}"$/);
    expect(weakEtag('[{"id":1}]')).toBe(tag);
    expect(weakEtag('[{"id":1}]', '<pets?cursor=1>; rel="next"')).not.toBe(tag);
    expect(weakEtag('[{"id":2}]')).not.toBe(tag);
  });

  test('the SHA-1 of each part followed by a newline', () => {
    const sha1 = (text: string) => `W/"${createHash('sha1').update(text).digest('base64url')}"`;
    const link = '<pets?limit=1&cursor=1>; rel="next"';
    expect(weakEtag('[{"id":1}]', link)).toBe(sha1(`[{"id":1}]\n${link}\n`));
    expect(weakEtag('[{"id":1}]')).toBe(sha1('[{"id":1}]\n'));
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

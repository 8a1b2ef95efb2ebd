import { describe, expect, test } from 'bun:test';
import { murmur3x86_64, notModified, weakEtagOf } from './etag.ts';

describe('weakEtagOf', () => {
  test('weak, 16 hex digits, and changes with any part', () => {
    const tag = weakEtagOf('[{"id":1}]');
    expect(tag).toMatch(/^W\/"[0-9a-f]{16}"$/);
    expect(weakEtagOf('[{"id":1}]')).toBe(tag);
    expect(weakEtagOf('[{"id":1}]', '<pets?cursor=1>; rel="next"')).not.toBe(tag);
    expect(weakEtagOf('[{"id":1}]')).not.toBe(weakEtagOf('[{"id":2}]'));
  });

  test('MurmurHash3 x86_128 of each part followed by a newline: the values Python mmh3 5.3.1 gives', () => {
    // mmh3.hash_bytes(text.encode(), 0, x64arch=False).hex()[:16]
    const link = '<pets?limit=1&cursor=1>; rel="next"';
    expect(weakEtagOf('[{"id":1}]')).toBe('W/"dc60951a24afed13"');
    expect(weakEtagOf('[{"id":1}]', link)).toBe('W/"0d12586b3458908f"');
  });

  test.each([
    ['', '0000000000000000'],
    ['a', '3c9394a71bb05655'],
    ['abcd', 'aaccb6962ec6af45'],
    ['hello world!!', '8ed838e8b3bb3ec4'],
    ['x'.repeat(15), 'b543fa825b401c78'],
    ['y'.repeat(16), '318e443ed52925e6'],
    ['z'.repeat(17), 'e978d4f0a0540118'],
    ['Ünïcödé 🐶 pets\n', '29073b66330929bc'],
  ])('%p hashes to %p, every tail length and UTF-8 alike', (text, expected) => {
    expect(murmur3x86_64(text)).toBe(expected);
  });

  test('a body larger than the buffer so far, then a small one again', () => {
    const big = `${'q'.repeat(1000)}${'é'.repeat(333)}`;
    expect(murmur3x86_64('q'.repeat(40_000)).length).toBe(16);
    expect(murmur3x86_64(big)).toBe('90a6844ffedbf05a');
    expect(murmur3x86_64('a')).toBe('3c9394a71bb05655');
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

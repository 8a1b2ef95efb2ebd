import { describe, expect, test } from 'bun:test';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
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

const plain = JSON.stringify(Array.from({ length: 40 }, (_, id) => ({ id, name: `Pet ${id}` })));

describe('encode', () => {
  test('round-trips', () => {
    const bytes = new TextEncoder().encode(plain);
    expect(gunzipSync(encode(bytes, 'gzip')).toString()).toBe(plain);
    expect(brotliDecompressSync(encode(bytes, 'br')).toString()).toBe(plain);
  });
});

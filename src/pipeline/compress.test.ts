import { describe, expect, test } from 'bun:test';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { compressed, MIN_COMPRESSED_BYTES, preferredCoding } from './compress.ts';

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

describe('compressed', () => {
  test('encodes in the coding asked for, from MIN_COMPRESSED_BYTES on', () => {
    const plain = JSON.stringify(Array.from({ length: 80 }, (_, id) => ({ id, name: `Pet ${id}` })));
    const bytes = new TextEncoder().encode(plain);
    expect(bytes.length).toBeGreaterThan(MIN_COMPRESSED_BYTES);
    expect(gunzipSync(compressed(bytes, 'gzip') as Uint8Array).toString()).toBe(plain);
    expect(brotliDecompressSync(compressed(bytes, 'br') as Uint8Array).toString()).toBe(plain);
    expect(compressed(bytes, undefined)).toBeUndefined();
  });

  test('leaves fewer bytes than MIN_COMPRESSED_BYTES as they are', () => {
    const at = new Uint8Array(MIN_COMPRESSED_BYTES).fill(0x20);
    expect(gunzipSync(compressed(at, 'gzip') as Uint8Array).length).toBe(MIN_COMPRESSED_BYTES);
    expect(compressed(at.subarray(1), 'gzip')).toBeUndefined();
    expect(compressed(at.subarray(1), 'br')).toBeUndefined();
  });
});

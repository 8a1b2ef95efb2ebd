import { describe, expect, test } from 'bun:test';
import { roundedMember } from './json-numbers.ts';

describe('roundedMember: numbers JSON.parse would change into another integer', () => {
  test.each([
    ['{"categoryId":9007199254740990.9}', 'categoryId'],
    ['{"name":"a.5e3","categoryId":4.0000000000000001}', 'categoryId'],
    ['{"categoryId":9007199254740993}', 'categoryId'],
    ['{"categoryId":1e-500}', 'categoryId'],
    ['{"x":{"categoryId":1.5},"limit":12345678901234567.0}', 'limit'],
    ['{ "a" : "\\"", "categoryId" : 2.0000000000000000001 }', 'categoryId'],
  ])('%s -> %s', (text, key) => {
    expect(roundedMember(text)).toBe(key);
  });

  test.each([
    '{"name":"Rex","categoryId":7}',
    '{"categoryId":7.0}',
    '{"categoryId":7e0}',
    '{"categoryId":70e-1}',
    '{"categoryId":9007199254740991}',
    '{"categoryId":1.5}',
    '{"categoryId":-0.0}',
    '{"name":"9007199254740993.5"}',
    '{"nested":{"categoryId":9007199254740990.9}}',
  ])('%s is exact, a non-integer or not a top-level member', (text) => {
    expect(roundedMember(text)).toBeUndefined();
  });
});

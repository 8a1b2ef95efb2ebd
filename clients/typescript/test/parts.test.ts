// The client's small parts, by value: Link targets, Retry-After, the backoff's ranges.
import { expect, test } from 'bun:test';
import { linkTarget } from '../src/link.ts';
import { BACKOFF_CAP_MS, backoffMs, retryAfterMs } from '../src/wait.ts';

test('linkTarget resolves the relation asked for against the request URL, keeping a proxy prefix', () => {
  const base = 'https://gw.example/api/v1/pets?limit=2';
  expect(linkTarget('<pets?limit=2&cursor=2>; rel="next"', 'next', base)).toBe(
    'https://gw.example/api/v1/pets?limit=2&cursor=2',
  );
  expect(linkTarget('<../pets>; rel="successor-version"', 'successor-version', 'https://a.example/v1/pets/7')).toBe(
    'https://a.example/v1/pets',
  );
  const several = '<p?c=1>; title="first, then; more"; rel="prev", <p?c=3>; rel="last next", <p?c=9>; rel=next';
  expect(linkTarget(several, 'next', base)).toBe('https://gw.example/api/v1/p?c=3');
  expect(linkTarget(several, 'prev', base)).toBe('https://gw.example/api/v1/p?c=1');
  expect(linkTarget('<pets?cursor=2>; rel="next"', 'successor-version', base)).toBeUndefined();
  expect(linkTarget(null, 'next', base)).toBeUndefined();
});

test('retryAfterMs reads seconds and HTTP dates, and nothing else', () => {
  expect(retryAfterMs(new Headers({ 'retry-after': '61' }))).toBe(61_000);
  const now = Date.parse('Tue, 24 Nov 2026 22:00:00 GMT');
  expect(retryAfterMs(new Headers({ 'retry-after': 'Tue, 24 Nov 2026 22:00:30 GMT' }), now)).toBe(30_000);
  expect(retryAfterMs(new Headers({ 'retry-after': 'soon' }))).toBeUndefined();
  expect(retryAfterMs(new Headers())).toBeUndefined();
});

test('backoffMs draws from 0 to 500 ms, doubling with each retry up to 20 s', () => {
  expect([1, 2, 3, 4, 5, 6, 7, 8].map((n) => backoffMs(n, () => 1))).toEqual([
    500,
    1_000,
    2_000,
    4_000,
    8_000,
    16_000,
    BACKOFF_CAP_MS,
    BACKOFF_CAP_MS,
  ]);
  expect(backoffMs(3, () => 0)).toBe(0);
  expect(backoffMs(3, () => 0.25)).toBe(500);
});

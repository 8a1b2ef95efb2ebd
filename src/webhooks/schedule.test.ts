import { expect, test } from 'bun:test';
import { nextAttemptAt, parseRetrySeconds, RETRY_DELAYS_MS } from './schedule.ts';

test('about 5 s, 30 s, 2 min, 10 min, 1 h, then every 6 h, for at most 3 days', () => {
  const h = 3_600_000;
  expect(RETRY_DELAYS_MS).toEqual([5_000, 30_000, 120_000, 600_000, h, ...Array(11).fill(6 * h)]);
  expect(RETRY_DELAYS_MS.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(72 * h);
});

test('each delay gets at most 20% of jitter either way; past the schedule, no more attempts', () => {
  expect(nextAttemptAt(1, 1_000, RETRY_DELAYS_MS, () => 0.5)).toBe(6_000);
  expect(nextAttemptAt(2, 0, RETRY_DELAYS_MS, () => 0)).toBe(24_000);
  expect(nextAttemptAt(2, 0, RETRY_DELAYS_MS, () => 1)).toBe(36_000);
  expect(nextAttemptAt(RETRY_DELAYS_MS.length, 0, RETRY_DELAYS_MS, () => 0.5)).toBe(6 * 3_600_000);
  expect(nextAttemptAt(RETRY_DELAYS_MS.length + 1, 0)).toBeUndefined();
});

test('PETSTORE_WEBHOOK_RETRY_SECONDS: a list of seconds, or a message naming the value', () => {
  expect(parseRetrySeconds('0.5, 1,2')).toEqual([500, 1_000, 2_000]);
  for (const bad of ['', '1,,2', 'soon', '0', '-1', '90000']) {
    expect(() => parseRetrySeconds(bad)).toThrow(
      `PETSTORE_WEBHOOK_RETRY_SECONDS: must be a comma-separated list of seconds from 0.001 to 86400, got ${JSON.stringify(bad)}`,
    );
  }
});

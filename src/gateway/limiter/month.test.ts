import { describe, expect, test } from 'bun:test';
import { MonthWindow, monthOf } from './month.ts';

describe('monthOf', () => {
  test.each([
    [
      'the last second of November',
      Date.UTC(2026, 10, 30, 23, 59, 59, 999),
      Date.UTC(2026, 10, 1),
      Date.UTC(2026, 11, 1),
    ],
    ['the first instant of December', Date.UTC(2026, 11, 1), Date.UTC(2026, 11, 1), Date.UTC(2027, 0, 1)],
    ['December, into the next year', Date.UTC(2026, 11, 31, 12), Date.UTC(2026, 11, 1), Date.UTC(2027, 0, 1)],
    ['a leap February', Date.UTC(2028, 1, 29), Date.UTC(2028, 1, 1), Date.UTC(2028, 2, 1)],
  ])('%s', (_name, time, start, end) => {
    expect(monthOf(time)).toEqual({ start, end });
  });
});

test('a month window counts until 00:00 UTC on the 1st, then starts from zero', () => {
  const w = new MonthWindow(Date.UTC(2026, 10, 30, 23, 59, 59));
  w.add(3);
  w.advance(Date.UTC(2026, 10, 30, 23, 59, 59, 999));
  expect([w.count, w.admitAt(3), w.admitAt(4)]).toEqual([3, Date.UTC(2026, 11, 1), Number.NEGATIVE_INFINITY]);
  w.advance(Date.UTC(2026, 11, 1));
  expect([w.count, w.start, w.end]).toEqual([0, Date.UTC(2026, 11, 1), Date.UTC(2027, 0, 1)]);
});

import { describe, expect, test } from 'bun:test';
import { createLogger, type LogFields } from './log.ts';

/** What a line looked like before it was built by hand: the behaviour the fast path must keep. */
const reference = (time: number, level: string, msg: string, fields: LogFields) =>
  JSON.stringify({ time: new Date(time).toISOString(), level, msg, ...fields });

describe('createLogger json lines', () => {
  const cases: Array<[string, number, LogFields]> = [
    ['no fields', 0, {}],
    ['fractional ms', 1.7, { a: 1 }],
    ['undefined and nested values', 1_795_322_315_123, { s: 'q"\n', u: undefined, n: null, o: { x: [1] } }],
    ['before the epoch', -1, {}],
    ['after year 9999', 253_402_300_800_000, {}],
    ['a field named like a fixed key', 1_000, { time: 'override', level: 'x' }],
  ];
  for (const [name, time, fields] of cases) {
    test(name, () => {
      const lines: string[] = [];
      createLogger({ write: (l) => lines.push(l), now: () => time }).info('m"sg', fields);
      expect(lines).toEqual([reference(time, 'info', 'm"sg', fields)]);
    });
  }

  test('lines within one second share the prefix but keep their milliseconds', () => {
    const lines: string[] = [];
    let now = 1_795_322_315_000;
    const log = createLogger({ write: (l) => lines.push(l), now: () => now });
    for (const step of [0, 7, 93, 899, 1]) {
      now += step;
      log.warn('tick');
    }
    expect(lines.map((l) => JSON.parse(l).time)).toEqual(
      [0, 7, 100, 999, 1000].map((ms) => new Date(1_795_322_315_000 + ms).toISOString()),
    );
  });
});

import { expect, test } from 'bun:test';
import { asciiJson, echoed } from './redact.ts';

test('echoed: a client string as a message may repeat it, bounded and escaped', () => {
  expect(echoed('<img src=x onerror=alert(1)>', 64)).toBe('\\u003cimg src=x onerror=alert(1)\\u003e');
  expect(echoed('x'.repeat(65_000), 64)).toBe(`${'x'.repeat(64)}…`);
  expect(echoed('a\u202eb\u2028c"\\', 64)).toBe('a\\u202eb\\u2028c\\u0022\\u005c');
  // A pair cut in half loses its high surrogate rather than leaving it alone.
  expect(echoed(`${'x'.repeat(63)}😀`, 64)).toBe(`${'x'.repeat(63)}…`);
});

test('asciiJson: the same value to a JSON reader, one ASCII line to everyone else', () => {
  const value = { url: 'https://x.example/\u202e', note: 'a\u2028b', name: 'Bücher' };
  const text = asciiJson(value);
  expect(text).toBe('{"url":"https://x.example/\\u202e","note":"a\\u2028b","name":"B\\u00fccher"}');
  expect(JSON.parse(text)).toEqual(value);
  expect(/[^\x20-\x7e]/.test(text)).toBe(false);
});

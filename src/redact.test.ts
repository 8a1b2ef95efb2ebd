import { expect, test } from 'bun:test';
import { asciiJson, echoed, holdsToken, PEER_TEXT_MAX, peerText, printable, redactTokens } from './redact.ts';

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

test('redactTokens: anything token-shaped, anywhere and in any case, is replaced; holdsToken finds it', () => {
  const token = `psk_${'A1b2'.repeat(9)}xy`;
  expect(redactTokens(`/v1/pets/${token}`)).toBe('/v1/pets/***');
  expect(redactTokens(`/${token}/x.PSK_${'z'.repeat(43)}-_`)).toBe('/***/x.***');
  expect(redactTokens('/v1/pets/42')).toBe('/v1/pets/42');
  expect([holdsToken(`x.${token}`), holdsToken('Psk_1'), holdsToken('trace-42')]).toEqual([true, true, false]);
});

test('peerText: a peer says at most PEER_TEXT_MAX characters in a log field, then how long it was', () => {
  const said = peerText(new Error('x'.repeat(20_000_000)));
  expect(said).toBe(`${'x'.repeat(PEER_TEXT_MAX)}… (20000000 characters)`);
  expect(peerText('ERR unknown command')).toBe('ERR unknown command');
  expect(peerText(42)).toBe('42');
  expect(peerText(`auth failed for psk_${'a'.repeat(38)}`)).toBe('auth failed for ***');
});

test('printable: what a terminal shows draws only itself, on one line', () => {
  expect(printable('root\u001b[31mRED\u001b[0m\n{"at":"x"}')).toBe('root\\u001b[31mRED\\u001b[0m\\u000a{"at":"x"}');
  expect(printable('a\\u000ab\u202e')).toBe('a\\u005cu000ab\\u202e');
  expect(printable('cli:ops-1 key.add')).toBe('cli:ops-1 key.add');
});

import { describe, expect, test } from 'bun:test';
import { crc32 as zlibCrc32 } from 'node:zlib';
import { parseKeys } from './file.ts';
import { hashToken } from './records.ts';
import { KeyTable } from './table.ts';
import { CHECKED_TOKEN, checksum, crc32, newKeyEntry, newToken, plausibleToken } from './tokens.ts';

describe('newToken', () => {
  test('psk_, 32 base62 characters and their 6-character checksum, which a scanner can verify', () => {
    const tokens = Array.from({ length: 200 }, () => newToken());
    for (const token of tokens) {
      expect(token).toMatch(CHECKED_TOKEN);
      expect(token.slice(36)).toBe(checksum(token.slice(0, 36)));
      // What a scanner does, with zlib's CRC32: base62, most significant digit first, padded to 6.
      let n = zlibCrc32(token.slice(0, 36));
      let digits = '';
      for (let i = 0; i < 6; i++, n = Math.floor(n / 62))
        digits = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'[n % 62] + digits;
      expect(token.slice(36)).toBe(digits);
    }
    expect(new Set(tokens).size).toBe(200);
  });

  test('bytes of 248 and above are drawn again, so no character is more likely than another', () => {
    let call = 0;
    // First draw: 32 bytes of 255 (all refused); then 0..31 (0-9, A-V).
    const token = newToken((size) =>
      call++ === 0 ? new Uint8Array(size).fill(255) : Uint8Array.from({ length: size }, (_, i) => i),
    );
    expect(token.slice(0, 36)).toBe('psk_0123456789ABCDEFGHIJKLMNOPQRSTUV');
  });

  test('crc32 is zlib\'s: the check value of "123456789", and the padding of a small checksum', () => {
    expect(crc32('123456789')).toBe(0xcbf43926);
    expect(crc32('psk_')).toBe(zlibCrc32('psk_'));
    expect(checksum('psk_')).toBe('1mD87s');
    // CRC32 of the empty string is 0: six zeros.
    expect(checksum('')).toBe('000000');
  });
});

describe('plausibleToken', () => {
  const token = newToken();
  test.each([
    [token, true],
    [`${token.slice(0, 36)}${token[36] === 'A' ? 'B' : 'A'}${token.slice(37)}`, false],
    [`psk_${'A'.repeat(38)}`, false],
    // Tokens made before the checksum (43 base64url characters) are not checked here.
    [`psk_${'A'.repeat(43)}`, true],
    ['psk_e2e-test', true],
  ])('%s -> %p', (presented, plausible) => {
    expect(plausibleToken(presented)).toBe(plausible);
  });

  test('a table finds a new token, and nothing for the same token with one character changed', () => {
    const { token: fresh, entry } = newKeyEntry('acme', 'free');
    const table = new KeyTable(parseKeys(JSON.stringify({ keys: [entry] })));
    expect(table.find(fresh)).toMatchObject({ id: 'acme' });
    const typo = `${fresh.slice(0, 10)}${fresh[10] === 'x' ? 'y' : 'x'}${fresh.slice(11)}`;
    expect(table.find(typo)).toBe('bad_checksum');
  });

  test('a wrong checksum is refused before the lookup: even a table holding its hash does not admit it', () => {
    const forged = `psk_${'A'.repeat(38)}`;
    const table = new KeyTable(
      parseKeys(JSON.stringify({ keys: [{ name: 'x', sha256: hashToken(forged).toString('hex'), plan: 'free' }] })),
    );
    expect(table.find(forged)).toBe('bad_checksum');
    const legacy = `psk_${'A'.repeat(43)}`;
    const old = new KeyTable(
      parseKeys(JSON.stringify({ keys: [{ name: 'y', sha256: hashToken(legacy).toString('hex'), plan: 'free' }] })),
    );
    expect(old.find(legacy)).toMatchObject({ id: 'y' });
  });
});

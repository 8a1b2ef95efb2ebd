import { describe, expect, test } from 'bun:test';
import { createHash } from 'node:crypto';
import { KeysFileError, keysFileExposure, parseKeys } from './file.ts';
import { hashToken } from './records.ts';
import { bearerToken, KeyTable } from './table.ts';
import { checksum, newKeyEntry, TOKEN_PREFIX } from './tokens.ts';

const H = 'a'.repeat(64);
const file = (...keys: unknown[]) => JSON.stringify({ keys });

describe('parseKeys', () => {
  test('plans take their quotas; limits override them; enterprise uses its own', () => {
    const keys = parseKeys(
      file(
        { name: 'a', sha256: H, plan: 'free' },
        { name: 'b', sha256: 'b'.repeat(64), plan: 'pro', limits: { perMinute: 5, perDay: 50 } },
        { name: 'c', sha256: 'c'.repeat(64), plan: 'business' },
        { name: 'd', sha256: 'd'.repeat(64), plan: 'enterprise', limits: { perMinute: 7000, perDay: 9000000 } },
      ),
    );
    expect(keys.map((k) => [k.id, k.consumer.plan, k.consumer.limits])).toEqual([
      ['a', 'free', { perMinute: 60, perDay: 1000 }],
      ['b', 'pro', { perMinute: 5, perDay: 50 }],
      ['c', 'business', { perMinute: 1000, perDay: 100000 }],
      ['d', 'enterprise', { perMinute: 7000, perDay: 9000000 }],
    ]);
  });

  test.each([
    ['{', /^line 1, column 2: not valid JSON: expected a property name in double quotes, found the end of the file\n/],
    ['{}', /^keys: required \(or consumers\)$/],
    [
      file({ name: 'a', sha256: H, plan: 'gold' }),
      /^keys\[0\] \("a"\)\.plan: must be one of free, pro, business, enterprise, got "gold"$/,
    ],
    [
      file({ name: 'a', sha256: 'XYZ', plan: 'free' }),
      /^keys\[0\] \("a"\)\.sha256: must be 64 lowercase hex digits, got "XYZ"$/,
    ],
    [file({ name: 'a', plan: 'free' }), /^keys\[0\] \("a"\)\.sha256: required$/],
    [file({ sha256: H, plan: 'free' }), /^keys\[0\]\.name: required$/],
    [
      file({ name: 'acme', sha256: H, plan: 'enterprise' }),
      /^keys\[0\] \("acme"\)\.limits: required for the enterprise plan$/,
    ],
    [
      file({ name: 'a', sha256: H, plan: 'free' }, { name: 'a', sha256: 'b'.repeat(64), plan: 'free' }),
      /^keys\[1\] \("a"\), a \{"keys":\[\.\.\.\]\} entry\.name: "a" is also the name of keys\[0\] \("a"\), a \{"keys":\[\.\.\.\]\} entry; each consumer needs its own name$/,
    ],
    [
      file({ name: 'a', sha256: H, plan: 'free' }, { name: 'b', sha256: H, plan: 'free' }),
      /^keys\[1\] \("b"\)\.sha256: "aaaaaaaa…" is also the hash of keys\[0\] \("a"\)$/,
    ],
    [
      file({ name: 'a', sha256: H, plan: 'free', limits: { perMinute: 0, perDay: 5 } }),
      /^keys\[0\] \("a"\)\.limits\.perMinute: /,
    ],
    [file({ name: 'a', sha256: H, plan: 'free', token: 'x' }), /^keys\[0\] \("a"\)\.token: /],
  ])('refuses %s', (text, message) => {
    expect(() => parseKeys(text)).toThrow(KeysFileError);
    expect(() => parseKeys(text)).toThrow(message);
  });
});

describe('KeyTable', () => {
  const token = 'psk_known';
  const table = new KeyTable(parseKeys(file({ name: 'acme', sha256: hashToken(token).toString('hex'), plan: 'pro' })));

  test('finds a key by its token and nothing by another', () => {
    expect(table.find(token)).toMatchObject({ id: 'acme' });
    expect(table.find('psk_unknown')).toBe('unknown');
    expect(table.find('')).toBe('unknown');
    expect(table.countByPlan()).toEqual({ pro: 1 });
  });

  test('hashToken is SHA-256 of the token', () => {
    expect(hashToken(token).toString('hex')).toBe(createHash('sha256').update(token).digest('hex'));
  });
});

describe('bearerToken', () => {
  test.each([
    ['Bearer abc', 'abc'],
    ['bearer abc', 'abc'],
    ['BEARER   a.b-c_d~e+f/g==', 'a.b-c_d~e+f/g=='],
    ['Bearer', undefined],
    ['Bearer ', undefined],
    ['Basic abc', undefined],
    ['abc', undefined],
    ['Bearer a b', undefined],
    ['Bearer a,b', undefined],
    [undefined, undefined],
  ])('%p -> %p', (header, token) => {
    expect(bearerToken(header)).toBe(token);
  });
});

test('a new key entry admits its token and holds only the hash', () => {
  const bytes = new Uint8Array(32).fill(7);
  const { token, entry } = newKeyEntry('ops', 'business', () => bytes);
  expect(token).toBe(`${TOKEN_PREFIX}${'7'.repeat(32)}${checksum(`${TOKEN_PREFIX}${'7'.repeat(32)}`)}`);
  expect(token.length).toBe(4 + 32 + 6);
  expect(JSON.stringify(entry)).not.toContain(token);
  const table = new KeyTable(parseKeys(file(entry)));
  expect(table.find(token)).toMatchObject({ id: 'ops' });
});

describe('keysFileExposure', () => {
  test.each([
    [0o100600, undefined],
    [0o100400, undefined],
    [0o100640, undefined],
    [0o100644, 'readable by every user (mode 0644); run chmod 600 or 640 on it'],
    [0o100604, 'readable by every user (mode 0604); run chmod 600 or 640 on it'],
    [0o100620, 'writable by group or others (mode 0620): anyone who can write it can add a key; run chmod 600 on it'],
    [0o100666, 'writable by group or others (mode 0666): anyone who can write it can add a key; run chmod 600 on it'],
  ])('mode %o: %p', (mode, problem) => {
    expect(keysFileExposure(mode)).toBe(problem);
  });
});

// The keys file's JSON errors, as src/core/json-syntax.ts describes them.
test('parseKeys: bad JSON is a KeysFileError naming the file, line and column, with the line quoted', () => {
  const text = `{"keys": [\n  {"name": "acme", "plan": "pro",}\n]}\n`;
  expect(() => parseKeys(text, 'keys.json')).toThrow(
    new KeysFileError(
      [
        'keys.json:2:34: not valid JSON: expected a property name in double quotes, found "}"',
        '    {"name": "acme", "plan": "pro",}',
        `  ${' '.repeat(33)}^`,
      ].join('\n'),
    ),
  );
});

test('a keys file that repeats a member is refused where it does', () => {
  const text = `{"keys":[{"name":"acme","sha256":"${H}","plan":"pro","plan":"free"}]}`;
  const column = text.lastIndexOf('"plan"') + 1;
  expect(() => parseKeys(text, 'keys.json')).toThrow(
    new KeysFileError(`keys.json:1:${column}: keys[0].plan is given twice in one object; keep one`),
  );
});

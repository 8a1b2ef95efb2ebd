import { describe, expect, test } from 'bun:test';
import { describeJsonError, duplicateMember, jsonSyntaxError } from './json-syntax.ts';

const HASH = 'a'.repeat(64);

describe('jsonSyntaxError', () => {
  test('a stray comma before "}": the line, the column and what was expected there', () => {
    const text = `{"keys": [\n  {"name": "acme", "sha256": "${HASH}", "plan": "pro",}\n]}\n`;
    expect(jsonSyntaxError(text)).toEqual({
      line: 2,
      column: 112,
      message: 'expected a property name in double quotes, found "}"',
      text: `  {"name": "acme", "sha256": "${HASH}", "plan": "pro",}`,
    });
  });

  test.each([
    ['{"keys": [{} {}]}', 1, 14, 'expected "," or "]", found "{"'],
    ['{"keys" []}', 1, 9, 'expected ":" after the property name, found "["'],
    [
      '{"keys": [',
      1,
      11,
      'expected a value (an object, array, string, number, true, false or null), found the end of the file',
    ],
    ["{'keys': []}", 1, 2, `expected a property name in double quotes, found "'"`],
    ['{"keys": []}\n}', 2, 1, 'expected nothing after the end of the JSON value, found "}"'],
    [
      '{"keys": [], "x": tru}',
      1,
      19,
      'expected a value (an object, array, string, number, true, false or null), found "t"',
    ],
    [
      '{"a": "two\nlines"}',
      1,
      11,
      'expected no line break or control character inside a string (write it as an escape, e.g. \\n), found "\\n"',
    ],
    ['{"a": 01}', 1, 8, 'expected "," or "}", found "1"'],
    ['\r\n{"a":\r\n }', 3, 2, 'expected a value (an object, array, string, number, true, false or null), found "}"'],
  ])('%j: line %d, column %d: %s', (text, line, column, message) => {
    expect(jsonSyntaxError(text)).toMatchObject({ line, column, message });
  });

  test.each([
    '{}',
    '[]',
    ' {"keys": [{"name": "a", "n": -1.5e+3, "t": true, "f": false, "z": null, "s": "\\u00e9\\n\\"/"}]} ',
    '"just a string"',
    '0',
  ])('%j is valid JSON: no error', (text) => {
    expect(JSON.parse(text)).toBeDefined();
    expect(jsonSyntaxError(text)).toBeUndefined();
  });
});

describe('describeJsonError', () => {
  test('names the file, line and column, and quotes the line with a caret under the column', () => {
    const error = jsonSyntaxError('{\n\t"keys": [],\n}') as NonNullable<ReturnType<typeof jsonSyntaxError>>;
    expect(describeJsonError(error, '/etc/petstore/keys.json')).toBe(
      [
        '/etc/petstore/keys.json:3:1: not valid JSON: expected a property name in double quotes, found "}"',
        '  }',
        '  ^',
      ].join('\n'),
    );
  });

  test('a long line is cut around the column', () => {
    const text = `{"keys": [${'{"name": "a"}, '.repeat(20)}{"name": "b",}${', {"name": "c"}'.repeat(20)}]}`;
    const error = jsonSyntaxError(text) as NonNullable<ReturnType<typeof jsonSyntaxError>>;
    const [, quoted, caret] = describeJsonError(error).split('\n');
    expect(quoted).toBe(`  …${text.slice(error.column - 37, error.column + 35)}…`);
    expect(caret).toBe(`  ${' '.repeat(37)}^`);
    expect(quoted?.charAt(caret?.length ? caret.length - 1 : 0)).toBe('}');
  });
});

describe('duplicateMember', () => {
  test.each([
    ['{"id":"dupk","scopes":["pets:read"],"scopes":["admin"]}', 'scopes', '"scopes"'],
    ['{"webhook":{"url":"https://a.example/","secret":"s","url":"https://b.example/"}}', 'webhook.url', '"url"'],
    ['{"consumers":[{"name":"a"},{"name":"b","\\u006eame":"c"}]}', 'consumers[1].name', '"\\u006eame"'],
  ])('%s repeats %s', (text, path, second) => {
    // The column of the second occurrence's opening quote.
    const column = text.lastIndexOf(second) + 1;
    expect(duplicateMember(text, JSON.parse(text))).toEqual({ line: 1, column, path });
  });

  test('no repeat: undefined, also where the same name is in two objects or inside a string', () => {
    for (const text of [
      '{"a":{"a":1},"b":[{"a":1},{"a":2}]}',
      '{"url":"https://x.example/a:b","note":"\\"a\\":1"}',
      '[]',
    ]) {
      expect(duplicateMember(text, JSON.parse(text))).toBeUndefined();
    }
  });

  test('deep nesting within 64 KiB is no stack overflow', () => {
    const deep = `${'{"a":'.repeat(20_000)}"x:y"${'}'.repeat(20_000)}`;
    expect(duplicateMember(deep, undefined)).toBeUndefined();
  });
});

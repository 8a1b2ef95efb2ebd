// Finds where a JSON text stops being valid JSON, described in words a person can act on, and the
// first member name an object repeats. `JSON.parse` describes syntax errors differently in each
// runtime and never reports repeated names, so one scanner here does both.

/**
 * A JSON text's first syntax error: 1-based line and column (in UTF-16 units), and what was
 * expected.
 */
export interface JsonSyntaxError {
  readonly line: number;
  readonly column: number;
  readonly message: string;
  /** The line the error is on, without its line break. */
  readonly text: string;
}

/** The longest part of a line a message quotes, since a file written on one line can be long. */
const QUOTE_MAX = 72;
/** Objects and arrays nested deeper than this are not read: the scanner recurses per level. */
const MAX_DEPTH = 1_000;

class Stop extends Error {
  constructor(
    readonly at: number,
    readonly expected: string,
  ) {
    super(expected);
  }
}

/** A member name that an object in a JSON text repeats: where, and its path (`keys[0].id`). */
export interface DuplicateMember {
  readonly line: number;
  readonly column: number;
  /** The member's path from the top, with names decoded: `scopes`, `consumers[0].name`. */
  readonly path: string;
}

/**
 * Returns the first syntax error of `text`, or undefined when it is valid JSON.
 *
 * @example
 * jsonSyntaxError('{"keys": [],}') // { line: 1, column: 13, message: 'expected a property name in double quotes, found "}"', text: '{"keys": [],}' }
 */
export function jsonSyntaxError(text: string): JsonSyntaxError | undefined {
  try {
    scan(text, false);
    return undefined;
  } catch (err) {
    if (!(err instanceof Stop)) throw err;
    return locate(text, err.at, err.expected);
  }
}

/**
 * Returns the first member name that an object in `text` (valid JSON) repeats, or undefined. Given
 * the parsed value, it skips the scan when counting rules a repeat out: a text with no more colons
 * than the value has members cannot repeat one.
 *
 * @example
 * duplicateMember('{"id":"k","scopes":["pets:read"],"scopes":["admin"]}') // { line: 1, column: 34, path: 'scopes' }
 * duplicateMember('{"a":1}', { a: 1 }) // undefined, without scanning
 */
export function duplicateMember(text: string, parsed?: unknown): DuplicateMember | undefined {
  if (parsed !== undefined) {
    const count = colons(text);
    if (count === 0 || count <= members(parsed)) return undefined;
  }
  try {
    const found = scan(text, true);
    if (!found) return undefined;
    const { line, column } = locate(text, found.at, '');
    return { line, column, path: found.path };
  } catch (err) {
    if (err instanceof Stop) return undefined; // not JSON: that is jsonSyntaxError's to say
    throw err;
  }
}

function colons(text: string): number {
  let n = 0;
  for (let at = text.indexOf(':'); at !== -1; at = text.indexOf(':', at + 1)) n++;
  return n;
}

/** Counts the members of every object in `value`, without recursion (a body may nest deeply). */
function members(value: unknown): number {
  let n = 0;
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const item = stack.pop();
    if (item === null || typeof item !== 'object') continue;
    if (Array.isArray(item)) {
      for (const inner of item) stack.push(inner);
      continue;
    }
    for (const key in item) {
      n++;
      stack.push((item as Record<string, unknown>)[key]);
    }
  }
  return n;
}

/** A repeated member name: where its second occurrence starts, and its path. */
interface Found {
  at: number;
  path: string;
}

/**
 * Scans `text` as JSON, throwing `Stop` at its first syntax error; with `duplicates`, returns the
 * first member name an object repeats (names are compared decoded: `"a"` and `"\u0061"` match).
 */
function scan(text: string, duplicates: boolean): Found | undefined {
  let at = 0;
  let depth = 0;
  const path: string[] = [];
  let found: Found | undefined;
  const ws = () => {
    while (at < text.length && ' \t\n\r'.includes(text.charAt(at))) at++;
  };
  const expect = (what: string): never => {
    throw new Stop(at, what);
  };
  const literal = (word: string) => {
    if (text.startsWith(word, at)) at += word.length;
    else expect('a value (an object, array, string, number, true, false or null)');
  };
  const string = () => {
    at++; // the opening quote
    for (;;) {
      if (at >= text.length) expect('a closing double quote');
      const c = text.charCodeAt(at);
      if (c === 0x22) break;
      if (c < 0x20) expect('no line break or control character inside a string (write it as an escape, e.g. \\n)');
      if (c === 0x5c) {
        at++;
        const e = text.charAt(at);
        if (e === 'u' && /^[0-9a-fA-F]{4}$/.test(text.slice(at + 1, at + 5))) at += 4;
        else if (!'"\\/bfnrt'.includes(e) || e === '')
          expect('an escape: \\", \\\\, \\/, \\b, \\f, \\n, \\r, \\t or \\uXXXX');
      }
      at++;
    }
    at++;
  };
  const digits = () => {
    const from = at;
    while (at < text.length && text.charCodeAt(at) >= 0x30 && text.charCodeAt(at) <= 0x39) at++;
    if (at === from) expect('a digit');
  };
  const number = () => {
    if (text[at] === '-') at++;
    if (text[at] === '0') at++;
    else digits();
    if (text[at] === '.') {
      at++;
      digits();
    }
    if (text[at] === 'e' || text[at] === 'E') {
      at++;
      if (text[at] === '+' || text[at] === '-') at++;
      digits();
    }
  };
  const value = (): void => {
    ws();
    const c = text.charAt(at);
    if (c === '{') object();
    else if (c === '[') array();
    else if (c === '"') string();
    else if (c === '-' || (c >= '0' && c <= '9')) number();
    else if (c === 't') literal('true');
    else if (c === 'f') literal('false');
    else literal('null');
  };
  const nest = () => {
    if (++depth > MAX_DEPTH) expect(`at most ${MAX_DEPTH} levels of objects and arrays`);
  };
  const object = () => {
    nest();
    at++;
    ws();
    if (text[at] === '}') {
      at++;
      depth--;
      return;
    }
    const names = duplicates ? new Set<string>() : undefined;
    for (;;) {
      ws();
      if (text[at] !== '"') expect('a property name in double quotes');
      const start = at;
      string();
      if (names) {
        const name = JSON.parse(text.slice(start, at)) as string;
        if (names.has(name) && !found) found = { at: start, path: dottedPath([...path, name]) };
        names.add(name);
        path.push(name);
      }
      ws();
      if (text[at] !== ':') expect('":" after the property name');
      at++;
      value();
      if (names) path.pop();
      ws();
      if (text[at] === '}') break;
      if (text[at] !== ',') expect('"," or "}"');
      at++;
    }
    at++;
    depth--;
  };
  const array = () => {
    nest();
    at++;
    ws();
    if (text[at] === ']') {
      at++;
      depth--;
      return;
    }
    for (let i = 0; ; i++) {
      if (duplicates) path.push(`[${i}]`);
      value();
      if (duplicates) path.pop();
      ws();
      if (text[at] === ']') break;
      if (text[at] !== ',') expect('"," or "]"');
      at++;
    }
    at++;
    depth--;
  };
  value();
  ws();
  if (at < text.length) expect('nothing after the end of the JSON value');
  return found;
}

/** Formats a member's path: names joined by dots, indexes in brackets (`consumers[0].id`). */
function dottedPath(path: readonly string[]): string {
  return path.map((p, i) => (p.startsWith('[') || i === 0 ? p : `.${p}`)).join('');
}

function locate(text: string, at: number, expected: string): JsonSyntaxError {
  const start = text.lastIndexOf('\n', at - 1) + 1;
  const end = text.indexOf('\n', at);
  const found = at >= text.length ? 'the end of the file' : JSON.stringify(text.slice(at, at + 1));
  return {
    line: text.slice(0, start).split('\n').length,
    column: at - start + 1,
    message: `expected ${expected}, found ${found}`,
    text: text.slice(start, end === -1 ? text.length : end).replace(/\r$/, ''),
  };
}

/**
 * Formats `FILE:LINE:COLUMN: not valid JSON: …` (`line L, column C: …` without a file), then the
 * line quoted with a caret under the column (a long line is cut around it).
 *
 * @example
 * describeJsonError(jsonSyntaxError('{"keys": [],}'), 'keys.json')
 * // 'keys.json:1:13: not valid JSON: expected a property name in double quotes, found "}"\n  {"keys": [],}\n              ^'
 */
export function describeJsonError(error: JsonSyntaxError, file?: string): string {
  const { line, column, message } = error;
  const text = error.text.replaceAll('\t', ' '); // one column each, so the caret lines up
  const from = Math.max(0, Math.min(column - 1 - QUOTE_MAX / 2, text.length - QUOTE_MAX));
  const cut = text.slice(from, from + QUOTE_MAX);
  const quoted = `${from > 0 ? '…' : ''}${cut}${from + QUOTE_MAX < text.length ? '…' : ''}`;
  const caret = ' '.repeat(column - 1 - from + (from > 0 ? 1 : 0));
  const where = file ? `${file}:${line}:${column}` : `line ${line}, column ${column}`;
  return `${where}: not valid JSON: ${message}\n  ${quoted}\n  ${caret}^`;
}

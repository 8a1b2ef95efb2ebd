/**
 * Where a JSON text stops being JSON, in words a person can act on. `JSON.parse` says this
 * differently in each runtime, and Bun's message has no position at all ("JSON Parse error:
 * Property name must be a string literal"), so the keys file's errors come from this scanner:
 * it runs only after `JSON.parse` has refused a text.
 */

/** The first syntax error of a JSON text: 1-based line and column (in UTF-16 units), and what was expected. */
export interface JsonSyntaxError {
  readonly line: number;
  readonly column: number;
  readonly message: string;
  /** The line the error is on, without its line break. */
  readonly text: string;
}

/** Longest part of a line quoted in a message: a file written on one line can be long. */
const QUOTE_MAX = 72;

class Stop extends Error {
  constructor(
    readonly at: number,
    readonly expected: string,
  ) {
    super(expected);
  }
}

/**
 * The first syntax error of `text`, or undefined when it is valid JSON.
 *
 * @example
 * jsonSyntaxError('{"keys": [],}') // { line: 1, column: 13, message: 'expected a property name in double quotes, found "}"', text: '{"keys": [],}' }
 */
export function jsonSyntaxError(text: string): JsonSyntaxError | undefined {
  let at = 0;
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
  const object = () => {
    at++;
    ws();
    if (text[at] === '}') {
      at++;
      return;
    }
    for (;;) {
      ws();
      if (text[at] !== '"') expect('a property name in double quotes');
      string();
      ws();
      if (text[at] !== ':') expect('":" after the property name');
      at++;
      value();
      ws();
      if (text[at] === '}') break;
      if (text[at] !== ',') expect('"," or "}"');
      at++;
    }
    at++;
  };
  const array = () => {
    at++;
    ws();
    if (text[at] === ']') {
      at++;
      return;
    }
    for (;;) {
      value();
      ws();
      if (text[at] === ']') break;
      if (text[at] !== ',') expect('"," or "]"');
      at++;
    }
    at++;
  };
  try {
    value();
    ws();
    if (at < text.length) expect('nothing after the end of the JSON value');
    return undefined;
  } catch (err) {
    if (!(err instanceof Stop)) throw err;
    return locate(text, err.at, err.expected);
  }
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
 * `FILE:LINE:COLUMN: not valid JSON: …` (`line L, column C: …` without a file), then the line
 * quoted with a caret under the column (a long line is cut around it).
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

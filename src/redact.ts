// Makes text safe to log, export or repeat: API tokens and URL passwords masked, what a terminal
// draws differently escaped, a client's or a peer's text capped.

/** An API token's shape: its prefix, in any case, and the token characters that follow it. */
const TOKEN_SHAPED = /psk_[0-9A-Za-z_-]*/gi;

/**
 * `text` with everything shaped like an API token (`psk_` and its body, anywhere, in any case)
 * replaced by `***`: for what a client or a peer wrote that is exported or logged (a path), so
 * that no token reaches a span or a log line, nor trips a secret scanner there.
 *
 * @example
 * redactTokens('/v1/pets/psk_7Qe2abc') // '/v1/pets/***'
 */
export function redactTokens(text: string): string {
  return text.replace(TOKEN_SHAPED, '***');
}

/**
 * Whether `text` holds anything shaped like an API token (`psk_`, in any case).
 *
 * @example
 * holdsToken('x.psk_abc') // true
 */
export function holdsToken(text: string): boolean {
  return /psk_/i.test(text);
}

/**
 * A connection URL as it may be logged: its password replaced by `***`.
 *
 * @example
 * redactUrl('redis://:secret@cache:6379/0') // 'redis://:***@cache:6379/0'
 * redactUrl('postgres://app:secret@db:5432/pets') // 'postgres://app:***@db:5432/pets'
 */
export function redactUrl(raw: string): string {
  try {
    const url = new URL(raw);
    if (url.password) url.password = '***';
    return url.toString();
  } catch {
    const scheme = /^[a-z][a-z0-9+.-]*:\/\//i.exec(raw)?.[0] ?? '';
    return `${scheme}(unparsable URL)`;
  }
}

/**
 * The most characters of a peer's answer (Redis, PostgreSQL, a webhook receiver) a log field holds.
 */
export const PEER_TEXT_MAX = 512;

/**
 * What a peer said (an error, its message, a reply), as a log field or a stored error may hold
 * it: at most `max` characters, then `…` and the whole length, with anything token-shaped
 * replaced, so a hostile or broken server cannot fill the log.
 *
 * @example
 * peerText(new Error('x'.repeat(20_000_000))) // 512 x's, then '… (20000000 characters)'
 */
export function peerText(said: unknown, max = PEER_TEXT_MAX): string {
  const text = said instanceof Error ? said.message : typeof said === 'string' ? said : String(said);
  if (text.length <= max) return redactTokens(text);
  return `${redactTokens(text.slice(0, max).replace(/[\uD800-\uDBFF]$/, ''))}… (${text.length} characters)`;
}

/** What `printable` writes as `\uXXXX`: anything but printable ASCII, and the backslash. */
const UNPRINTABLE = /[^\x20-\x7e]|\\/g;

/**
 * `text` as a terminal may show it: every character but printable ASCII (a control character,
 * an escape sequence's ESC, a line break, U+202E) and the backslash written as a `\uXXXX`
 * escape, so no value draws anything but itself, nor a line of its own.
 *
 * @example
 * printable('root\u001b[31m\n') // 'root\\u001b[31m\\u000a'
 */
export function printable(text: string): string {
  return text.replace(UNPRINTABLE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/**
 * What `echoed` writes as `\uXXXX`: anything but printable ASCII, and what markup or quoting reads.
 */
const UNSAFE = /[^\x20-\x7e]|[<>&"'`\\]/g;

/**
 * Client input as an error message may repeat it: at most `max` characters (then `…`), every
 * character but printable ASCII, and `<>&"'\``, written as a `\uXXXX` escape, so a message
 * is as long as its bound, reads the same in every terminal and log, and holds no markup.
 *
 * @example
 * echoed('<img src=x onerror=alert(1)>', 64) // '\u003cimg src=x onerror=alert(1)\u003e'
 * echoed('\u202eabc', 2) // '\\u202ea…'
 */
export function echoed(text: string, max: number): string {
  const cut = text.length > max ? text.slice(0, max).replace(/[\uD800-\uDBFF]$/, '') : text;
  const safe = cut.replace(UNSAFE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  return cut.length < text.length ? `${safe}…` : safe;
}

/**
 * `JSON.stringify(value)` with every character past ASCII written as a `\uXXXX` escape: the same
 * value to any JSON reader, one line to every line-based one (U+2028 is a line break to some),
 * and nothing a terminal draws differently (U+202E turns text around).
 *
 * @example
 * asciiJson({ url: 'https://x.example/\u202e' }) // '{"url":"https://x.example/\\u202e"}'
 */
export function asciiJson(value: unknown, indent?: number): string {
  return JSON.stringify(value, null, indent).replace(
    /[\u007f-\uffff]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

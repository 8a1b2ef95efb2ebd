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

/** What `echoed` writes as `\uXXXX`: anything but printable ASCII, and what markup or quoting reads. */
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
